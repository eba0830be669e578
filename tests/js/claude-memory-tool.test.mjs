// memtide/anthropic (the tool-use loop of examples/claude-memory-tool/)
// driven by a scripted fake of the
// Anthropic Messages API (no network, no API key): its requests declare the
// memory tool and carry the injected memories, each memory tool call the
// fake model makes is run by memtide and answered with a tool_result, and what
// the model wrote ends up stored, retrievable and injected in a later
// conversation, also after a reopen. Run: node --test tests/js/
import { test } from "node:test";
import assert from "node:assert/strict";

import { Memory } from "../../dist/memtide/node.js";
import { MEMORY_TOOL, runTurn, textOf } from "../../dist/memtide/anthropic.js";
import { typeErrors } from "./typecheck.mjs";

const alice = { userId: "alice", workspaceId: "chat" };
const listing = "Here're the files and directories up to 2 levels deep in /memories, excluding hidden items and node_modules:";

/**
 * A fake Messages API: each step checks the request it gets and returns the
 * response the real API would (same shapes). Records every request (deep
 * copies: the loop keeps appending to its messages).
 */
function scriptedApi(steps) {
  const requests = [];
  const createMessage = async (request) => {
    requests.push(structuredClone(request));
    const step = steps[requests.length - 1];
    assert.ok(step, `unexpected request #${requests.length}`);
    return step(request);
  };
  return { createMessage, requests };
}

let nextId = 1;
const toolUse = (input) => ({ type: "tool_use", id: `toolu_${String(nextId++).padStart(2, "0")}`, name: "memory", input });
const response = (stop_reason, content) => ({
  id: `msg_${nextId++}`, type: "message", role: "assistant", model: "claude-sonnet-4-5", content, stop_reason,
  stop_sequence: null, usage: { input_tokens: 10, output_tokens: 10 },
});

/** The tool results the last request carries, by tool_use id. */
function toolResults(request) {
  const last = request.messages.at(-1);
  assert.equal(last.role, "user");
  return Object.fromEntries(last.content.map((r) => {
    assert.equal(r.type, "tool_result");
    return [r.tool_use_id, { content: r.content, is_error: r.is_error }];
  }));
}

