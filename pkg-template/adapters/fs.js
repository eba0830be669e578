// A memtide storage adapter over a directory, for Node (and Deno or Bun
// through their `node:fs`). One process at a time per directory: it is not a
// lock between processes.
//
// Each key is one file whose name encodes the key: the bytes a-z, 0-9 and
// `-` stay, every other byte becomes `_` and two hex digits (so `/`, `.`,
// `..`, upper case on case-insensitive file systems and non-ASCII are safe),
// and a name longer than NAME_CHARS is cut into nested directories (`.d`),
// as keys may be 512 bytes and file names 255. Files end in `.v`.
//
// A write goes to a temporary file in the same directory, which is flushed
// (fsync), renamed over the key's file, and the directory flushed, so a key
// holds its old value or its new one after a crash, never a mix. `batch`
// first writes every op into one write-ahead file (`batch.wal`, itself
// written that way: its rename is the commit point), then applies the ops,
// then deletes it; a batch cut off by a crash is applied again when the
// directory is next used. A deleted key's file is unlinked: no file keeps
// its value (the file system may keep freed blocks until they are reused).
import { Buffer } from "node:buffer";
import { createHash, randomBytes } from "node:crypto";
import { mkdir, open, readFile, readdir, rename, rmdir, unlink } from "node:fs/promises";
import { dirname, join } from "node:path";
import { checkOps, coded, sameBytes } from "./shared.js";

const NAME_CHARS = 200;
const WAL = "batch.wal";
const WAL_MAGIC = new TextEncoder().encode("memtide-wal-1\n");
const encoder = new TextEncoder();
const decoder = new TextDecoder("utf-8", { fatal: true });

/** The path of `key`'s file under `root`. */
function pathOf(root, key) {
  let name = "";
  for (const byte of encoder.encode(key)) {
    const c = String.fromCharCode(byte);
    name += /[a-z0-9-]/.test(c) ? c : `_${byte.toString(16).padStart(2, "0")}`;
  }
  const parts = [];
  let at = 0;
  while (name.length - at > NAME_CHARS) {
    // Never cut an escape in two.
    let end = at + NAME_CHARS;
    while (name[end - 1] === "_" || name[end - 2] === "_") end--;
    parts.push(`${name.slice(at, end)}.d`);
    at = end;
  }
  parts.push(`${name.slice(at)}.v`);
  return join(root, ...parts);
}

/** The key of an encoded name (the `.d` and `.v` suffixes removed and joined). */
function keyOf(name) {
  const bytes = [];
  for (let i = 0; i < name.length; i++) {
    if (name[i] === "_") {
      bytes.push(parseInt(name.slice(i + 1, i + 3), 16));
      i += 2;
    } else {
      bytes.push(name.charCodeAt(i));
    }
  }
  return decoder.decode(new Uint8Array(bytes));
}

const ignoreMissing = (error) => { if (error?.code !== "ENOENT") throw error; };

/** Flushes a directory's entries (a rename or unlink in it) to disk. */
async function syncDir(dir) {
  let handle;
  try {
    handle = await open(dir, "r");
    await handle.sync();
  } catch (error) {
    // Windows cannot open a directory; there rename is already durable.
    if (!["EISDIR", "EPERM", "EACCES"].includes(error?.code)) throw error;
  } finally {
    await handle?.close();
  }
}

