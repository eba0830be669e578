// The JSON endpoints the edge examples (Deno, Cloudflare Workers) expose over
// a memtide store: POST /ingest, /retrieve, /inject with the package's JSON
// shapes as bodies. Errors answer {error: {code, message}} with an HTTP
// status chosen by the error's code.

const STATUS = {
  INVALID_INPUT: 400,
  TOO_LARGE: 413,
  NOT_FOUND: 404,
  QUOTA_EXCEEDED: 507,
  VERSION_MISMATCH: 409,
  CORRUPT: 500,
  STORAGE: 503,
  MODEL: 500,
  CLOSED: 503,
};

const json = (body, status = 200) =>
  new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json" } });

/** Answers one request with `mem` (a memtide `Memory`). */
export async function handleMemoryRequest(mem, request) {
  const { pathname } = new URL(request.url);
  const route = { "/ingest": "ingest", "/retrieve": "retrieve", "/inject": "inject" }[pathname];
  if (!route) return json({ error: { code: "NOT_FOUND", message: `no route ${pathname}` } }, 404);
  if (request.method !== "POST") {
    return json({ error: { code: "INVALID_INPUT", message: "use POST with a JSON body" } }, 405);
  }
  let body;
  try {
    body = await request.json();
  } catch {
    return json({ error: { code: "INVALID_INPUT", message: "the body is not JSON" } }, 400);
  }
  try {
    return json(await mem[route](body));
  } catch (error) {
    const code = error?.code ?? "STORAGE";
    return json({ error: { code, message: String(error?.message ?? error) } }, STATUS[code] ?? 500);
  }
}
