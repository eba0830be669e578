// The adversarial input table (tests/data/adversarial.json, see
// adversarial-cases.mjs) through the npm package in Node, and sweeps of
// truncated and bit-flipped exports passed as bytes. After every input the
// store must hold what it held (stats, the full listing, the export and
// every stored byte) unless the input was accepted, and a new memory must be
// ingested, retrieved and erased: a panic would have killed the WebAssembly
// instance, and the probe would fail.
import { test } from "node:test";
import assert from "node:assert/strict";

import { Memory, MemtideError } from "../../dist/memtide/node.js";
import { mapAdapter, snapshot } from "./map-adapter.mjs";
import {
  SEED,
  SEED_FILE,
  cases,
  deriveExport,
  evaluate,
  expected,
  checksummedRanges,
  flips,
  inRanges,
  hexBytes,
  hotFileWithDuplicateId,
} from "./adversarial-cases.mjs";

const home = { userId: "alice", workspaceId: "home" };
const now = () => Date.parse("2024-05-01T12:00:00Z");

async function openSeeded() {
  const adapter = mapAdapter({ atomic: true });
  const mem = await Memory.open({ storage: adapter, now });
  const results = await mem.ingest(SEED);
  await mem.delete(results[6].id);
  await mem.syncFile({ scope: home, ...SEED_FILE });
  return { mem, adapter, plain: results[0].id };
}

async function state(mem, adapter) {
  return {
    stats: await mem.stats(),
    list: await mem.list({ includeDeleted: true, limit: 1000 }),
    export: await mem.export(),
    stored: snapshot(adapter.map),
  };
}

let probes = 0;
async function probe(mem, context) {
  const text = `zebra quokka probe number ${probes++}`;
  const [added] = await mem.ingest({ text, scope: home });
  assert.equal(added.outcome, "added", context);
  const hits = await mem.retrieve({ text, scope: home, dryRun: true });
  assert.equal(hits[0]?.item.id, added.id, context);
  await mem.delete(added.id, { hard: true });
}

/** The outcome of a call's promise: "accepted", "TOOL_ERROR" or the error's code. */
async function outcomeOf(promise, context) {
  try {
    const result = await promise;
    return result && typeof result === "object" && result.isError === true ? "TOOL_ERROR" : "accepted";
  } catch (error) {
    assert.ok(error instanceof MemtideError, `${context}: not a MemtideError: ${error?.stack ?? error}`);
    assert.ok(error.message.length > 0, context);
    return error.code;
  }
}

/** The call of one case, to run; "n/a" when the package takes no such input. */
function call(c, mem, plain) {
  const value = () => evaluate(c.input);
  const bytes = c.bytes && hexBytes(c.bytes);
  switch (c.op) {
    case "ingest":
      if (bytes) return "n/a";
      return () => mem.ingest(c.batch ? c.batch.map(evaluate) : value());
    case "retrieve": return bytes ? "n/a" : () => mem.retrieve(value());
    case "inject": return bytes ? "n/a" : () => mem.inject(value());
    case "update": return bytes ? "n/a" : () => mem.update(plain, value());
    case "get": return () => mem.get(value());
    case "list": return () => mem.list(value());
    case "deleteAll": return () => mem.deleteAll({ scope: value(), hard: true });
    case "import":
      if (c.derive) return async () => mem.import(deriveExport(await mem.export(), c.derive));
      return () => mem.import(bytes ?? value());
    case "syncFile": return bytes ? "n/a" : () => mem.syncFile(value());
    case "memoryTool": return bytes ? "n/a" : () => mem.memoryTool(home, value());
    case "readHotFile":
      if (bytes) return "n/a";
      if (c.derive) {
        return async () => {
          const rendered = await mem.renderHotFile(home, "# Me\n");
          return mem.readHotFile({ scope: home, path: "USER.md", document: hotFileWithDuplicateId(rendered) });
        };
      }
      return () => mem.readHotFile(value());
    case "config":
      return async () => {
        const opened = await Memory.open({ storage: "memory", now, config: value() });
        await probe(opened, c.name);
        await opened.close();
      };
    case "applyOperations": return bytes ? "n/a" : () => mem.applyOperations(value());
    case "storeSummary": return bytes ? "n/a" : () => mem.storeSummary(value());
    case "summaryContext": return bytes ? "n/a" : () => mem.summaryContext(value());
    default: throw new Error(`unknown op ${c.op}`);
  }
}

