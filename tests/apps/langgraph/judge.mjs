// What the LangGraph scenario (scenario.mjs) must have observed, wherever
// it ran: in Node (tests/apps/langgraph.test.mjs) or in Chromium
// (tests/apps/integrations.test.mjs).
import assert from "node:assert/strict";

export function judgeGraph(seen) {
  assert.equal(seen.error, undefined, seen.error);
  assert.equal(seen.isBaseStore, true);
  assert.equal(seen.alice.length, 1);
  assert.equal(seen.alice[0].text, "Alice's sister Mara lives in Lisbon.");
  assert.equal(seen.alice[0].key, "fact-1");
  assert.ok(seen.alice[0].score > 0 && seen.alice[0].score <= 1);
  assert.deepEqual(seen.bob.map((r) => r.text), ["Bob's sister lives in Oslo."], "namespaces stay apart");
  const byKey = (a, b) => (a.projectId + a.key < b.projectId + b.key ? -1 : 1);
  assert.deepEqual(seen.facts.sort(byKey), [
    { key: "fact-1", projectId: "memories:alice", metadata: { source: "chat", text: "Alice's sister Mara lives in Lisbon." } },
    { key: "fact-2", projectId: "memories:alice", metadata: { source: "chat", text: "Alice is allergic to peanuts." } },
    { key: "fact-1", projectId: "memories:bob", metadata: { source: "chat", text: "Bob's sister lives in Oslo." } },
  ].sort(byKey));
}
