// An app using memtide's AI SDK middleware with an extractor over the SDK's
// own mock model (`ai/test`): a preference stated ("I take my coffee as a
// cortado"), then changed ("I switched to flat whites"), then asked. The
// chat model and the extraction model are two scripted mocks; the
// extraction model answers as a real one would, reading the ids it is shown
// from its prompt. Then malformed extraction replies, through `remember`
// and through the middleware. Prints what it observed as JSON;
// tests/apps/ai-sdk.test.mjs judges it.
import { Memory } from "memtide";
import { EXTRACTION_PROMPT, memoryMiddleware, modelExtractor } from "memtide/ai-sdk";
import { generateText, simulateReadableStream, streamText, wrapLanguageModel } from "ai";
import { MockLanguageModelV3 } from "ai/test";

const scope = { userId: "alice", workspaceId: "chat" };
const usage = {
  inputTokens: { total: 10, noCache: 10, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 5, text: 5, reasoning: undefined },
};

/** A mock model whose replies are `reply(prompt)` in order, generated or streamed; it records each call. */
function scriptedModel(replies) {
  const calls = [];
  const next = (call) => {
    calls.push(call);
    const reply = replies.shift();
    return typeof reply === "function" ? reply(call.prompt) : reply;
  };
  const model = new MockLanguageModelV3({
    doGenerate: async (call) => ({
      content: [{ type: "text", text: next(call) }],
      finishReason: { unified: "stop", raw: "stop" },
      usage,
      warnings: [],
    }),
    doStream: async (call) => ({
      stream: simulateReadableStream({
        chunks: [
          { type: "stream-start", warnings: [] },
          { type: "text-start", id: "t0" },
          ...next(call).split(/(?<= )/).map((delta) => ({ type: "text-delta", id: "t0", delta })),
          { type: "text-end", id: "t0" },
          { type: "finish", finishReason: { unified: "stop", raw: "stop" }, usage },
        ],
      }),
    }),
  });
  return { model, calls };
}

/** The memories an extraction prompt shows, as the model reads them. */
function shownIn(prompt) {
  const text = prompt.at(-1).content.map((part) => part.text).join("");
  return JSON.parse(text.match(/Stored memories \(JSON\):\n(.*)\n/)[1]);
}

const systemOf = (prompt) => prompt.filter((m) => m.role === "system").map((m) => m.content).join("\n");

const mem = await Memory.open({ storage: "memory" });
const chat = scriptedModel([
  "A cortado, nice choice.",
  "Flat whites it is.",
  "You take it as a flat white.",
]);
const extraction = scriptedModel([
  // Turn 1: nothing stored yet; a realistic reply in a fence after prose.
  'Here are the operations:\n```json\n{"operations": [{"op": "add", "text": "Takes their coffee as a cortado", "kind": "preference"}]}\n```',
  // Turn 2: the model finds the cortado memory among those shown and updates it.
  (prompt) => {
    const cortado = shownIn(prompt).find((m) => m.text.includes("cortado"));
    return JSON.stringify({ operations: [{ op: "update", id: cortado.id, text: "Takes their coffee as a flat white" }] });
  },
  // Turn 3: a question, nothing to remember.
  '{"operations": [{"op": "none"}]}',
]);
const injections = [];
const remembered = [];
const wrapped = wrapLanguageModel({
  model: chat.model,
  middleware: memoryMiddleware({
    memory: mem,
    scope,
    budgetTokens: 300,
    extractor: modelExtractor(extraction.model),
    onInject: (injection) => injections.push(injection),
    onRemember: (result) => remembered.push(result),
  }),
});

const history = [];
async function turn(text, how = "generate") {
  history.push({ role: "user", content: text });
  const call = { model: wrapped, system: "You are a friendly barista.", messages: history, maxRetries: 0 };
  const reply = how === "generate" ? (await generateText(call)).text : await streamText(call).text;
  history.push({ role: "assistant", content: reply });
  return reply;
}

const observed = {};
await turn("I take my coffee as a cortado.");
observed.afterFirst = (await mem.list({ scope })).items.map(({ id, text, kind }) => ({ id, text, kind }));
await turn("Actually I switched from cortados to flat whites for my coffee.");
observed.afterSecond = (await mem.list({ scope })).items.map(({ id, text }) => ({ id, text }));
observed.secondShown = shownIn(extraction.calls[1].prompt);
// Streamed: remembered once the stream finished.
observed.lastReply = await turn("How do I take my coffee?", "stream");
observed.lastSystem = systemOf(chat.calls[2].prompt);
observed.lastInjection = injections.at(-1);
observed.remembered = remembered;
observed.extractionSystem = systemOf(extraction.calls[0].prompt);
observed.extractionPrompt = EXTRACTION_PROMPT;
observed.extractionCall = { temperature: extraction.calls[0].temperature, responseFormat: extraction.calls[0].responseFormat };
observed.everything = (await mem.list({ scope, includeSuperseded: true })).items
  .map(({ id, text, supersededBy, supersedes }) => ({ id, text, supersededBy, supersedes }));
observed.histories = Object.fromEntries(
  await Promise.all(observed.everything.map(async ({ id }) => [id, (await mem.history(id)).map((e) => [e.event, e.other ?? null])])),
);

// Malformed replies: INVALID_OPERATIONS, and the store is as it was.
// What the memories say and how they link (the middleware's injection marks
// usage, which is no change of what is remembered).
const snapshot = async () => JSON.stringify((await mem.list({ scope, includeSuperseded: true, includeDeleted: true })).items
  .map(({ id, text, kind, deletedAt, supersededAt, supersededBy, supersedes, history }) => ({ id, text, kind, deletedAt, supersededAt, supersededBy, supersedes, history })));
const before = await snapshot();
const flatWhite = observed.everything.find((m) => m.text.includes("flat white")).id;
const bad = {
  notJson: "I think the user likes coffee.",
  unknownId: JSON.stringify({ operations: [{ op: "update", id: "01JUNKIDFROMTHEMODEL", text: "Takes tea" }] }),
  oversize: JSON.stringify({ operations: [{ op: "add", text: "x".repeat(300_000) }] }),
  wrongOp: JSON.stringify({ operations: [{ op: "add", text: "Likes oat milk" }, { op: "upsert", id: flatWhite, text: "Takes tea" }] }),
};
observed.errors = {};
for (const [name, reply] of Object.entries(bad)) {
  const { model } = scriptedModel([reply]);
  const error = await mem
    .remember([{ role: "user", content: "I like my coffee with oat milk now." }], { scope, extractor: modelExtractor(model) })
    .then(() => null, (e) => e);
  observed.errors[name] = error && { code: error.code, message: error.message };
}
// Through the middleware: reported to onError, the reply still goes back.
const reported = [];
const { model: badExtraction } = scriptedModel([bad.unknownId]);
const { model: chat2 } = scriptedModel(["Oat milk, noted."]);
const guarded = wrapLanguageModel({
  model: chat2,
  middleware: memoryMiddleware({
    memory: mem,
    scope,
    extractor: modelExtractor(badExtraction),
    onError: (error) => reported.push(error.code),
  }),
});
observed.guardedReply = (await generateText({ model: guarded, prompt: "I take oat milk in my coffee now.", maxRetries: 0 })).text;
observed.guardedReported = reported;
observed.unchanged = (await snapshot()) === before;

await mem.close();
console.log(JSON.stringify(observed));
