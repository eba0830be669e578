// The adversarial input table (tests/data/adversarial.json, read by
// tests/js/adversarial-cases.mjs) through the WIT component in jco, and
// sweeps of truncated and bit-flipped exports. Run by scripts/test-wit.sh.
//
// WIT is typed: a record has no unknown fields, a u32 is no NaN, an enum
// has no other value. The host's values are converted strictly, and a case
// the types cannot carry is `n/a` (the fixture says so for this surface).
// Strings cross as UTF-8: jco lowers a lone surrogate to U+FFFD, so those
// cases reach the component as valid text. The JSON-text parameters
// (`memory-tool`'s input, `open`'s config) get the case's text as written.
//
// After every input the store must hold what it held (stats, the full
// listing, the exported memories and every stored byte) unless the input
// was accepted, and a new memory must be ingested, retrieved and erased: a
// panic would have trapped, and the instance would be unusable.
import { test } from "node:test";
import assert from "node:assert/strict";

import { MapStorage, instantiateMemtide, listQuery, retrieveQuery, scope } from "./host.mjs";
import {
  SEED,
  SEED_FILE,
  cases,
  deriveExport,
  evaluate,
  expandText,
  expected,
  checksummedRanges,
  flips,
  inRanges,
  hotFileWithDuplicateId,
} from "../js/adversarial-cases.mjs";

const home = scope("alice", "home");

// ----- strict conversion to WIT values ---------------------------------------

class Inexpressible extends Error {}
const no = (why) => { throw new Inexpressible(why); };
const absent = (v) => v === undefined || v === null;
function record(v, fields, what) {
  if (!v || typeof v !== "object" || Array.isArray(v)) no(`${what} is not a record`);
  for (const k of Object.keys(v)) if (!fields.includes(k)) no(`${what}.${k} is not a field`);
  return v;
}
const str = (v, what) => (typeof v === "string" ? v : no(`${what} is not a string`));
const bool = (v, what) => (typeof v === "boolean" ? v : no(`${what} is not a bool`));
const u32 = (v, what) => (Number.isInteger(v) && v >= 0 && v <= 0xffffffff ? v : no(`${what} is not a u32`));
const oneOf = (values) => (v, what) => (values.includes(v) ? v : no(`${what} is not one of ${values}`));
const list = (f) => (v, what) => (Array.isArray(v) ? v.map((x, i) => f(x, `${what}[${i}]`)) : no(`${what} is not a list`));
const opt = (f) => (v, what) => (absent(v) ? undefined : f(v, what));
const flag = (v, what) => (absent(v) ? false : bool(v, what));
const kind = oneOf(["episodic", "semantic", "preference", "document", "summary", "fact"]);
const status = oneOf(["approved", "pending", "rejected"]);
const strings = list(str);

function witScope(v, what = "scope") {
  record(v, ["userId", "workspaceId", "projectId", "cardId", "sessionId"], what);
  return {
    userId: str(v.userId, `${what}.userId`),
    workspaceId: str(v.workspaceId, `${what}.workspaceId`),
    projectId: opt(str)(v.projectId, what),
    cardId: opt(str)(v.cardId, what),
    sessionId: opt(str)(v.sessionId, what),
  };
}

function scopeFilter(v, what = "filter") {
  record(v, ["userId", "workspaceId", "projectId", "cardId", "sessionId"], what);
  return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, opt(str)(x, `${what}.${k}`)]));
}

function source(v, what) {
  record(v, ["kind", "ref", "uri"], what);
  return {
    kind: oneOf(["message", "file", "tool", "import", "manual"])(v.kind, `${what}.kind`),
    ref: str(v.ref, `${what}.ref`),
    uri: opt(str)(v.uri, `${what}.uri`),
  };
}

function privacy(v, what) {
  record(v, ["pii", "private", "retentionDays"], what);
  return { pii: bool(v.pii, what), private: bool(v.private, what), retentionDays: opt(u32)(v.retentionDays, what) };
}

function memoryInput(v, what = "input") {
  record(v, ["text", "scope", "kind", "status", "pinned", "source", "tags", "privacy", "createdAt"], what);
  return {
    text: str(v.text, `${what}.text`),
    scope: witScope(v.scope),
    kind: opt(kind)(v.kind, what),
    status: opt(status)(v.status, what),
    pinned: opt(bool)(v.pinned, what),
    source: opt(source)(v.source, `${what}.source`),
    tags: opt(strings)(v.tags, `${what}.tags`),
    privacy: opt(privacy)(v.privacy, `${what}.privacy`),
    createdAt: opt(str)(v.createdAt, what),
  };
}

const RETRIEVE_FIELDS = [
  "text", "scope", "limit", "kinds", "tags", "since", "until", "dryRun", "explain", "includePending", "includePii",
];

