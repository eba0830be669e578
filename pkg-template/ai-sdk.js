// `memtide/ai-sdk`: memory for the Vercel AI SDK as a language model
// middleware (`wrapLanguageModel({ model, middleware: memoryMiddleware(…) })`).
//
// Before a call, the memories relevant to the last user message go into the
// system prompt as memtide's cited block, within a token budget. After a
// call that completed (a generate that resolved, a stream that finished
// without an error part or error), the user's message and the assistant's
// reply are ingested as a conversation (`ingestMessages`), so the next turn
// can recall them. A call that fails ingests nothing.
//
// With an `extractor` (`modelExtractor(model)` below, or any function of
// `remember`), a completed turn goes through `remember` instead: the app's
// model decides what to add, update or delete, and raw turns are not stored.
//
// The middleware is a plain object of the AI SDK's middleware specification
// (`specificationVersion: "v3"`, AI SDK 6); it imports nothing from `ai`.
import { MemtideError } from "./memory.js";
import { EXTRACTION_PROMPT, extractionRequest } from "./extraction-prompt.js";

export { EXTRACTION_PROMPT };

const invalid = (message) => new MemtideError(`invalid input: ${message}`, "INVALID_INPUT");

/** The text of a prompt message's text parts (AI SDK `ModelMessage` content). */
function textOf(message) {
  if (typeof message.content === "string") return message.content;
  if (!Array.isArray(message.content)) return "";
  return message.content
    .filter((part) => part?.type === "text" && typeof part.text === "string")
    .map((part) => part.text)
    .join("\n");
}

/** The prompt with `block` appended to its system message (one is added first when it has none). */
function withSystem(prompt, block) {
  const first = prompt[0];
  if (first?.role === "system" && typeof first.content === "string") {
    const content = first.content.trim() === "" ? block : `${first.content}\n\n${block}`;
    return [{ ...first, content }, ...prompt.slice(1)];
  }
  return [{ role: "system", content: block }, ...prompt];
}

/**
 * The memory middleware. Options: `memory` (an open `Memory`), `scope` (a
 * scope, or a function of the call's params returning one, for a server
 * serving many users), `budgetTokens` (default 1000), `format`, `preamble`,
 * `minRelevance`, `limit` (as `inject` takes them), `ingest` (`false`, or
 * the `ingestMessages` options besides the scope: `include`, `roles`,
 * `speakers`, `tags`, `kind`…), `onInject(injection)` (told of every block
 * injected, with its citations), `onError(error)` (when given, a failure of
 * memtide is reported there and the call goes on without memory; without
 * it the call fails), `extractor` (a `remember` extractor such as
 * `modelExtractor(model)`: a completed turn is passed to `remember` instead
 * of being ingested; default none), `onRemember(result)` (told what each
 * `remember` did).
 */
