// The LangGraph scenario the Node test (tests/apps/langgraph.test.mjs) and
// the Chromium app (tests/apps/integrations, judged by
// tests/apps/integrations.test.mjs) both run: a compiled graph whose nodes
// write memories through memtide's MemoryStore in three runs and read them
// in a later run, after the Memory was closed and opened again. It returns
// what it observed, as JSON-safe values; judge.mjs says what that must be.
import { MemoryStore } from "memtide/langgraph";
import { Annotation, BaseStore, END, START, StateGraph } from "@langchain/langgraph";

const State = Annotation.Root({
  userId: Annotation(),
  remember: Annotation(),
  question: Annotation(),
  recalled: Annotation(),
});

/** The graph: `write` puts the state's fact (if any) under the user's namespace, `recall` searches it. */
const build = (store) => new StateGraph(State)
  .addNode("write", async (state, config) => {
    if (state.remember) {
      const namespace = ["memories", state.userId];
      const existing = await config.store.search(namespace, { limit: 100 });
      await config.store.put(namespace, `fact-${existing.length + 1}`, { text: state.remember, source: "chat" });
    }
    return {};
  })
  .addNode("recall", async (state, config) => {
    const hits = await config.store.search(["memories", state.userId], { query: state.question, limit: 1 });
    return { recalled: hits.map((h) => ({ text: h.value.text, key: h.key, score: h.score })) };
  })
  .addEdge(START, "write")
  .addEdge("write", "recall")
  .addEdge("recall", END)
  .compile({ store });

/**
 * Runs the graph over memories that `open()` opens (an empty store the
 * first time, the same storage again the second).
 */
export async function runGraph(open) {
  const observed = {};
  const memory = await open();
  const store = new MemoryStore({ memory, index: { fields: ["text"] } });
  observed.isBaseStore = store instanceof BaseStore;
  const graph = build(store);
  await graph.invoke({ userId: "alice", remember: "Alice's sister Mara lives in Lisbon.", question: "where does Mara live" });
  await graph.invoke({ userId: "alice", remember: "Alice is allergic to peanuts.", question: "peanuts" });
  await graph.invoke({ userId: "bob", remember: "Bob's sister lives in Oslo.", question: "sister" });
  await memory.close();

  const reopened = await open();
  const later = build(new MemoryStore({ memory: reopened, index: { fields: ["text"] } }));
  observed.alice = (await later.invoke({ userId: "alice", question: "Which city does Mara live in?" })).recalled;
  observed.bob = (await later.invoke({ userId: "bob", question: "Lisbon sister" })).recalled;
  // The items are memtide memories: keyed, with the value as metadata.
  observed.facts = (await reopened.list({ scope: { userId: "langgraph", metadata: { source: "chat" } }, limit: 10 })).items
    .map(({ key, scope, metadata }) => ({ key, projectId: scope.projectId, metadata }));
  await reopened.close();
  return observed;
}
