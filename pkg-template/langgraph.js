// memtide/langgraph: a LangGraph.js `BaseStore` over a memtide `Memory`.
//
// Each item is one keyed memtide memory (`upsert` by key): the item's value
// is the memory's `metadata` (so it comes back as it was put, as JSON), its
// key the memory's `key`, its namespace the memory's scope, and the text
// memtide indexes is taken from the value (the store's `index.fields`, or a
// put's `index` paths; the whole value as JSON by default). `search` with a
// `query` is memtide's retrieval (BM25, and the model when one is loaded),
// scored by its calibrated relevance; `filter` is memtide's metadata filter.
//
// Namespaces map to scopes: every namespace of a store lives in the store's
// tenant (`scope.userId`, `scope.workspaceId`), as the project whose id is
// the namespace's labels joined by ":" (LangGraph forbids ":" and "." in
// labels, so the mapping is one to one). Guide: docs/integrations/langgraph.md.
import { BaseStore, InvalidNamespaceError, validateNamespace } from "@langchain/langgraph-checkpoint";

const SEPARATOR = ":";
/** The tenant of a store built without `scope`. */
const DEFAULT_SCOPE = Object.freeze({ userId: "langgraph", workspaceId: "store" });
/** Largest page memtide lists (its `limits.maxResults` default). */
const PAGE = 1000;
const OPERATORS = new Set(["$eq", "$ne", "$gt", "$gte", "$lt", "$lte", "$in", "$nin"]);

/** Whether a filter value is an operator object such as `{$gt: 3}`. */
function isOperators(value) {
  return typeof value === "object" && value !== null && !Array.isArray(value) &&
    Object.keys(value).length > 0 && Object.keys(value).every((k) => OPERATORS.has(k));
}