test("every case of the adversarial table through the npm package", async () => {
  const { mem, adapter, plain } = await openSeeded();
  const wrong = [];
  let tried = 0;
  let refused = 0;
  for (const c of cases) {
    const want = expected(c, "js");
    if (want === "n/a") {
      console.log(`js | ${c.name} | n/a`);
      continue;
    }
    const before = await state(mem, adapter);
    const thunk = call(c, mem, plain);
    const outcome = thunk === "n/a" ? "n/a" : await outcomeOf(thunk(), c.name);
    console.log(`js | ${c.name} | ${outcome}`);
    if (outcome !== want) wrong.push(`${c.name}: expected ${want}, got ${outcome}`);
    tried++;
    if (outcome !== "accepted") {
      refused++;
      assert.deepEqual(await state(mem, adapter), before, `${c.name}: a refused input changed the store`);
    }
    await probe(mem, c.name);
  }
  assert.deepEqual(wrong, [], "unexpected outcomes");
  console.log(`adversarial inputs tried through the npm package: ${tried} table cases (${refused} refused)`);
});

test("truncated and bit-flipped exports, as bytes, are refused and change nothing", async () => {
  const { mem, adapter } = await openSeeded();
  const exported = await mem.export();
  const bytes = new TextEncoder().encode(exported);
  const itemsAt = new TextEncoder().encode(exported.slice(0, exported.indexOf('"items":'))).length;
  const before = await state(mem, adapter);
  const counts = {};
  const count = (key) => { counts[key] = (counts[key] ?? 0) + 1; };
  const acceptedAt = [];

  const check = async (data, allowed, context) => {
    const outcome = await outcomeOf(mem.import(data), context);
    assert.ok(outcome === "accepted" || allowed.includes(outcome), `${context}: ${outcome}`);
    assert.deepEqual(await state(mem, adapter), before, `${context}: the store changed`);
    await probe(mem, context);
    return outcome;
  };
  for (let cut = 0; cut < bytes.length; cut++) {
    const outcome = await check(bytes.slice(0, cut), ["CORRUPT", "INVALID_INPUT"], `truncated at ${cut}`);
    assert.notEqual(outcome, "accepted", `truncated at ${cut}`);
    count(`truncated: ${outcome}`);
  }
  for (const [at, bit] of flips(bytes.length, itemsAt)) {
    const flipped = bytes.slice();
    flipped[at] ^= 1 << bit;
    const context = `bit ${bit} of byte ${at} flipped`;
    const outcome = await check(flipped, ["CORRUPT", "INVALID_INPUT", "VERSION_MISMATCH"], context);
    if (outcome === "accepted") acceptedAt.push(at);
    count(`bit flip: ${outcome}`);
  }
  const covered = checksummedRanges(exported);
  assert.ok(acceptedAt.every((at) => !inRanges(covered, at)), `a flip inside the items or files was accepted: ${acceptedAt}`);
  const total = Object.values(counts).reduce((a, b) => a + b, 0);
  console.log(`export of ${bytes.length} bytes; outcomes: ${JSON.stringify(counts)}`);
  console.log(`adversarial inputs tried through the npm package: ${total} truncated or bit-flipped exports`);
});

test("lone surrogates anywhere in a JavaScript value are refused", async () => {
  const { mem, adapter } = await openSeeded();
  const before = await state(mem, adapter);
  const lone = ["\uD800", "\uDBFF", "\uDC00", "\uDFFF", "a\uDC00\uD800b", "\uD83D"];
  let tried = 0;
  for (const s of lone) {
    for (const [name, call] of [
      ["text", () => mem.ingest({ text: `x ${s}`, scope: home })],
      ["workspaceId", () => mem.ingest({ text: "x", scope: { ...home, workspaceId: s } })],
      ["source ref", () => mem.ingest({ text: "x", scope: home, source: { kind: "message", ref: s } })],
      ["query", () => mem.retrieve({ text: `coffee ${s}`, scope: home })],
      ["tag filter", () => mem.retrieve({ text: "coffee", scope: home, tags: [s] })],
      ["list cursor", () => mem.list({ cursor: s })],
      ["file path", () => mem.syncFile({ scope: home, path: `${s}.md`, content: "x" })],
      ["hot document", () => mem.renderHotFile(home, s)],
      ["memory tool path", () => mem.memoryTool(home, { command: "view", path: `/memories/${s}` })],
      ["import", () => mem.import(s)],
      ["id", () => mem.get(s)],
      ["property name", () => mem.ingest({ text: "x", scope: home, [s]: 1 })],
    ]) {
      const outcome = await outcomeOf(call(), name);
      assert.equal(outcome, "INVALID_INPUT", `${name} with ${JSON.stringify(s)}`);
      tried++;
    }
  }
  assert.deepEqual(await state(mem, adapter), before);
  await probe(mem, "after lone surrogates");
  console.log(`adversarial inputs tried through the npm package: ${tried} lone surrogates`);
});
