// Runs the storage conformance suite in workerd, one case per request:
// `POST /run?adapter=kv|do&case=N` answers `{ ok }` or `{ error }`.
// Workers KV cases run in the Worker over the emptied namespace; Durable
// Object cases each in a new SQLite-backed object, over its ctx.storage.
import { DurableObject } from "cloudflare:workers";
import { Memory } from "memtide";
import { CloudflareKvStorage } from "memtide/cloudflare-kv";
import { DurableObjectSqlStorage } from "memtide/durable-object";
import { adapterCases } from "../../../js/adapter-conformance.mjs";

async function run(cases, index) {
  try {
    await cases[index].run();
    return Response.json({ ok: true });
  } catch (error) {
    return Response.json({ ok: false, error: String(error?.stack ?? error) });
  }
}

function kvCases(kv) {
  const keys = async () => {
    const names = [];
    let cursor;
    do {
      const page = await kv.list({ cursor });
      names.push(...page.keys.map((k) => k.name));
      cursor = page.list_complete ? undefined : page.cursor;
    } while (cursor);
    return names;
  };
  const fresh = async () => {
    for (const name of await keys()) await kv.delete(name);
    return {
      open: () => new CloudflareKvStorage(kv),
      dump: async () => Promise.all((await keys()).map(async (name) => new Uint8Array(await kv.get(name, "arrayBuffer")))),
    };
  };
  return adapterCases({ Memory, fresh, batch: false });
}

export class ConformanceObject extends DurableObject {
  fetch(request) {
    const storage = this.ctx.storage;
    const fresh = async () => ({
      open: () => new DurableObjectSqlStorage(storage),
      dump: async () => storage.sql.exec("SELECT data FROM memtide").toArray().map((row) => new Uint8Array(row.data)),
    });
    return run(adapterCases({ Memory, fresh, batch: true }), Number(new URL(request.url).searchParams.get("case")));
  }
}

export default {
  async fetch(request, env) {
    const url = new URL(request.url);
    const adapter = url.searchParams.get("adapter");
    if (url.pathname === "/cases") {
      const cases = adapter === "kv" ? kvCases(env.KV) : adapterCases({ Memory, fresh: null, batch: true });
      return Response.json(cases.map((c) => c.name));
    }
    if (adapter === "kv") return run(kvCases(env.KV), Number(url.searchParams.get("case")));
    const stub = env.CONFORMANCE.get(env.CONFORMANCE.newUniqueId());
    return stub.fetch(request);
  },
};
