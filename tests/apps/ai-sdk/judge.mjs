// What the AI SDK scenario (scenario.mjs) must have observed, wherever it
// ran: in Node (tests/apps/ai-sdk.test.mjs) or in Chromium
// (tests/apps/integrations.test.mjs).
import assert from "node:assert/strict";

export function judgeConversation(seen) {
  assert.equal(seen.error, undefined, seen.error);
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
}