/** Replaces `path` with `data`: a flushed temporary file renamed over it, then the directory flushed. */
async function writeDurably(path, data) {
  const tmp = `${path}.${randomBytes(6).toString("hex")}.tmp`;
  try {
    const handle = await open(tmp, "w");
    try {
      await handle.writeFile(data);
      await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(tmp, path);
  } catch (error) {
    await unlink(tmp).catch(() => {});
    throw error;
  }
  await syncDir(dirname(path));
}

function encodeWal(ops) {
  const parts = [WAL_MAGIC];
  const u32 = (n) => { const b = new Uint8Array(4); new DataView(b.buffer).setUint32(0, n); return b; };
  for (const op of ops) {
    const key = encoder.encode(op.key);
    parts.push(new Uint8Array([op.type === "put" ? 1 : 0]), u32(key.length), key);
    if (op.type === "put") parts.push(u32(op.value.length), op.value);
  }
  const hash = createHash("sha256");
  for (const part of parts) hash.update(part);
  parts.push(hash.digest());
  return Buffer.concat(parts);
}

function decodeWal(bytes) {
  const body = bytes.subarray(0, bytes.length - 32);
  const intact = bytes.length >= WAL_MAGIC.length + 32 && sameBytes(body.subarray(0, WAL_MAGIC.length), WAL_MAGIC) &&
    createHash("sha256").update(body).digest().equals(bytes.subarray(body.length));
  if (!intact) throw coded("CORRUPT", `memtide: ${WAL} is damaged`);
  const view = new DataView(body.buffer, body.byteOffset, body.length);
  const ops = [];
  let at = WAL_MAGIC.length;
  const take = () => { const n = view.getUint32(at); at += 4; const b = body.subarray(at, at + n); at += n; return b; };
  while (at < body.length) {
    const type = body[at++] === 1 ? "put" : "delete";
    const key = decoder.decode(take());
    ops.push(type === "put" ? { type, key, value: take() } : { type, key });
  }
  return ops;
}

export class FsStorage {
  #root;
  #queue = Promise.resolve();
  /** False until the directory exists and what a crash left behind is dealt with. */
  #ready = false;

  /** `dir`: the directory of this store (created when missing). */
  constructor(dir) {
    this.#root = dir;
  }

  /** Runs `work` after every earlier call: a batch's check and its writes are not interleaved with others. */
  #serial(work) {
    const run = this.#queue.then(async () => {
      if (!this.#ready) await this.#recover();
      return work();
    });
    this.#queue = run.catch(() => {});
    return run;
  }

  /** Removes temporary files, then applies a committed batch if there is one. */
  async #recover() {
    await mkdir(this.#root, { recursive: true });
    for (const path of await this.#files()) if (path.endsWith(".tmp")) await unlink(path);
    const wal = join(this.#root, WAL);
    const bytes = await readFile(wal).catch((error) => (error?.code === "ENOENT" ? null : Promise.reject(error)));
    if (bytes) {
      for (const op of decodeWal(bytes)) await this.#apply(op);
      await unlink(wal);
      await syncDir(this.#root);
    }
    this.#ready = true;
  }

  /** Every file under the root, recursively. */
  async #files(dir = this.#root) {
    const paths = [];
    for (const entry of await readdir(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) paths.push(...await this.#files(path));
      else paths.push(path);
    }
    return paths;
  }

  async #apply({ type, key, value }) {
    const path = pathOf(this.#root, key);
    if (type === "put") {
      if (await mkdir(dirname(path), { recursive: true })) {
        // New directories (a long key): their own entries must reach the disk too.
        for (let dir = dirname(path); dir !== this.#root; dir = dirname(dir)) await syncDir(dirname(dir));
      }
      await writeDurably(path, value);
      return;
    }
    await unlink(path).catch(ignoreMissing);
    await syncDir(dirname(path));
    // Empty directories of long keys go (one still in use refuses).
    for (let dir = dirname(path); dir !== this.#root; dir = dirname(dir)) {
      if (!(await rmdir(dir).then(() => true, () => false))) break;
    }
  }

  async #read(key) {
    const bytes = await readFile(pathOf(this.#root, key)).catch((error) => (error?.code === "ENOENT" ? null : Promise.reject(error)));
    return bytes && new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.length);
  }

  get(key) {
    return this.#serial(() => this.#read(key));
  }

  put(key, value) {
    return this.#serial(() => this.#apply({ type: "put", key, value }));
  }

  delete(key) {
    return this.#serial(() => this.#apply({ type: "delete", key }));
  }

  list(prefix) {
    return this.#serial(async () => {
      const keys = [];
      for (const path of await this.#files()) {
        if (!path.endsWith(".v")) continue;
        const name = path.slice(this.#root.length + 1).split(/[\\/]/).map((part) => part.slice(0, -2)).join("");
        const key = keyOf(name);
        if (key.startsWith(prefix)) keys.push(key);
      }
      return keys;
    });
  }

  batch(ops, expect) {
    checkOps(ops);
    return this.#serial(async () => {
      if (expect && !sameBytes(await this.#read(expect.key), expect.value)) {
        throw coded("CONFLICT", `\`${expect.key}\` was changed by another writer`);
      }
      await writeDurably(join(this.#root, WAL), encodeWal(ops));
      // Committed. If applying fails now, the next call applies it again
      // before it reads or writes anything.
      try {
        for (const op of ops) await this.#apply(op);
        await unlink(join(this.#root, WAL));
        await syncDir(this.#root);
      } catch {
        this.#ready = false;
      }
    });
  }
}
