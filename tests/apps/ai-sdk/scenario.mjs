// The AI SDK scenario the Node app (conversation.mjs, judged by
// tests/apps/ai-sdk.test.mjs) and the Chromium app (tests/apps/integrations,
// judged by tests/apps/integrations.test.mjs) both run: memtide's middleware
// with the SDK's own mock model (`ai/test`), three turns through
// `generateText` and `streamText`, then a call whose model throws, a stream
// that reports an error and a stream that breaks off. It returns what it
// observed, as JSON-safe values; judge.mjs says what that must be.
import { memoryMiddleware } from "memtide/ai-sdk";
import { generateText, simulateReadableStream, streamText, wrapLanguageModel } from "ai";
import { MockLanguageModelV3 } from "ai/test";

const scope = { userId: "alice", workspaceId: "chat" };
const usage = {
  inputTokens: { total: 10, noCache: 10, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 5, text: 5, reasoning: undefined },
};
const finish = { type: "finish", finishReason: { unified: "stop", raw: "stop" }, usage };

/** A model whose replies come from `replies` in order; it records each prompt. */
function scriptedModel(replies) {
  const prompts = [];
  const next = (prompt) => {
    prompts.push(prompt);
    const reply = replies.shift();
    if (reply instanceof Error) throw reply;
    return reply;
  };
  const model = new MockLanguageModelV3({
    doGenerate: async ({ prompt }) => ({
      content: [{ type: "text", text: next(prompt) }],
      finishReason: { unified: "stop", raw: "stop" },
      usage,
      warnings: [],
    }),
    doStream: async ({ prompt }) => {
      const reply = next(prompt);
      if (typeof reply === "function") return { stream: reply() };
      const words = reply.split(/(?<= )/);
      return {
        stream: simulateReadableStream({
          chunks: [
            { type: "stream-start", warnings: [] },
            { type: "text-start", id: "t0" },
            ...words.map((delta) => ({ type: "text-delta", id: "t0", delta })),
            { type: "text-end", id: "t0" },
            finish,
          ],
        }),
      };
    },
  });
  return { model, prompts };
}

const systemOf = (prompt) => prompt.filter((m) => m.role === "system").map((m) => m.content).join("\n");
const count = async (mem) => (await mem.stats({})).items;

/** Runs the conversation against `mem`, an open, empty memtide `Memory`. */
export async function converse(mem) {
  const injections = [];
  const failures = [];
  const { model, prompts } = scriptedModel([
    "A greyhound on the beach sounds wonderful.",
    "Pixel is a greyhound.",
    "Noted: Pixel's birthday is on the 4th of May.",
    new Error("provider down"),
    () => simulateReadableStream({
      chunks: [
        { type: "stream-start", warnings: [] },
        { type: "text-start", id: "t0" },
        { type: "text-delta", id: "t0", delta: "Half a rep" },
        { type: "error", error: new Error("overloaded") },
      ],
    }),
    () => {
      const parts = [{ type: "stream-start", warnings: [] }, { type: "text-start", id: "t0" }, { type: "text-delta", id: "t0", delta: "Cut off" }];
      return new ReadableStream({
        pull(controller) {
          if (parts.length > 0) controller.enqueue(parts.shift());
          else controller.error(new Error("connection reset"));
        },
      });
    },
  ]);
  const wrapped = wrapLanguageModel({
    model,
    middleware: memoryMiddleware({
      memory: mem,
      scope,
      budgetTokens: 300,
      onInject: (injection) => injections.push(injection),
    }),
  });

  const history = [];
  async function turn(how, text) {
    history.push({ role: "user", content: text });
    if (how === "generate") {
      const result = await generateText({ model: wrapped, system: "You are a friendly assistant.", messages: history, maxRetries: 0 });
      history.push({ role: "assistant", content: result.text });
      return result.text;
    }
    const result = streamText({ model: wrapped, system: "You are a friendly assistant.", messages: history, maxRetries: 0 });
    const reply = await result.text;
    history.push({ role: "assistant", content: reply });
    return reply;
  }

  const observed = {};
  observed.firstReply = await turn("generate", "My dog Pixel is a greyhound who loves the beach.");
  observed.afterFirst = (await mem.list({ scope })).items.map(({ text, role }) => ({ text, role }));
  observed.firstSystem = systemOf(prompts[0]);

  observed.secondReply = await turn("generate", "Which breed is Pixel?");
  observed.secondSystem = systemOf(prompts[1]);
  observed.secondInjection = injections.at(-1);
  observed.firstMemoryIds = (await mem.list({ scope })).items.filter((i) => i.text.startsWith("My dog Pixel")).map((i) => i.id);

  observed.thirdReply = await turn("stream", "Pixel's birthday is the 4th of May, remember it.");
  observed.itemsAfterStream = await count(mem);
  observed.streamedMemory = (await mem.retrieve({ text: "Pixel birthday", scope, dryRun: true }))
    .map((h) => ({ text: h.item.text, role: h.item.role }));

  // Failures: nothing is ingested.
  const before = await count(mem);
  observed.generateFailure = await generateText({ model: wrapped, prompt: "Remember that I hate rain.", maxRetries: 0 })
    .then(() => "resolved", (e) => String(e?.message ?? e));
  observed.afterGenerateFailure = (await count(mem)) - before;

  const errored = streamText({ model: wrapped, prompt: "Remember that I like snow.", maxRetries: 0, onError: ({ error }) => failures.push(String(error?.message ?? error)) });
  for await (const part of errored.fullStream) void part;
  observed.streamErrorReported = failures.slice();
  observed.afterStreamError = (await count(mem)) - before;

  // A stream that breaks off, read straight from the wrapped model: AI SDK 6's
  // streamText leaves such an error unhandled (the process would exit on it).
  const { stream } = await wrapped.doStream({ prompt: [{ role: "user", content: [{ type: "text", text: "Remember that I like hail." }] }] });
  const reader = stream.getReader();
  observed.streamBreakReported = await (async () => {
    try {
      for (;;) if ((await reader.read()).done) return "ended";
    } catch (error) {
      return String(error?.message ?? error);
    }
  })();
  observed.afterStreamBreak = (await count(mem)) - before;

  return observed;
}