function witRetrieveQuery(v, what = "query") {
  record(v, RETRIEVE_FIELDS, what);
  return {
    text: str(v.text, `${what}.text`),
    scope: witScope(v.scope),
    limit: opt(u32)(v.limit, `${what}.limit`),
    kinds: opt(list(kind))(v.kinds, what),
    tags: opt(strings)(v.tags, what),
    since: opt(str)(v.since, what),
    until: opt(str)(v.until, what),
    dryRun: flag(v.dryRun, what),
    explain: flag(v.explain, what),
    includePending: flag(v.includePending, what),
    includePii: flag(v.includePii, what),
  };
}

function injectQuery(v) {
  record(v, [...RETRIEVE_FIELDS, "budgetTokens", "format"], "query");
  const { budgetTokens, format, ...rest } = v;
  return {
    query: witRetrieveQuery(rest),
    budgetTokens: u32(budgetTokens, "budgetTokens"),
    format: opt(oneOf(["markdown", "xml"]))(format, "format"),
  };
}

function witListQuery(v) {
  record(v, ["scope", "kinds", "statuses", "tags", "pinned", "includeDeleted", "since", "until", "limit", "cursor"], "query");
  return listQuery({
    scope: opt(scopeFilter)(v.scope, "scope"),
    kinds: opt(list(kind))(v.kinds, "kinds"),
    statuses: opt(list(status))(v.statuses, "statuses"),
    tags: opt(strings)(v.tags, "tags"),
    pinned: opt(bool)(v.pinned, "pinned"),
    includeDeleted: flag(v.includeDeleted, "includeDeleted"),
    since: opt(str)(v.since, "since"),
    until: opt(str)(v.until, "until"),
    limit: opt(u32)(v.limit, "limit"),
    cursor: opt(str)(v.cursor, "cursor"),
  });
}

function patch(v) {
  record(v, ["text", "kind", "status", "pinned", "tags", "privacy", "source", "deleted"], "patch");
  return {
    text: opt(str)(v.text, "text"),
    kind: opt(kind)(v.kind, "kind"),
    status: opt(status)(v.status, "status"),
    pinned: opt(bool)(v.pinned, "pinned"),
    tags: opt(strings)(v.tags, "tags"),
    privacy: opt(privacy)(v.privacy, "privacy"),
    source: opt(source)(v.source, "source"),
    deleted: opt(bool)(v.deleted, "deleted"),
  };
}

// ----- the store -----------------------------------------------------------

async function openSeeded() {
  const storage = new MapStorage();
  const { Store } = await instantiateMemtide(storage);
  const store = Store.open(undefined);
  const ids = store.ingest(SEED.map((input) => memoryInput(input))).map((r) => r.id);
  store.delete(ids[6], false);
  store.syncFile(home, SEED_FILE.path, SEED_FILE.content);
  return { Store, store, storage, plain: ids[0] };
}

function state(store, storage) {
  return {
    stats: store.stats(undefined),
    list: store.list(listQuery({ includeDeleted: true, limit: 1000 })),
    // `exportedAt` is WASI's clock: compare the memories.
    items: JSON.parse(store.export()).items,
    stored: storage.snapshot(),
  };
}

let probes = 0;
function probe(store, context) {
  const text = `zebra quokka probe number ${probes++}`;
  const [added] = store.ingest([memoryInput({ text, scope: home })]);
  assert.equal(added.outcome, "added", context);
  const hits = store.retrieve(retrieveQuery(text, home, { dryRun: true }));
  assert.equal(hits[0]?.item.id, added.id, context);
  store.delete(added.id, true);
}

/** The outcome of `call`: "accepted", "TOOL_ERROR", an error code, or "n/a". */
function outcomeOf(call, context) {
  try {
    const result = call();
    return result && typeof result === "object" && result.isError === true ? "TOOL_ERROR" : "accepted";
  } catch (e) {
    if (e instanceof Inexpressible) return "n/a";
    if (e && typeof e === "object" && "payload" in e && typeof e.payload?.code === "string") {
      return e.payload.code.toUpperCase().replaceAll("-", "_");
    }
    assert.fail(`${context}: not a memtide error: ${e?.stack ?? e}`);
  }
}

