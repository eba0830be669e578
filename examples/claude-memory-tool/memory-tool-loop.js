// Claude's memory tool (`memory_20250818`) backed by memtide, in a tool-use
// loop: one user turn of a conversation with the Anthropic Messages API.
//
// - Before the first request, memtide's `inject()` finds what is relevant to
//   the user's message and its cited block is added to the system prompt.
// - The request declares the memory tool; every `tool_use` block named
//   `memory` the model sends is run by `memory.memoryTool(scope, input)` and
//   answered with a `tool_result` (`is_error` from `isError`), until the
//   response's `stop_reason` is not `tool_use`.
//
// The module does no I/O of its own: the caller passes the memtide `Memory`
// and a function that sends one Messages API request and resolves to its
// response (`fetch` to your backend, the Anthropic SDK, or a scripted fake
// in tests), so it runs unchanged in a browser tab, a worker, Node or Deno.
// See README.md beside this file.

/** The memory tool as the request declares it. */
export const MEMORY_TOOL = Object.freeze({ type: "memory_20250818", name: "memory" });

/** The plain text of a message's `content` (a string or content blocks). */
export function textOf(content) {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content
    .filter((block) => block?.type === "text" && typeof block.text === "string")
    .map((block) => block.text)
    .join("\n");
}

/** `system` (a string or text blocks) with `block` appended. */
function withMemories(system, block) {
  if (!block) return system;
  if (Array.isArray(system)) return [...system, { type: "text", text: block }];
  return system ? `${system}\n\n${block}` : block;
}

/**
 * Runs one user turn: injects the relevant memories into the system prompt,
 * then calls the Messages API and runs the model's memory tool calls until
 * it stops asking for tools.
 *
 * @param {object} options
 * @param {import("memtide").Memory} options.memory The memtide store.
 * @param {import("memtide").Scope} options.scope Whose memories: the
 *   `/memories` directory and the injected memories are this scope's.
 * @param {(request: object) => Promise<object>} options.createMessage Sends
 *   one Messages API request and resolves to the response object.
 * @param {object} options.request The request without the memory tool:
 *   `model`, `max_tokens`, `messages` (ending with the user's message),
 *   optionally `system`, other `tools` and any other field, sent as given.
 * @param {number} [options.budgetTokens=1000] Most tokens of injected
 *   memories; 0 injects nothing.
 * @param {(block: object) => Promise<{content: string, isError?: boolean} | undefined>} [options.onToolUse]
 *   Runs a `tool_use` block of the caller's other tools; a block it
 *   resolves `undefined` for (or every one, without it) gets an error
 *   result naming the unknown tool.
 * @param {number} [options.maxRequests=16] Most Messages API requests in
 *   this turn; a model still calling tools after that is an error.
 * @returns {Promise<{response: object, messages: object[], injected: string[]}>}
 *   The final response, the conversation with every assistant message and
 *   tool result of the turn appended (send it as `messages` next turn), and
 *   the ids of the memories injected.
 */
export async function runTurn({
  memory,
  scope,
  createMessage,
  request,
  budgetTokens = 1000,
  onToolUse,
  maxRequests = 16,
}) {
  const messages = [...request.messages];
  const question = textOf(messages.at(-1)?.content);
  let system = request.system;
  let injected = [];
  if (question.trim() && budgetTokens > 0) {
    const { block, used } = await memory.inject({ text: question, scope, budgetTokens });
    system = withMemories(system, block);
    injected = used;
  }
  const tools = [...(request.tools ?? []).filter((tool) => tool.name !== MEMORY_TOOL.name), MEMORY_TOOL];

  for (let sent = 0; sent < maxRequests; sent++) {
    const response = await createMessage({
      ...request,
      ...(system === undefined ? {} : { system }),
      tools,
      messages,
    });
    messages.push({ role: "assistant", content: response.content });
    if (response.stop_reason !== "tool_use") return { response, messages, injected };

    const results = [];
    for (const block of response.content) {
      if (block.type !== "tool_use") continue;
      const result = block.name === MEMORY_TOOL.name
        ? await memory.memoryTool(scope, block.input)
        : await onToolUse?.(block);
      const { content, isError = false } = result ??
        { content: `Error: no tool named ${block.name} is available`, isError: true };
      results.push({ type: "tool_result", tool_use_id: block.id, content, is_error: isError });
    }
    messages.push({ role: "user", content: results });
  }
  throw new Error(`the model was still calling tools after ${maxRequests} requests`);
}
