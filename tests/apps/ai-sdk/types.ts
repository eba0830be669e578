// Type-checked by tests/apps/ai-sdk.test.mjs (tsc --noEmit): memtide/ai-sdk's
// types against the AI SDK's own.
import { wrapLanguageModel, type LanguageModelMiddleware } from "ai";
import { MockLanguageModelV3 } from "ai/test";
import { Memory, type Injection } from "memtide";
import { memoryMiddleware, modelExtractor, modelSummarizer, summaryInstructions } from "memtide/ai-sdk";

const memory = await Memory.open({ storage: "memory" });
const middleware: LanguageModelMiddleware = memoryMiddleware({
  memory,
  scope: (params) => ({ userId: String(params.headers?.["x-user"] ?? "anon"), workspaceId: "chat" }),
  budgetTokens: 400,
  format: "xml",
  ingest: { include: ["text", "toolCall"], roles: ["user"], speakers: { user: "Ana" } },
  onInject: (injection: Injection) => void injection.citations.map((c) => c.id),
  onError: (error) => console.error(error),
});
wrapLanguageModel({ model: new MockLanguageModelV3(), middleware });
wrapLanguageModel({ model: new MockLanguageModelV3(), middleware: memoryMiddleware({ memory, scope: { userId: "u", workspaceId: "w" }, ingest: false }) });
// @ts-expect-error the scope is required
memoryMiddleware({ memory });
// @ts-expect-error the scope is given once, not again in `ingest`
memoryMiddleware({ memory, scope: { userId: "u", workspaceId: "w" }, ingest: { scope: { userId: "u", workspaceId: "w" } } });
// @ts-expect-error not a part type
memoryMiddleware({ memory, scope: { userId: "u", workspaceId: "w" }, ingest: { include: ["audio"] } });
const extractor = modelExtractor(new MockLanguageModelV3(), { instructions: "Only food.", onReply: (text: string) => void text.length });
wrapLanguageModel({
  model: new MockLanguageModelV3(),
  middleware: memoryMiddleware({ memory, scope: { userId: "u", workspaceId: "w" }, extractor, onRemember: (r) => void r.superseded.map((s) => s.by) }),
});
const remembered = await memory.remember([{ role: "user", content: "I moved." }], {
  scope: { userId: "u", workspaceId: "w" },
  extractor: ({ memories }) => memories.map((m) => ({ op: "delete" as const, id: m.id })),
});
void remembered.added;
// @ts-expect-error not an operation
await memory.remember([], { scope: { userId: "u", workspaceId: "w" }, extractor: () => [{ op: "merge", id: "x" }] });

const summary = await memory.summarize({
  scope: { userId: "u", workspaceId: "w" },
  session: "s1",
  summarizer: modelSummarizer(new MockLanguageModelV3(), { maxWords: 60, instructions: summaryInstructions(60) }),
});
const sources: string[] | undefined = summary?.summaryOf;
void sources;
await memory.summarize({ scope: { userId: "u", workspaceId: "w" }, summarizer: ({ memories, previous }) => ({ text: previous?.text ?? "", sources: memories.map((m) => m.id) }) });
// @ts-expect-error a model id string is not a model object
modelSummarizer("openai/gpt-4.1");
// @ts-expect-error the summarizer is required
await memory.summarize({ scope: { userId: "u", workspaceId: "w" } });