function run(c, { Store, store, plain }) {
  if (c.bytes) return () => no("WIT strings are UTF-8");
  const value = () => evaluate(c.input);
  const jsonText = () => expandText(c.input, { sentinels: false });
  switch (c.op) {
    case "ingest":
      return () => store.ingest(c.batch ? c.batch.map((line) => memoryInput(evaluate(line))) : [memoryInput(value())]);
    case "retrieve": return () => store.retrieve(witRetrieveQuery(value()));
    case "inject": return () => store.inject(injectQuery(value()));
    case "update": return () => store.update(plain, patch(value()));
    case "get": return () => store.get(str(value(), "id"));
    case "list": return () => store.list(witListQuery(value()));
    case "deleteAll": return () => store.deleteAll(scopeFilter(value()), true);
    case "import":
      return () => store.import(c.derive ? deriveExport(store.export(), c.derive) : str(value(), "data"));
    case "syncFile":
      return () => {
        const file = record(value(), ["scope", "path", "content"], "file");
        return store.syncFile(witScope(file.scope), str(file.path, "path"), str(file.content, "content"));
      };
    case "memoryTool": return () => store.memoryTool(home, jsonText());
    case "readHotFile":
      return () => {
        if (c.derive) {
          const document = hotFileWithDuplicateId(store.renderHotFile(home, "# Me\n"));
          return store.readHotFile(home, "USER.md", document);
        }
        const file = record(value(), ["scope", "path", "document"], "file");
        return store.readHotFile(witScope(file.scope), str(file.path, "path"), str(file.document, "document"));
      };
    case "config":
      return () => {
        const opened = Store.open(jsonText());
        probe(opened, c.name);
      };
    case "applyOperations":
      return () => {
        const v = record(value(), ["scope", "allowed", "reply"], "request");
        return store.applyOperations(witScope(v.scope), opt(strings)(v.allowed, "allowed") ?? [], str(v.reply, "reply"));
      };
    case "storeSummary":
      return () => {
        const v = record(value(), ["scope", "text", "sources"], "summary");
        return store.storeSummary({ scope: witScope(v.scope), text: str(v.text, "text"), sources: strings(v.sources, "sources") });
      };
    case "summaryContext":
      return () => {
        const v = record(value(), ["scope", "limit", "includePii"], "query");
        return store.summaryContext({ scope: witScope(v.scope), limit: opt(u32)(v.limit, "limit"), includePii: flag(v.includePii, "includePii") });
      };
    default: throw new Error(`unknown op ${c.op}`);
  }
}

test("every case of the adversarial table through the component", async () => {
  const opened = await openSeeded();
  const { store, storage } = opened;
  const wrong = [];
  let tried = 0;
  let refused = 0;
  for (const c of cases) {
    const want = expected(c, "wit");
    const before = state(store, storage);
    const outcome = outcomeOf(run(c, opened), c.name);
    console.log(`wit | ${c.name} | ${outcome}`);
    if (outcome !== want) wrong.push(`${c.name}: expected ${want}, got ${outcome}`);
    if (outcome === "n/a") continue;
    tried++;
    if (outcome !== "accepted") {
      refused++;
      assert.deepEqual(state(store, storage), before, `${c.name}: a refused input changed the store`);
    }
    probe(store, c.name);
  }
  assert.deepEqual(wrong, [], "unexpected outcomes");
  console.log(`adversarial inputs tried through the WIT component: ${tried} table cases (${refused} refused)`);
});

test("truncated and bit-flipped exports are refused by the component and change nothing", async () => {
  const { store, storage } = await openSeeded();
  const exported = store.export();
  const bytes = new TextEncoder().encode(exported);
  const itemsAt = new TextEncoder().encode(exported.slice(0, exported.indexOf('"items":'))).length;
  const before = state(store, storage);
  const utf8 = new TextDecoder("utf-8", { fatal: true });
  const counts = {};
  const count = (key) => { counts[key] = (counts[key] ?? 0) + 1; };
  const acceptedAt = [];

  const check = (data, allowed, context) => {
    let text;
    try {
      text = utf8.decode(data);
    } catch {
      return "n/a"; // a WIT string is UTF-8
    }
    const outcome = outcomeOf(() => store.import(text), context);
    assert.ok(outcome === "accepted" || allowed.includes(outcome), `${context}: ${outcome}`);
    assert.deepEqual(state(store, storage), before, `${context}: the store changed`);
    probe(store, context);
    return outcome;
  };
  for (let cut = 0; cut < bytes.length; cut++) {
    const outcome = check(bytes.slice(0, cut), ["CORRUPT", "INVALID_INPUT"], `truncated at ${cut}`);
    assert.notEqual(outcome, "accepted", `truncated at ${cut}`);
    if (outcome !== "n/a") count(`truncated: ${outcome}`);
  }
  for (const [at, bit] of flips(bytes.length, itemsAt)) {
    const flipped = bytes.slice();
    flipped[at] ^= 1 << bit;
    const context = `bit ${bit} of byte ${at} flipped`;
    const outcome = check(flipped, ["CORRUPT", "INVALID_INPUT", "VERSION_MISMATCH"], context);
    if (outcome === "accepted") acceptedAt.push(at);
    if (outcome !== "n/a") count(`bit flip: ${outcome}`);
  }
  const covered = checksummedRanges(exported);
  assert.ok(acceptedAt.every((at) => !inRanges(covered, at)), `a flip inside the items or files was accepted: ${acceptedAt}`);
  const total = Object.values(counts).reduce((a, b) => a + b, 0);
  console.log(`export of ${bytes.length} bytes; outcomes: ${JSON.stringify(counts)}`);
  console.log(`adversarial inputs tried through the WIT component: ${total} truncated or bit-flipped exports`);
});
