// memtide/ai-sdk in a Node app with the Vercel AI SDK (pinned in
// tests/apps/package.json) and its mock model, against the packed tarball;
// and the runnable example of docs/integrations/ai-sdk.md. The same
// scenario runs in Chromium in tests/apps/integrations.test.mjs.
// Run: bash scripts/pack-apps.sh && node --test tests/apps/ai-sdk.test.mjs
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFile, writeFile, rm } from "node:fs/promises";
import { run } from "./lib.mjs";
import { judgeConversation } from "./ai-sdk/judge.mjs";

const cwd = new URL("ai-sdk/", import.meta.url);

test("the middleware injects earlier turns with their citations and ingests completed turns only", async () => {
  judgeConversation(JSON.parse((await run("node", ["conversation.mjs"], { cwd })).stdout));
});

test("a preference stated, changed and asked: the extractor supersedes it, the last prompt carries only the new value, cited", async () => {
  const seen = JSON.parse((await run("node", ["extraction.mjs"], { cwd })).stdout);
  // Turn 1: the extractor's add, from a fenced reply; no raw turn is stored.
  assert.deepEqual(seen.afterFirst.map(({ text, kind }) => [text, kind]), [["Takes their coffee as a cortado", "preference"]]);
  const cortado = seen.afterFirst[0].id;
  // Turn 2: the extraction model was shown the cortado memory and updated it.
  assert.ok(seen.secondShown.some((m) => m.id === cortado), JSON.stringify(seen.secondShown));
  assert.deepEqual(seen.afterSecond.map((m) => m.text), ["Takes their coffee as a flat white"]);
  const flatWhite = seen.afterSecond[0].id;
  assert.deepEqual(seen.remembered[1].superseded, [{ id: cortado, by: flatWhite }]);
  // Turn 3, streamed: the prompt holds the new value only, cited; the turn is remembered after the stream.
  assert.equal(seen.lastReply, "You take it as a flat white.");
  assert.equal(seen.remembered.length, 3);
  assert.match(seen.lastSystem, /\[m1\][^\n]*flat white/);
  assert.doesNotMatch(seen.lastSystem, /cortado/);
  assert.deepEqual(seen.lastInjection.citations.map((c) => c.id), [flatWhite]);
  assert.deepEqual(seen.remembered[2], { added: [], merged: [], superseded: [], deleted: [], memories: seen.remembered[2].memories });
  // History shows both values and links them; it holds no text.
  const byId = Object.fromEntries(seen.everything.map((m) => [m.id, m]));
  assert.equal(byId[cortado].supersededBy, flatWhite);
  assert.deepEqual(byId[flatWhite].supersedes, [cortado]);
  assert.deepEqual(seen.histories[cortado], [["created", null], ["superseded", flatWhite]]);
  assert.deepEqual(seen.histories[flatWhite], [["created", null], ["supersedes", cortado]]);
  // The documented prompt is the one sent, at temperature 0, asking for JSON.
  assert.equal(seen.extractionSystem, seen.extractionPrompt);
  assert.deepEqual(seen.extractionCall, { temperature: 0, responseFormat: { type: "json" } });
  const doc = await readFile(new URL("../../docs/integrations/ai-sdk.md", import.meta.url), "utf8");
  assert.ok(doc.includes(seen.extractionPrompt), "docs/integrations/ai-sdk.md prints the prompt in full");
  // Malformed replies: a typed error, nothing changed.
  for (const name of ["notJson", "unknownId", "oversize", "wrongOp"]) {
    assert.equal(seen.errors[name]?.code, "INVALID_OPERATIONS", `${name}: ${JSON.stringify(seen.errors[name])}`);
  }
  assert.equal(seen.guardedReply, "Oat milk, noted.");
  assert.deepEqual(seen.guardedReported, ["INVALID_OPERATIONS"]);
  assert.equal(seen.unchanged, true);
});

test("the summarizer sends the model memtide's prompt and memory.summarize stores, replaces and erases its summary", async () => {
  const seen = JSON.parse((await run("node", ["summarize.mjs"], { cwd })).stdout);
  const session = { userId: "alice", workspaceId: "chat", sessionId: "s1" };
  // First summary: the session's three turns, oldest first, in the documented prompt.
  assert.equal(seen.first.kind, "summary");
  assert.deepEqual(seen.first.scope, session);
  assert.deepEqual(seen.first.summaryOf, [...seen.turnIds].sort());
  assert.match(seen.first.text, /Alfama/);
  const [system, user] = seen.firstCall.prompt;
  assert.deepEqual(system, { role: "system", content: seen.instructions });
  assert.match(seen.instructions, /at most 80 words/);
  assert.equal(user.role, "user");
  assert.equal(user.content[0].text, [
    "Previous summary:\n(none)",
    "Memories:\n[2024-05-01 user] We are planning a trip to Lisbon in June.\n[2024-05-01 assistant] Lisbon in June has the Santo Antonio festival.\n[2024-05-01 Ana] Book the flat in Alfama, not Baixa.",
  ].join("\n\n"));
  assert.equal(seen.firstCall.maxOutputTokens, 400);
  assert.equal(seen.firstCall.temperature, 0);
  // Again: the previous summary goes into the prompt and is replaced in place.
  assert.equal(seen.second.id, seen.first.id);
  assert.equal(seen.second.summaryOf.length, 4);
  assert.ok(seen.secondPrompt.startsWith(`Previous summary:\n${seen.first.text}\n\nMemories:\n`), seen.secondPrompt);
  assert.match(seen.secondPrompt, /Remind me to book the flights\.$/);
  // The input limit keeps the newest memory, and the sources follow.
  assert.equal(seen.small.summaryOf.length, 1);
  assert.match(seen.small.prompt, /Memories:\n\[[^\]]*\] Remind me to book the flights\.$/);
  // Failures change nothing.
  assert.equal(seen.blank.code, "INVALID_INPUT");
  assert.match(seen.down.message, /provider down/);
  assert.equal(seen.aborted.code, "ABORTED");
  assert.equal(seen.callsAfterAbort, 5, "an aborted call asks no model");
  assert.equal(seen.afterFailures, "Alfama flat chosen.");
  assert.equal(seen.notAModel.code, "INVALID_INPUT");
  // Injected from another session like any memory; erased with a source.
  assert.equal(seen.injectedSummary, true);
  assert.equal(seen.afterSourceErased.code, "NOT_FOUND");
});

test("memtide/ai-sdk's types fit the AI SDK's", async () => {
  const tsc = new URL("../../node_modules/typescript/bin/tsc", import.meta.url).pathname;
  await run("node", [tsc, "--noEmit", "--strict", "--target", "es2022", "--module", "nodenext", "--moduleResolution", "nodenext", "--lib", "es2023,dom", "--skipLibCheck", "types.ts"], { cwd });
});

test("docs/integrations/ai-sdk.md: its example runs as written", async () => {
  const doc = await readFile(new URL("../../docs/integrations/ai-sdk.md", import.meta.url), "utf8");
  const blocks = [...doc.matchAll(/```js\n([\s\S]*?)```/g)].map((m) => m[1]);
  assert.equal(blocks.length, 1, "one complete example");
  const file = new URL("doc-example.mjs", cwd);
  await writeFile(file, blocks[0]);
  try {
    const { stdout } = await run("node", ["doc-example.mjs"], { cwd });
    assert.match(stdout, /\[m1\]/, stdout);
    assert.match(stdout, /cortado/, stdout);
    assert.match(stdout, /^summary 4$/m, stdout);
  } finally {
    await rm(file, { force: true });
  }
});
