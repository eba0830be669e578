// memtide/ai-sdk in a Node app with the Vercel AI SDK (pinned in
// tests/apps/package.json) and its mock model, against the packed tarball;
// and the runnable example of docs/integrations/ai-sdk.md.
// Run: bash scripts/pack-apps.sh && node --test tests/apps/ai-sdk.test.mjs
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFile, writeFile, rm } from "node:fs/promises";
import { run } from "./lib.mjs";

const cwd = new URL("ai-sdk/", import.meta.url);

test("the middleware injects earlier turns with their citations and ingests completed turns only", async () => {
  const seen = JSON.parse((await run("node", ["conversation.mjs"], { cwd })).stdout);
  // Turn 1: nothing to recall yet; the user's message and the reply are stored with their roles.
  assert.equal(seen.firstSystem, "You are a friendly assistant.");
  assert.deepEqual(seen.afterFirst.map((i) => i.role).sort(), ["assistant", "user"]);
  assert.ok(seen.afterFirst.some((i) => i.text === "My dog Pixel is a greyhound who loves the beach."));
  // Turn 2: the prompt's system message carries the first turn's memory, cited.
  assert.ok(seen.secondSystem.startsWith("You are a friendly assistant.\n\n"), seen.secondSystem);
  assert.match(seen.secondSystem, /\[m\d+\][^\n]*My dog Pixel is a greyhound/);
  const cited = seen.secondInjection.citations.map((c) => c.id);
  assert.equal(seen.firstMemoryIds.length, 1);
  assert.ok(cited.includes(seen.firstMemoryIds[0]), JSON.stringify(seen.secondInjection.citations));
  // Turn 3, streamed: stored once the stream finished.
  assert.equal(seen.thirdReply, "Noted: Pixel's birthday is on the 4th of May.");
  assert.equal(seen.itemsAfterStream, 6);
  assert.deepEqual(
    seen.streamedMemory.filter((m) => m.role === "assistant" && m.text.includes("birthday")).map((m) => m.text),
    ["Noted: Pixel's birthday is on the 4th of May."],
  );
  // Failures store nothing.
  assert.match(seen.generateFailure, /provider down/);
  assert.equal(seen.afterGenerateFailure, 0);
  assert.ok(seen.streamErrorReported.some((m) => /overloaded/.test(m)), JSON.stringify(seen.streamErrorReported));
  assert.equal(seen.afterStreamError, 0);
  assert.match(seen.streamBreakReported, /connection reset/);
  assert.equal(seen.afterStreamBreak, 0);
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
  } finally {
    await rm(file, { force: true });
  }
});