test("the loop runs the model's memory tool calls and what it wrote is remembered", async () => {
  const storage = new Map();
  const adapter = {
    get: (k) => storage.get(k) ?? null,
    put: (k, v) => void storage.set(k, v.slice()),
    delete: (k) => void storage.delete(k),
    list: (p) => [...storage.keys()].filter((k) => k.startsWith(p)),
  };
  const memory = await Memory.open({ storage: adapter });

  // Conversation 1: the model checks its memory, saves a preference, fixes
  // it, tries a path outside /memories (refused), then answers.
  const view = toolUse({ command: "view", path: "/memories" });
  const create = toolUse({ command: "create", path: "/memories/preferences.md", file_text: "# Preferences\n- Coffee: cortado\n" });
  const edit = toolUse({ command: "str_replace", path: "/memories/preferences.md", old_str: "cortado", new_str: "cortado, no sugar" });
  const escape = toolUse({ command: "view", path: "/memories/../../etc/passwd" });
  const first = scriptedApi([
    (request) => {
      assert.deepEqual(request.tools, [MEMORY_TOOL]);
      assert.equal(request.system, "You are a helpful assistant.", "nothing to inject yet");
      assert.equal(request.model, "claude-sonnet-4-5");
      assert.equal(request.max_tokens, 1024);
      return response("tool_use", [{ type: "text", text: "Let me check my memory first." }, view]);
    },
    (request) => {
      assert.deepEqual(toolResults(request), { [view.id]: { content: `${listing}\n0B\t/memories`, is_error: false } });
      return response("tool_use", [create]);
    },
    (request) => {
      assert.deepEqual(toolResults(request), {
        [create.id]: { content: "File created successfully at: /memories/preferences.md", is_error: false },
      });
      return response("tool_use", [edit, escape]);
    },
    (request) => {
      assert.deepEqual(toolResults(request), {
        [edit.id]: {
          content: "The memory file has been edited. Here is the snippet showing the change (with line numbers):\n" +
            "     1\t# Preferences\n     2\t- Coffee: cortado, no sugar\n     3\t",
          is_error: false,
        },
        [escape.id]: {
          content: "Error: The path /memories/../../etc/passwd is not allowed: `.` and `..` path segments are not allowed",
          is_error: true,
        },
      });
      return response("end_turn", [{ type: "text", text: "Noted: a cortado, no sugar." }]);
    },
  ]);
  const messages = [{ role: "user", content: "I take my coffee as a cortado, no sugar. Please remember that." }];
  const turn = await runTurn({
    memory, scope: alice, createMessage: first.createMessage,
    request: { model: "claude-sonnet-4-5", max_tokens: 1024, system: "You are a helpful assistant.", messages },
  });
  assert.equal(first.requests.length, 4);
  assert.equal(turn.response.stop_reason, "end_turn");
  assert.equal(textOf(turn.response.content), "Noted: a cortado, no sugar.");
  assert.deepEqual(turn.injected, []);
  assert.deepEqual(turn.messages.map((m) => m.role), ["user", "assistant", "user", "assistant", "user", "assistant", "user", "assistant"]);
  assert.equal(messages.length, 1, "the caller's array is not modified");

  // The file is stored, indexed and cited by path and lines.
  const file = await memory.file({ scope: alice, path: "/memories/preferences.md" });
  assert.equal(file.content, "# Preferences\n- Coffee: cortado, no sugar\n");
  const [hit] = await memory.retrieve({ text: "how does alice take her coffee", scope: alice });
  assert.equal(hit.item.source.ref, "/memories/preferences.md");
  assert.deepEqual(hit.item.sourceLines, { start: 1, end: 2 });
  assert.equal(await memory.file({ scope: { userId: "bob", workspaceId: "chat" }, path: "/memories/preferences.md" }), null);
  await memory.close();

  // Conversation 2, after a reopen: the memory is injected into the system
  // prompt before the model asks for anything, with its file citation; the
  // model also reads the file through the tool.
  const reopened = await Memory.open({ storage: adapter });
  const read = toolUse({ command: "view", path: "/memories/preferences.md" });
  const second = scriptedApi([
    (request) => {
      const system = request.system;
      assert.ok(Array.isArray(system), "a system given as blocks stays blocks");
      assert.deepEqual(system[0], { type: "text", text: "Be brief." });
      const block = system[1].text;
      assert.match(block, /^<memories>\n/);
      assert.ok(block.includes("- [m1] [/memories/preferences.md#L1-L2]"), block);
      assert.ok(block.includes("cortado, no sugar"));
      const other = request.tools.find((t) => t.name === "clock");
      assert.ok(other, "the caller's tools are kept");
      assert.deepEqual(request.tools.at(-1), MEMORY_TOOL);
      return response("tool_use", [read, { type: "tool_use", id: "toolu_clock", name: "clock", input: {} },
        { type: "tool_use", id: "toolu_nope", name: "web_search_local", input: {} }]);
    },
    (request) => {
      assert.deepEqual(toolResults(request), {
        [read.id]: {
          content: "Here's the content of /memories/preferences.md with line numbers:\n" +
            "     1\t# Preferences\n     2\t- Coffee: cortado, no sugar\n     3\t",
          is_error: false,
        },
        toolu_clock: { content: "09:30", is_error: false },
        toolu_nope: { content: "Error: no tool named web_search_local is available", is_error: true },
      });
      return response("end_turn", [{ type: "text", text: "A cortado, no sugar [/memories/preferences.md#L1-L2]." }]);
    },
  ]);
  const clock = { name: "clock", description: "The time", input_schema: { type: "object", properties: {} } };
  const later = await runTurn({
    memory: reopened, scope: alice, createMessage: second.createMessage, budgetTokens: 300,
    onToolUse: async (block) => (block.name === "clock" ? { content: "09:30" } : undefined),
    request: {
      model: "claude-sonnet-4-5", max_tokens: 512, system: [{ type: "text", text: "Be brief." }], tools: [clock],
      messages: [{ role: "user", content: [{ type: "text", text: "How do I take my coffee?" }] }],
    },
  });
  assert.equal(second.requests.length, 2);
  assert.deepEqual(later.injected, [hit.item.id]);
  await reopened.close();
});

