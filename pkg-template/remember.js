// `remember(messages, { scope, extractor })`: extraction with the app's own
// model (docs/memory-model.md, "Extraction"). The memories related to the
// conversation are retrieved within the scope, the extractor is asked what
// to do with them, and its operations are checked and applied by the core
// in one commit (`applyOperations`): a malformed or out-of-bounds answer is
// `INVALID_OPERATIONS` and changes nothing. The core calls no model; this
// file only gathers the inputs and passes the answer on.
import { MemtideError } from "./error.js";

const invalid = (message) => new MemtideError(`invalid input: ${message}`, "INVALID_INPUT");
const badOperations = (message) => new MemtideError(`invalid operations: ${message}`, "INVALID_OPERATIONS");

// The conversation text a query uses is its end: the last turns say what
// the memories to revisit are about, and a query stays far below the
// core's text limit.
const QUERY_CHARS = 4000;

/** The text of one chat message (string content, or its text parts), any of the shapes `ingestMessages` takes. */
export function messageText(message) {
  const content = message?.content ?? message?.parts;
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content
    .filter((part) => (part?.type === "text" || part?.type === undefined) && typeof part?.text === "string")
    .map((part) => part.text)
    .join("\n");
}

/**
 * Runs `remember` on `memory` (anything with `retrieve` and
 * `applyOperations`: a `Memory` or a `WorkerMemory`).
 */
export async function rememberWith(memory, messages, options) {
  if (!Array.isArray(messages)) throw invalid("messages must be an array");
  if (options === null || typeof options !== "object") throw invalid("options must be an object");
  const { scope, extractor, limit = 10, minRelevance, sessions } = options;
  if (typeof extractor !== "function") throw invalid("extractor must be a function ({ messages, memories }) => operations");
  if (!Number.isInteger(limit) || limit < 0) throw invalid("limit must be a whole number, 0 or more");

  const said = messages
    .map((message) => messageText(message).trim())
    .filter((text) => text !== "")
    .join("\n");
  // Cut at a character, not inside a surrogate pair (a lone half is refused).
  const text = said.slice(-QUERY_CHARS).replace(/^[\uDC00-\uDFFF]/, "");
  let memories = [];
  if (text.trim() !== "" && limit > 0) {
    const query = { text, scope, limit, dryRun: true };
    if (minRelevance !== undefined) query.minRelevance = minRelevance;
    if (sessions !== undefined) query.sessions = sessions;
    const hits = await memory.retrieve(query);
    // Chunks of files change with their file, not by an extractor.
    memories = hits.filter(({ item }) => item.sourceLines === undefined).map(({ item }) => {
      const shown = { id: item.id, text: item.text, kind: item.kind, createdAt: item.createdAt };
      if (item.key !== undefined) shown.key = item.key;
      return shown;
    });
  }

  const answer = await extractor({ messages, memories, scope });
  let reply;
  if (typeof answer === "string") reply = answer;
  else if (answer !== null && typeof answer === "object") reply = JSON.stringify(answer);
  else throw badOperations("the extractor must return operations (an array or object) or the model's reply text");
  const result = await memory.applyOperations({ scope, allowed: memories.map((m) => m.id), reply });
  return { ...result, memories };
}
