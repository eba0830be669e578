// A memtide storage adapter over the storage of a SQLite-backed Cloudflare
// Durable Object (`ctx.storage`): the recommended Worker deployment, one
// object per user, strongly consistent, every write a transaction.
//
// It keeps memtide's keys in a table of its own through the SQL API rather
// than in the object's key-value API, because `list` then reads keys
// without values, a key's parts are rows deleted by one statement, and
// `batch` is one `transactionSync`: the expectation is checked inside it
// and a throw rolls every row back.
//
//   CREATE TABLE <table> (key TEXT, part INTEGER, data BLOB, PRIMARY KEY (key, part))
//
// A SQLite-backed object stores at most 2 MB per row (and per key and value
// of its key-value API; https://developers.cloudflare.com/durable-objects/platform/limits/;
// workerd refuses a 2,200,000-byte BLOB with SQLITE_TOOBIG), so a value is
// split into parts of PART_BYTES, below it with a key of up to 512 bytes
// beside.
import { checkOps, coded, join, sameBytes, split } from "./shared.js";

export const PART_BYTES = 1536 * 1024;

export class DurableObjectSqlStorage {
  #storage;
  #sql;
  #table;

  /**
   * `storage`: the object's `ctx.storage` (its class must be SQLite-backed:
   * `new_sqlite_classes` in the Wrangler migration). `table` names the
   * table, so several stores can live in one object.
   */
  constructor(storage, { table = "memtide" } = {}) {
    if (!/^[A-Za-z][A-Za-z0-9_]*$/.test(table)) throw new TypeError(`memtide: invalid table name ${JSON.stringify(table)}`);
    if (!storage?.sql) throw new TypeError("memtide: the Durable Object must be SQLite-backed (its ctx.storage has no sql)");
    this.#storage = storage;
    this.#sql = storage.sql;
    this.#table = table;
    this.#sql.exec(`CREATE TABLE IF NOT EXISTS ${table} (key TEXT NOT NULL, part INTEGER NOT NULL, data BLOB NOT NULL, PRIMARY KEY (key, part)) WITHOUT ROWID`);
  }

  #read(key) {
    const rows = this.#sql.exec(`SELECT data FROM ${this.#table} WHERE key = ? ORDER BY part`, key).toArray();
    return rows.length === 0 ? null : join(rows.map((row) => row.data));
  }

  #write(key, value) {
    this.#sql.exec(`DELETE FROM ${this.#table} WHERE key = ?`, key);
    if (value === null) return;
    split(value, PART_BYTES).forEach((part, i) => {
      this.#sql.exec(`INSERT INTO ${this.#table} (key, part, data) VALUES (?, ?, ?)`, key, i, part);
    });
  }

  get(key) {
    return this.#read(key);
  }

  put(key, value) {
    // One transaction, so a value's parts are never left half written.
    this.#storage.transactionSync(() => this.#write(key, value));
  }

  delete(key) {
    this.#write(key, null);
  }

  list(prefix) {
    const keys = [];
    // Keys sort by their bytes (SQLite's BINARY collation): the prefix's
    // keys are one run starting at the prefix.
    for (const { key } of this.#sql.exec(`SELECT key FROM ${this.#table} WHERE part = 0 AND key >= ? ORDER BY key`, prefix)) {
      if (!key.startsWith(prefix)) break;
      keys.push(key);
    }
    return keys;
  }

  batch(ops, expect) {
    checkOps(ops);
    this.#storage.transactionSync(() => {
      if (expect && !sameBytes(this.#read(expect.key), expect.value)) {
        throw coded("CONFLICT", `\`${expect.key}\` was changed by another writer`);
      }
      for (const op of ops) this.#write(op.key, op.type === "put" ? op.value : null);
    });
  }
}
