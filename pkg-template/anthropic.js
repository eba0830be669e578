// memtide/anthropic: Claude's memory tool (`memory_20250818`) backed by
// memtide, in a tool-use loop over the Anthropic Messages API.
//
// - Before the first request, memtide's `inject()` finds what is relevant to
//   the user's message and its cited block is added to the system prompt.
// - The request declares the memory tool; every `tool_use` block named
//   `memory` the model sends is run by `memory.memoryTool(scope, input)` and
//   answered with a `tool_result` (`is_error` from `isError`), until the
//   response's `stop_reason` is not `tool_use`.
//
// No I/O of its own and no dependency: the caller passes the memtide
// `Memory` and a function that sends one Messages API request and resolves
// to its response (`fetch` to a backend, the Anthropic SDK, or a scripted
// fake in tests), so it runs unchanged in a browser tab, a worker, Node,
// Deno or workerd. Types: anthropic.d.ts; guide: docs/integrations/anthropic.md.

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

/** Refuses options a caller got wrong before anything is sent. */
function check({ memory, scope, createMessage, request, budgetTokens, maxRequests }) {
  const fail = (message) => { throw new TypeError(`runTurn: ${message}`); };
  if (typeof memory?.inject !== "function" || typeof memory?.memoryTool !== "function") {
    fail("`memory` must be a memtide Memory");
  }
  if (typeof scope?.userId !== "string" || typeof scope?.workspaceId !== "string") {
    fail("`scope` must be a memtide Scope ({userId, workspaceId, …})");
  }
  if (typeof createMessage !== "function") fail("`createMessage` must be a function");
  if (!Array.isArray(request?.messages) || request.messages.length === 0) {
    fail("`request.messages` must be a non-empty array");
  }
  if (!Number.isInteger(budgetTokens) || budgetTokens < 0) fail("`budgetTokens` must be a non-negative integer");
  if (!Number.isInteger(maxRequests) || maxRequests < 1) fail("`maxRequests` must be a positive integer");
}

/**
 * Runs one user turn: injects the relevant memories into the system prompt,
 * then calls the Messages API and runs the model's memory tool calls until
 * it stops asking for tools. See anthropic.d.ts.
 */
export async function runTurn(options) {
  const {
    memory,
    scope,
    createMessage,
    request,
    budgetTokens = 1000,
    onToolUse,
    maxRequests = 16,
  } = options ?? {};
  check({ memory, scope, createMessage, request, budgetTokens, maxRequests });
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
