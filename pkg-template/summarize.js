// `memory.summarize({ scope, session?, summarizer })`: the summary of a
// scope or session, written by the app's own model. The core gathers what
// the summarizer reads (`summaryContext`) and stores its text linked to its
// sources, replacing the scope's previous summary (`storeSummary`); this
// file only calls the app's function between the two.
import { MemtideError } from "./error.js";

const invalid = (message) => new MemtideError(`invalid input: ${message}`, "INVALID_INPUT");

function aborted(signal) {
  if (signal?.aborted) throw new MemtideError("aborted: summarize was aborted", "ABORTED");
}

/** The scope a summary belongs to: `scope`, narrowed to `session` when given. */
function summaryScope(scope, session) {
  if (scope === null || typeof scope !== "object") throw invalid("scope must be an object");
  if (session === undefined) return scope;
  if (typeof session !== "string") throw invalid("session must be a string");
  if (scope.sessionId !== undefined && scope.sessionId !== session) {
    throw invalid("session and scope.sessionId name different sessions");
  }
  return { ...scope, sessionId: session };
}

/** What a summarizer returned, as `{text, sources?}`, or null for "keep the summary as it is". */
function summaryOf(output) {
  if (output === null || output === undefined) return null;
  if (typeof output === "string") return { text: output };
  if (typeof output === "object" && typeof output.text === "string") {
    if (output.sources !== undefined && !(Array.isArray(output.sources) && output.sources.every((s) => typeof s === "string"))) {
      throw invalid("the summarizer's sources must be an array of memory ids");
    }
    return { text: output.text, sources: output.sources };
  }
  throw invalid("the summarizer must return a string, {text, sources?}, or null");
}

/**
 * Summarizes a scope with the app's `summarizer`; resolves to the stored
 * summary, or `null` when the scope holds nothing to summarize or the
 * summarizer returned null (no model call in the first case, no change in
 * either).
 */
export async function summarize(core, options) {
  if (options === null || typeof options !== "object") throw invalid("options must be an object");
  const { scope, session, summarizer, limit, includePii, signal } = options;
  if (typeof summarizer !== "function") throw invalid("summarizer must be a function");
  const target = summaryScope(scope, session);
  aborted(signal);
  const { memories, previous } = await core.summaryContext({ scope: target, limit, includePii });
  if (memories.length === 0) return null;
  const summary = summaryOf(await summarizer({ memories, previous, scope: target, signal }));
  aborted(signal);
  if (summary === null) return null;
  return core.storeSummary({
    scope: target,
    text: summary.text,
    sources: summary.sources ?? memories.map((m) => m.id),
  });
}