/** JSON equality, as memtide's metadata filter compares. */
function jsonEqual(a, b) {
  if (a === b) return true;
  if (typeof a !== "object" || typeof b !== "object" || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  const ka = Object.keys(a);
  const kb = Object.keys(b);
  return ka.length === kb.length && ka.every((k) => Object.hasOwn(b, k) && jsonEqual(a[k], b[k]));
}

/** Whether `actual` satisfies one operator filter, as LangGraph's stores compare. */
function satisfies(actual, operators) {
  return Object.entries(operators).every(([op, want]) => {
    switch (op) {
      case "$eq": return jsonEqual(actual, want);
      case "$ne": return !jsonEqual(actual, want);
      case "$gt": return Number(actual) > Number(want);
      case "$gte": return Number(actual) >= Number(want);
      case "$lt": return Number(actual) < Number(want);
      case "$lte": return Number(actual) <= Number(want);
      case "$in": return Array.isArray(want) && want.some((w) => jsonEqual(actual, w));
      case "$nin": return !Array.isArray(want) || !want.some((w) => jsonEqual(actual, w));
      default: return false;
    }
  });
}

/**
 * Splits a LangGraph filter into what memtide filters (plain equality on a
 * field: its metadata filter) and the operator conditions checked here.
 */
function splitFilter(filter) {
  const equal = {};
  const operators = [];
  for (const [field, want] of Object.entries(filter ?? {})) {
    if (isOperators(want)) operators.push([field, want]);
    else equal[field] = want;
  }
  return { equal, operators };
}

/** The strings at a LangGraph index path of `value` (`$`, `a.b`, `a[*].b`, `a[0]`). */
function textsAt(value, path) {
  if (path === "$") return [JSON.stringify(value)];
  let current = [value];
  for (const part of path.split(".")) {
    const match = /^([^[\]]*)((?:\[(?:\*|-?\d+)\])*)$/.exec(part);
    if (!match) return [];
    const [, name, indexes] = match;
    if (name) current = current.flatMap((v) => (v !== null && typeof v === "object" && name in v ? [v[name]] : []));
    for (const [, index] of indexes.matchAll(/\[(\*|-?\d+)\]/g)) {
      current = current.flatMap((v) => {
        if (!Array.isArray(v)) return [];
        if (index === "*") return v;
        const i = Number(index) < 0 ? v.length + Number(index) : Number(index);
        return i >= 0 && i < v.length ? [v[i]] : [];
      });
    }
  }
  return current.flatMap((v) => {
    if (v === null || v === undefined) return [];
    return [typeof v === "object" ? JSON.stringify(v) : String(v)];
  });
}

/** The date of a memtide RFC 3339 timestamp. */
const date = (text) => new Date(text);

/** A LangGraph.js store over a memtide `Memory`. See langgraph.d.ts. */
export class MemoryStore extends BaseStore {
  #memory;
  #tenant;
  #fields;

  constructor(options) {
    super();
    const { memory, scope = DEFAULT_SCOPE, index } = options ?? {};
    if (typeof memory?.upsert !== "function" || typeof memory?.getByKey !== "function") {
      throw new TypeError("MemoryStore: `memory` must be a memtide Memory (`await Memory.open(…)`)");
    }
    if (typeof scope?.userId !== "string" || typeof scope?.workspaceId !== "string") {
      throw new TypeError("MemoryStore: `scope` must be {userId, workspaceId}");
    }
    const fields = index?.fields ?? ["$"];
    if (!Array.isArray(fields) || fields.some((f) => typeof f !== "string" || f === "")) {
      throw new TypeError("MemoryStore: `index.fields` must be an array of paths");
    }
    this.#memory = memory;
    this.#tenant = { userId: scope.userId, workspaceId: scope.workspaceId };
    this.#fields = fields;
  }

  /** The memtide scope of a namespace. */
  scopeOf(namespace) {
    validateNamespace(namespace, { allowReservedRoot: true });
    return { ...this.#tenant, projectId: namespace.join(SEPARATOR) };
  }

  /** The namespace of a memtide memory of this store, or `null` for another memory. */
  #namespaceOf(item) {
    const { scope } = item;
    if (scope.userId !== this.#tenant.userId || scope.workspaceId !== this.#tenant.workspaceId) return null;
    if (!scope.projectId || scope.cardId || scope.sessionId || item.key === undefined || item.deletedAt) return null;
    return scope.projectId.split(SEPARATOR);
  }

  /** A LangGraph item of a memtide memory. */
  #item(memory, namespace, score) {
    const item = {
      value: memory.metadata ?? {},
      key: memory.key,
      namespace,
      createdAt: date(memory.createdAt),
      updatedAt: date(memory.updatedAt),
    };
    return score === undefined ? item : { ...item, score };
  }

  /** The text memtide indexes for a value. */
  #text(key, value, index) {
    if (index === false) return key;
    const texts = (index ?? this.#fields).flatMap((path) => textsAt(value, path));
    const text = texts.join("\n");
    return text.trim() ? text : key;
  }

  async batch(operations) {
    const results = new Array(operations.length).fill(undefined);
    // Consecutive puts are committed together (one `upsert`, one commit);
    // any other operation first commits the puts before it, so it sees them.
    let puts = new Map();
    const flush = async () => {
      if (puts.size === 0) return;
      const inputs = [...puts.values()];
      puts = new Map();
      const outcomes = await this.#memory.upsert(inputs);
      outcomes.forEach((outcome, i) => {
        if (outcome.outcome === "skipped") {
          throw new Error(`MemoryStore: the value of key "${inputs[i].key}" was not stored (${outcome.reason}): its text opts out of memory`);
        }
      });
    };
    for (const [i, op] of operations.entries()) {
      if ("value" in op) {
        if (op.value === null) {
          await flush();
          await this.#delete(op.namespace, op.key);
        } else {
          validateNamespace(op.namespace);
          if (typeof op.key !== "string") throw new TypeError("MemoryStore: a key must be a string");
          if (typeof op.value !== "object" || Array.isArray(op.value)) {
            throw new TypeError("MemoryStore: a value must be a JSON object");
          }
          const scope = this.scopeOf(op.namespace);
          puts.set(`${scope.projectId}\u0000${op.key}`, {
            text: this.#text(op.key, op.value, op.index),
            scope,
            key: op.key,
            metadata: op.value,
            kind: "semantic",
            source: { kind: "tool", ref: "langgraph" },
          });
        }
        results[i] = undefined;
        continue;
      }
      await flush();
      if ("namespacePrefix" in op) results[i] = await this.#search(op);
      else if ("key" in op) results[i] = await this.#get(op.namespace, op.key);
      else if ("matchConditions" in op || "limit" in op) results[i] = await this.#listNamespaces(op);
      else throw new TypeError(`MemoryStore: unknown operation ${JSON.stringify(op)}`);
    }
    await flush();
    return results;
  }

  async #get(namespace, key) {
    const memory = await this.#memory.getByKey({ scope: this.scopeOf(namespace), key });
    return memory && !memory.deletedAt ? this.#item(memory, [...namespace]) : null;
  }

  async #delete(namespace, key) {
    const memory = await this.#memory.getByKey({ scope: this.scopeOf(namespace), key });
    // Erased, not suppressed: a deleted item leaves no byte of its value.
    if (memory) await this.#memory.delete(memory.id, { hard: true });
  }

  /** This store's memories under a namespace prefix, with `metadata` equal to `equal`, newest first. */
  async #under(prefix, equal) {
    const found = [];
    const scope = { ...this.#tenant, ...(Object.keys(equal).length ? { metadata: equal } : {}) };
    let cursor;
    do {
      const page = await this.#memory.list({ scope, limit: PAGE, ...(cursor ? { cursor } : {}) });
      for (const memory of page.items) {
        const namespace = this.#namespaceOf(memory);
        if (namespace && prefix.every((label, i) => namespace[i] === label)) found.push([memory, namespace]);
      }
      cursor = page.nextCursor ?? undefined;
    } while (cursor);
    return found;
  }

  async #search({ namespacePrefix, filter, limit = 10, offset = 0, query }) {
    validateNamespace(namespacePrefix, { allowEmpty: true, allowReservedRoot: true });
    if (!Number.isInteger(limit) || limit < 0 || !Number.isInteger(offset) || offset < 0) {
      throw new TypeError("MemoryStore: `limit` and `offset` must be non-negative integers");
    }
    const { equal, operators } = splitFilter(filter);
    const keep = (memory) => operators.every(([field, ops]) => satisfies(memory.metadata?.[field], ops));
    const candidates = (await this.#under(namespacePrefix, equal)).filter(([memory]) => keep(memory));
    if (!query?.trim()) {
      return candidates.slice(offset, offset + limit).map(([memory, namespace]) => this.#item(memory, namespace));
    }
    // Retrieval runs in a scope; ask each namespace under the prefix and
    // merge the hits by relevance, which is comparable across queries.
    const wanted = new Map(candidates.map(([memory]) => [memory.id, true]));
    const namespaces = new Map(candidates.map(([, namespace]) => [namespace.join(SEPARATOR), namespace]));
    const hits = [];
    for (const namespace of namespaces.values()) {
      const found = await this.#memory.retrieve({
        text: query,
        scope: this.scopeOf(namespace),
        limit: Math.min(PAGE, offset + limit) || 1,
        dryRun: true,
        ...(Object.keys(equal).length ? { metadata: equal } : {}),
      });
      for (const hit of found) {
        if (wanted.has(hit.item.id)) hits.push([hit, namespace]);
      }
    }
    hits.sort((a, b) => b[0].relevance - a[0].relevance || b[0].score - a[0].score);
    return hits.slice(offset, offset + limit).map(([hit, namespace]) => this.#item(hit.item, namespace, hit.relevance));
  }

  async #listNamespaces({ matchConditions = [], maxDepth, limit = 100, offset = 0 }) {
    const seen = new Map();
    for (const [, namespace] of await this.#under([], {})) {
      const matches = matchConditions.every(({ matchType, path }) => {
        if (path.length > namespace.length) return false;
        const start = matchType === "suffix" ? namespace.length - path.length : 0;
        if (matchType !== "prefix" && matchType !== "suffix") {
          throw new TypeError(`MemoryStore: unknown match type ${matchType}`);
        }
        return path.every((label, i) => label === "*" || namespace[start + i] === label);
      });
      if (!matches) continue;
      const kept = maxDepth === undefined ? namespace : namespace.slice(0, maxDepth);
      seen.set(kept.join(SEPARATOR), kept);
    }
    const sorted = [...seen.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, ns]) => ns);
    return sorted.slice(offset, offset + limit);
  }
}

export { InvalidNamespaceError };
