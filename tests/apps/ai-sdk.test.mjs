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
