// What the package's adapters share: values split into parts for stores
// whose values are smaller than memtide's (Deno KV: 64 KiB; a Durable
// Object's SQLite row: 2 MB), the errors memtide understands, and the check
// of a batch's ops made before anything is written.

/** The parts of `value`, each at most `size` bytes; an empty value is one empty part. */
export function split(value, size) {
  const parts = [];
  for (let at = 0; at < value.length || parts.length === 0; at += size) parts.push(value.subarray(at, at + size));
  return parts;
}

/** `parts` joined into one Uint8Array. */
export function join(parts) {
  const value = new Uint8Array(parts.reduce((n, part) => n + part.byteLength, 0));
  let at = 0;
  for (const part of parts) {
    value.set(new Uint8Array(part), at);
    at += part.byteLength;
  }
  return value;
}

/** An Error with a `code` memtide maps to its own errors (`CONFLICT`, `BATCH_TOO_LARGE`). */
export function coded(code, message) {
  return Object.assign(new Error(message), { code });
}

export function sameBytes(a, b) {
  if (a === null || b === null) return a === b;
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/**
 * Throws unless every op of a batch is a put of bytes or a delete. Adapters
 * call it before writing anything, so a malformed batch changes nothing.
 */
export function checkOps(ops) {
  for (const op of ops) {
    const ok = typeof op?.key === "string" &&
      (op.type === "delete" || (op.type === "put" && op.value instanceof Uint8Array));
    if (!ok) throw new TypeError(`memtide: a batch op must be {type: "put", key, value: Uint8Array} or {type: "delete", key}`);
  }
}
