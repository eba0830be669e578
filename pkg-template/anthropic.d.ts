// Types of memtide/anthropic: Claude's memory tool backed by memtide, in a
// tool-use loop over the Anthropic Messages API. The message shapes are the
// parts of the Messages API the loop reads and writes; other fields pass
// through unchanged.
import type { Memory, Scope } from "./index.js";

/** The memory tool as the request declares it. */
export declare const MEMORY_TOOL: Readonly<{ type: "memory_20250818"; name: "memory" }>;

/** A text block of a message or of `system`. */
export interface TextBlock {
  type: "text";
  text: string;
  [field: string]: unknown;
}

/** A tool call of the model. */
export interface ToolUseBlock {
  type: "tool_use";
  id: string;
  name: string;
  input: unknown;
  [field: string]: unknown;
}

/** The answer to a tool call. */
export interface ToolResultBlock {
  type: "tool_result";
  tool_use_id: string;
  content: string;
  is_error: boolean;
}

/** Any content block (images, thinking… pass through). */
export type ContentBlock = TextBlock | ToolUseBlock | ToolResultBlock | { type: string; [field: string]: unknown };

/** A message of the conversation. */
export interface MessageParam {
  role: "user" | "assistant";
  content: string | ContentBlock[];
}

/** A Messages API request as the loop sends it. */
export interface MessageRequest {
  model: string;
  max_tokens: number;
  messages: MessageParam[];
  system?: string | TextBlock[];
  tools?: { name: string; [field: string]: unknown }[];
  [field: string]: unknown;
}

/** A Messages API response: what the loop reads of it. */
export interface MessageResponse {
  content: ContentBlock[];
  stop_reason: string | null;
  [field: string]: unknown;
}

export interface RunTurnOptions {
  /** The memtide store. */
  memory: Memory;
  /** Whose memories: the `/memories` directory and the injected memories are this scope's. */
  scope: Scope;
  /** Sends one Messages API request and resolves to the response object. */
  createMessage: (request: MessageRequest) => Promise<MessageResponse>;
  /**
   * The request without the memory tool: `model`, `max_tokens`, `messages`
   * (ending with the user's message), optionally `system`, other `tools` and
   * any other field, sent as given.
   */
  request: MessageRequest;
  /** Most tokens of injected memories (default 1000); 0 injects nothing. */
  budgetTokens?: number;
  /**
   * Runs a `tool_use` block of the caller's other tools; a block it resolves
   * `undefined` for (or every one, without it) gets an error result naming
   * the unknown tool.
   */
  onToolUse?: (block: ToolUseBlock) => Promise<{ content: string; isError?: boolean } | undefined>;
  /** Most Messages API requests in this turn (default 16); a model still calling tools after that is an error. */
  maxRequests?: number;
}

export interface Turn {
  /** The final response. */
  response: MessageResponse;
  /** The conversation with every assistant message and tool result of the turn appended: send it as `messages` next turn. */
  messages: MessageParam[];
  /** The ids of the memories injected into the system prompt. */
  injected: string[];
}

/**
 * Runs one user turn: injects the relevant memories into the system prompt,
 * then calls the Messages API and runs the model's memory tool calls until it
 * stops asking for tools. Rejects with a `TypeError` for bad options (before
 * any request), with what `createMessage` or the store rejects with, or when
 * the model still calls tools after `maxRequests` requests.
 */
export declare function runTurn(options: RunTurnOptions): Promise<Turn>;

/** The plain text of a message's `content` (a string or content blocks). */
export declare function textOf(content: MessageParam["content"] | undefined): string;
