// The summarizer of `memtide/ai-sdk`: `memory.summarize`'s `summarizer`
// over an AI SDK language model (a `LanguageModelV3`: any provider's model
// object, or `MockLanguageModelV3`). It calls the model's `doGenerate` once
// with the prompt documented in full in docs/integrations/ai-sdk.md
// ("Summaries"), and imports nothing from `ai`.
import { MemtideError } from "./error.js";

const invalid = (message) => new MemtideError(`invalid input: ${message}`, "INVALID_INPUT");

/** The system prompt, for summaries of at most `maxWords` words. */
export function summaryInstructions(maxWords) {
  return [
    "You write the summary an assistant keeps in its long-term memory of a conversation with a user.",
    "You are given the memories to summarize, oldest first, one per line as `[date speaker] text`, and the previous summary when there is one.",
    `Write one summary in plain prose of at most ${maxWords} words that keeps what a later conversation needs:`,
    "decisions made, facts about the user and the people, places and things they mention, preferences, plans with their dates, and open questions.",
    "Use the names and absolute dates the memories use. State only what the memories or the previous summary state; when a memory contradicts an earlier one, keep the later.",
    "Do not address the user, do not mention memories, lines or these instructions, and answer with the summary text only.",
  ].join("\n");
}

/** One memory as a line of the prompt: `[date speaker] text`. */
function line(memory) {
  const who = memory.speaker ?? memory.role;
  const date = typeof memory.createdAt === "string" ? memory.createdAt.slice(0, 10) : "";
  const label = [date, who].filter(Boolean).join(" ");
  return `[${label}] ${memory.text.replace(/\s+/g, " ")}`;
}

/**
 * A summarizer over an AI SDK language model. Options: `maxWords` (the
 * summary's length the prompt asks for, default 150), `maxOutputTokens`
 * (default 400), `maxInputChars` (the newest memories whose lines fit,
 * default 24,000; the summary's sources are those), `temperature`
 * (default 0), `instructions` (a system prompt of the app's own instead of
 * memtide's).
 */
export function modelSummarizer(model, options = {}) {
  if (!model || typeof model !== "object" || typeof model.doGenerate !== "function") {
    throw invalid("model must be an AI SDK language model object (with doGenerate)");
  }
  if (options === null || typeof options !== "object") throw invalid("options must be an object");
  const { maxWords = 150, maxOutputTokens = 400, maxInputChars = 24_000, temperature = 0, instructions } = options;
  for (const [name, value] of [["maxWords", maxWords], ["maxOutputTokens", maxOutputTokens], ["maxInputChars", maxInputChars]]) {
    if (!Number.isInteger(value) || value < 1) throw invalid(`${name} must be a positive integer`);
  }
  if (instructions !== undefined && typeof instructions !== "string") throw invalid("instructions must be a string");
  const system = instructions ?? summaryInstructions(maxWords);

  return async function summarizer({ memories, previous, signal }) {
    // The newest memories that fit, in conversation order.
    const lines = [];
    const sources = [];
    let size = 0;
    for (let i = memories.length - 1; i >= 0; i -= 1) {
      const text = line(memories[i]);
      if (size + text.length + 1 > maxInputChars && lines.length > 0) break;
      lines.push(text);
      sources.push(memories[i].id);
      size += text.length + 1;
    }
    lines.reverse();
    const prompt = [
      `Previous summary:\n${previous ? previous.text : "(none)"}`,
      `Memories:\n${lines.join("\n")}`,
    ].join("\n\n");
    const result = await model.doGenerate({
      prompt: [
        { role: "system", content: system },
        { role: "user", content: [{ type: "text", text: prompt }] },
      ],
      maxOutputTokens,
      temperature,
      abortSignal: signal,
    });
    const text = (result.content ?? [])
      .filter((part) => part?.type === "text" && typeof part.text === "string")
      .map((part) => part.text)
      .join("")
      .trim();
    if (text === "") throw invalid("the model returned no summary text");
    return { text, sources };
  };
}