test("a model that never stops calling tools is cut off", async () => {
  const memory = await Memory.open({ storage: "memory" });
  const api = scriptedApi(Array.from({ length: 3 }, () => () => response("tool_use", [toolUse({ command: "view", path: "/memories" })])));
  await assert.rejects(
    runTurn({ memory, scope: alice, createMessage: api.createMessage, maxRequests: 3,
      request: { model: "claude-sonnet-4-5", max_tokens: 64, messages: [{ role: "user", content: "hi" }] } }),
    /still calling tools after 3 requests/,
  );
  assert.equal(api.requests.length, 3);
  assert.equal(api.requests[0].system, undefined, "no system prompt when there is nothing to inject");
});

test("bad options are a TypeError before any request", async () => {
  const memory = await Memory.open({ storage: "memory" });
  const api = scriptedApi([]);
  const request = { model: "claude-sonnet-4-5", max_tokens: 64, messages: [{ role: "user", content: "hi" }] };
  const base = { memory, scope: alice, createMessage: api.createMessage, request };
  for (const [options, message] of [
    [{ ...base, memory: {} }, /`memory` must be a memtide Memory/],
    [{ ...base, scope: { userId: "alice" } }, /`scope` must be a memtide Scope/],
    [{ ...base, createMessage: "https://api.anthropic.com" }, /`createMessage` must be a function/],
    [{ ...base, request: { ...request, messages: [] } }, /`request.messages` must be a non-empty array/],
    [{ ...base, budgetTokens: -1 }, /`budgetTokens` must be a non-negative integer/],
    [{ ...base, maxRequests: 0 }, /`maxRequests` must be a positive integer/],
    [undefined, /`memory` must be a memtide Memory/],
  ]) {
    await assert.rejects(runTurn(options), (e) => e instanceof TypeError && message.test(e.message));
  }
  assert.equal(api.requests.length, 0);
  assert.equal(textOf([{ type: "text", text: "a" }, { type: "image" }, { type: "text", text: "b" }]), "a\nb");
  assert.equal(textOf(undefined), "");
  await memory.close();
});

test("anthropic.d.ts types a turn as the loop returns it", async () => {
  const { fileURLToPath } = await import("node:url");
  const memory = await Memory.open({ storage: "memory" });
  await memory.ingest({ text: "Alice drinks cortados.", scope: alice });
  const api = scriptedApi([
    () => response("tool_use", [{ type: "text", text: "Checking." }, toolUse({ command: "view", path: "/memories" })]),
    () => response("end_turn", [{ type: "text", text: "A cortado." }]),
  ]);
  const request = { model: "claude-sonnet-4-5", max_tokens: 64, system: [{ type: "text", text: "Be brief." }],
    messages: [{ role: "user", content: "What does Alice drink?" }] };
  const turn = await runTurn({ memory, scope: alice, createMessage: api.createMessage, request, budgetTokens: 200 });
  assert.equal(turn.injected.length, 1);
  await memory.close();
  const declarations = JSON.stringify(fileURLToPath(new URL("../../pkg-template/anthropic.js", import.meta.url)));
  const source = `import { runTurn, textOf, MEMORY_TOOL, type Turn, type MessageRequest, type MessageResponse } from ${declarations};
const request: MessageRequest = ${JSON.stringify(request)};
const turn: Turn = ${JSON.stringify(turn)};
const sent: MessageRequest[] = ${JSON.stringify(api.requests)};
const tool: { type: "memory_20250818"; name: "memory" } = MEMORY_TOOL;
declare const memory: import(${JSON.stringify(fileURLToPath(new URL("../../pkg-template/index.js", import.meta.url)))}).Memory;
const createMessage = async (r: MessageRequest): Promise<MessageResponse> => ({ content: [{ type: "text", text: r.model }], stop_reason: "end_turn" });
const next: Promise<Turn> = runTurn({ memory, scope: { userId: "a", workspaceId: "w" }, createMessage, request,
  onToolUse: async (block) => (block.name === "clock" ? { content: "09:30" } : undefined) });
const text: string = textOf(turn.response.content);
export { request, turn, sent, tool, next, text };
`;
  assert.deepEqual(await typeErrors("check.ts", source), []);
});