export function memoryMiddleware(options) {
  if (options === null || typeof options !== "object") throw invalid("options must be an object");
  const {
    memory,
    scope,
    budgetTokens = 1000,
    format,
    preamble,
    minRelevance,
    limit,
    ingest = {},
    onInject,
    onError,
    extractor,
    onRemember,
  } = options;
  if (!memory || typeof memory.inject !== "function" || typeof memory.ingestMessages !== "function") {
    throw invalid("memory must be an open memtide Memory");
  }
  if (scope === null || (typeof scope !== "object" && typeof scope !== "function")) {
    throw invalid("scope must be a scope object or a function returning one");
  }
  if (ingest !== false && (ingest === null || typeof ingest !== "object" || "scope" in ingest)) {
    throw invalid("ingest must be false or the ingestMessages options without `scope`");
  }
  if (extractor !== undefined && typeof memory.remember !== "function") {
    throw invalid("memory must be an open memtide Memory (with remember) to use an extractor");
  }
  for (const [name, value] of [["onInject", onInject], ["onError", onError], ["extractor", extractor], ["onRemember", onRemember]]) {
    if (value !== undefined && typeof value !== "function") throw invalid(`${name} must be a function`);
  }

  const scopeFor = async (params) => (typeof scope === "function" ? await scope(params) : scope);

  /** Runs a memtide step; with `onError`, a failure is reported and `fallback` returned. */
  async function guarded(step, fallback) {
    try {
      return await step();
    } catch (error) {
      if (!onError) throw error;
      await onError(error);
      return fallback;
    }
  }

  /**
   * Stores the turn: the new user message (when the prompt ends with one)
   * and the reply, ingested, or passed to `remember` with the extractor.
   */
  async function remember(params, content) {
    if (ingest === false && extractor === undefined) return;
    const messages = [];
    const last = params.prompt.at(-1);
    if (last?.role === "user") messages.push(last);
    if (content.length > 0) messages.push({ role: "assistant", content });
    if (messages.length === 0) return;
    await guarded(async () => {
      const scope = await scopeFor(params);
      if (extractor === undefined) {
        await memory.ingestMessages(messages, { ...ingest, scope });
        return;
      }
      const result = await memory.remember(messages, { scope, extractor });
      if (onRemember) await onRemember(result);
    });
  }

  return {
    specificationVersion: "v3",

    async transformParams({ params }) {
      const lastUser = params.prompt.findLast((message) => message.role === "user");
      const text = lastUser ? textOf(lastUser) : "";
      if (text.trim() === "") return params;
      const injection = await guarded(async () => {
        const query = { text, scope: await scopeFor(params), budgetTokens };
        if (format !== undefined) query.format = format;
        if (preamble !== undefined) query.preamble = preamble;
        if (minRelevance !== undefined) query.minRelevance = minRelevance;
        if (limit !== undefined) query.limit = limit;
        return memory.inject(query);
      });
      if (!injection || injection.used.length === 0) return params;
      if (onInject) await onInject(injection);
      return { ...params, prompt: withSystem(params.prompt, injection.block) };
    },

    async wrapGenerate({ doGenerate, params }) {
      const result = await doGenerate();
      await remember(params, result.content ?? []);
      return result;
    },

    async wrapStream({ doStream, params }) {
      const { stream, ...rest } = await doStream();
      // The reply as it streams: text and reasoning by part id, tool calls whole.
      const content = [];
      const open = new Map();
      let failed = false;
      const collect = new TransformStream({
        transform(part, controller) {
          switch (part.type) {
            case "text-start":
            case "reasoning-start": {
              const entry = { type: part.type === "text-start" ? "text" : "reasoning", text: "" };
              open.set(`${entry.type}:${part.id}`, entry);
              content.push(entry);
              break;
            }
            case "text-delta":
            case "reasoning-delta": {
              const kind = part.type === "text-delta" ? "text" : "reasoning";
              let entry = open.get(`${kind}:${part.id}`);
              if (!entry) {
                entry = { type: kind, text: "" };
                open.set(`${kind}:${part.id}`, entry);
                content.push(entry);
              }
              entry.text += part.delta ?? "";
              break;
            }
            case "tool-call":
              content.push({ type: "tool-call", toolCallId: part.toolCallId, toolName: part.toolName, input: part.input });
              break;
            case "error":
              failed = true;
              break;
            default:
              break;
          }
          controller.enqueue(part);
        },
        async flush(controller) {
          if (failed) return;
          try {
            await remember(params, content.filter((part) => part.type !== "text" || part.text !== ""));
          } catch (error) {
            controller.error(error);
          }
        },
      });
      return { stream: stream.pipeThrough(collect), ...rest };
    },
  };
}

/**
 * An extractor for `remember` (and the middleware's `extractor`) over any
 * AI SDK language model object (`LanguageModelV3`, or V2): it asks the model,
 * with memtide's extraction prompt (`EXTRACTION_PROMPT`, documented in
 * docs/integrations/ai-sdk.md), for the operations to apply, and returns the
 * model's reply for the core to parse (a code fence or prose around the JSON
 * is fine; anything else is `INVALID_OPERATIONS`). Options: `instructions`
 * (the app's own rules, appended to the prompt), `temperature` (default 0),
 * `maxOutputTokens` (default 1024), `providerOptions`, `onReply(text)` (told
 * each raw reply, for logging).
 */
export function modelExtractor(model, options = {}) {
  if (!model || typeof model !== "object" || typeof model.doGenerate !== "function") {
    throw invalid("model must be an AI SDK language model object (with doGenerate)");
  }
  if (options === null || typeof options !== "object") throw invalid("options must be an object");
  const { instructions, temperature = 0, maxOutputTokens = 1024, providerOptions, onReply } = options;
  if (instructions !== undefined && typeof instructions !== "string") throw invalid("instructions must be a string");
  if (onReply !== undefined && typeof onReply !== "function") throw invalid("onReply must be a function");
  return async ({ messages, memories }) => {
    const call = {
      prompt: extractionRequest(messages, memories, instructions),
      temperature,
      maxOutputTokens,
      responseFormat: { type: "json" },
    };
    if (providerOptions !== undefined) call.providerOptions = providerOptions;
    const result = await model.doGenerate(call);
    const text = (result?.content ?? [])
      .filter((part) => part?.type === "text" && typeof part.text === "string")
      .map((part) => part.text)
      .join("");
    if (onReply) await onReply(text);
    return text;
  };
}
export { modelSummarizer, summaryInstructions } from "./ai-sdk-summarizer.js";
