// An app summarizing its conversations with memtide's AI SDK summarizer
// over the SDK's own mock model (`ai/test`): the prompt the model is sent,
// the summary stored and replaced, the input limit, a model that fails or
// answers nothing, an abort. Prints what it observed as JSON;
// tests/apps/ai-sdk.test.mjs judges it.
import { Memory } from "memtide";
import { modelSummarizer, summaryInstructions } from "memtide/ai-sdk";
import { MockLanguageModelV3 } from "ai/test";

const usage = {
  inputTokens: { total: 10, noCache: 10, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 5, text: 5, reasoning: undefined },
};

/** A model whose replies come from `replies` in order; it records each call's options. */
function scriptedModel(replies) {
  const calls = [];
  const model = new MockLanguageModelV3({
    doGenerate: async (options) => {
      calls.push(options);
      const reply = replies.shift();
      if (reply instanceof Error) throw reply;
      return { content: [{ type: "text", text: reply }], finishReason: { unified: "stop", raw: "stop" }, usage, warnings: [] };
    },
  });
  return { model, calls };
}

const scope = { userId: "alice", workspaceId: "chat" };
const mem = await Memory.open({ storage: "memory" });
const turns = await mem.ingestMessages([
  { role: "user", content: "We are planning a trip to Lisbon in June.", createdAt: new Date("2024-05-01T10:00:00Z") },
  { role: "assistant", content: "Lisbon in June has the Santo Antonio festival.", createdAt: new Date("2024-05-01T10:00:05Z") },
  { role: "user", name: "Ana", content: "Book the flat in Alfama, not Baixa.", createdAt: new Date("2024-05-01T10:01:00Z") },
], { scope: { ...scope, sessionId: "s1" } });

const { model, calls } = scriptedModel([
  "Alice is planning a June trip to Lisbon during the Santo Antonio festival and chose a flat in Alfama.",
  "Alice's June Lisbon trip: festival, flat in Alfama; flights still to book.",
  "Alfama flat chosen.",
  "   ",
  new Error("provider down"),
  "never used",
]);
const summarizer = modelSummarizer(model, { maxWords: 80 });
const out = { instructions: summaryInstructions(80), turnIds: turns.map((t) => t.id) };

const first = await mem.summarize({ scope, session: "s1", summarizer });
out.first = { id: first.id, kind: first.kind, text: first.text, summaryOf: first.summaryOf, scope: first.scope };
out.firstCall = { prompt: calls[0].prompt, maxOutputTokens: calls[0].maxOutputTokens, temperature: calls[0].temperature };

await mem.ingestMessages([{ role: "user", content: "Remind me to book the flights." }], { scope: { ...scope, sessionId: "s1" } });
const second = await mem.summarize({ scope, session: "s1", summarizer });
out.second = { id: second.id, text: second.text, summaryOf: second.summaryOf };
out.secondPrompt = calls[1].prompt[1].content[0].text;

// An input limit of one line: the newest memory only, and the summary's sources say so.
const small = await mem.summarize({ scope, session: "s1", summarizer: modelSummarizer(model, { maxInputChars: 10 }) });
out.small = { summaryOf: small.summaryOf, prompt: calls[2].prompt[1].content[0].text };

const failure = async (run) => {
  try {
    await run();
    return null;
  } catch (error) {
    return { code: error.code ?? null, message: error.message };
  }
};
out.blank = await failure(() => mem.summarize({ scope, session: "s1", summarizer }));
out.down = await failure(() => mem.summarize({ scope, session: "s1", summarizer }));
const controller = new AbortController();
controller.abort();
out.aborted = await failure(() => mem.summarize({ scope, session: "s1", summarizer, signal: controller.signal }));
out.callsAfterAbort = calls.length;
out.afterFailures = (await mem.get(first.id)).text;
out.notAModel = await failure(async () => modelSummarizer("openai/gpt-4.1"));

// The summary is injected like any memory, and erased with its source.
const injected = await mem.inject({ text: "Which Alfama flat was chosen?", scope: { ...scope, sessionId: "s2" }, budgetTokens: 300 });
out.injectedSummary = injected.used.includes(first.id);
await mem.delete(small.summaryOf[0], { hard: true }); // its one source now
out.afterSourceErased = await failure(() => mem.get(first.id));
console.log(JSON.stringify(out));
await mem.close();
