// Types of `memtide/ai-sdk`: memory for the Vercel AI SDK (6.x) as a
// language model middleware.
import type { LanguageModel, LanguageModelMiddleware } from "ai";
import type { Extractor, InjectQuery, Injection, Memory, MessageOptions, RememberResult, Scope, Summarizer } from "./index.js";

/** The call parameters the AI SDK hands a middleware (`LanguageModelV3CallOptions`). */
export type CallParams = Parameters<NonNullable<LanguageModelMiddleware["transformParams"]>>[0]["params"];

export interface MemoryMiddlewareOptions {
  /** An open store. */
  memory: Memory;
  /** Where memories are read and written: a scope, or a function of the call's params returning one. */
  scope: Scope | ((params: CallParams) => Scope | Promise<Scope>);
  /** Most tokens the injected block may take (default 1000). */
  budgetTokens?: number;
  /** The block's format (default Markdown). */
  format?: InjectQuery["format"];
  /** The block's instruction line ("" for none). */
  preamble?: string;
  /** Leave out memories less relevant than this (default 0.3). */
  minRelevance?: number;
  /** Most retrieved (non-pinned) candidates (default 20). */
  limit?: number;
  /**
   * What to ingest after a completed call: `false` for nothing, or the
   * `ingestMessages` options besides `scope` (default: the text the user
   * and the assistant said).
   */
  ingest?: false | Omit<MessageOptions, "scope">;
  /** Told of every block injected, with its citations (`[m1]` → memory id). */
  onInject?: (injection: Injection) => void | Promise<void>;
  /**
   * When given, a failure of memtide (retrieval, ingest) is reported here
   * and the call goes on without memory; without it the call fails.
   */
  onError?: (error: unknown) => void | Promise<void>;
  /**
   * When given, a completed turn goes to `memory.remember` with this
   * extractor (for example `modelExtractor(model)`) instead of being
   * ingested as said: the model adds, updates (supersedes) or deletes
   * memories. Default none.
   */
  extractor?: Extractor;
  /** Told what each `remember` of the extractor did. */
  onRemember?: (result: RememberResult) => void | Promise<void>;
}

export interface ModelExtractorOptions {
  /** The app's own rules, appended to memtide's prompt. */
  instructions?: string;
  /** Default 0. */
  temperature?: number;
  /** Default 1024. */
  maxOutputTokens?: number;
  /** Passed to the model call as is. */
  providerOptions?: Record<string, Record<string, unknown>>;
  /** Told each raw reply of the model. */
  onReply?: (text: string) => void | Promise<void>;
}

/** The system prompt `modelExtractor` uses (printed in docs/integrations/ai-sdk.md). */
export const EXTRACTION_PROMPT: string;

/**
 * An extractor for `remember` over an AI SDK language model object: asks
 * it, with {@link EXTRACTION_PROMPT}, for the operations to apply and
 * returns its reply, which memtide parses (a malformed reply is
 * `INVALID_OPERATIONS` and changes nothing).
 */
export function modelExtractor(model: Exclude<LanguageModel, string>, options?: ModelExtractorOptions): Extractor;

/**
 * The middleware: `transformParams` puts the memories relevant to the last
 * user message into the system prompt within the budget; `wrapGenerate` and
 * `wrapStream` ingest the user's message and the assistant's reply once the
 * reply is complete (a stream when it finished without an error). A failed
 * call ingests nothing.
 */
export function memoryMiddleware(options: MemoryMiddlewareOptions): LanguageModelMiddleware;

export interface ModelSummarizerOptions {
  /** The summary's length the prompt asks for, in words (default 150). */
  maxWords?: number;
  /** The model's output limit (default 400 tokens). */
  maxOutputTokens?: number;
  /** The newest memories whose prompt lines fit in this many characters (default 24,000); they are the summary's sources. */
  maxInputChars?: number;
  /** Default 0. */
  temperature?: number;
  /** A system prompt of the app's own instead of memtide's (`summaryInstructions`). */
  instructions?: string;
}

/**
 * A summarizer for `memory.summarize` over an AI SDK language model: one
 * `doGenerate` call with memtide's prompt (docs/integrations/ai-sdk.md,
 * "Summaries"). Pass the bare model, not one wrapped in `memoryMiddleware`.
 */
export function modelSummarizer(model: Exclude<LanguageModel, string>, options?: ModelSummarizerOptions): Summarizer;

/** memtide's system prompt for summaries of at most `maxWords` words. */
export function summaryInstructions(maxWords: number): string;
