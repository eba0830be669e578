// The browser app of tests/apps/integrations.test.mjs: the AI SDK and
// LangGraph scenarios that the Node tests run (../ai-sdk/scenario.mjs,
// ../langgraph/scenario.mjs), bundled by Vite with the packed memtide and
// the frameworks from npm, over IndexedDB (the browser default). Leaves
// what each observed in `window.memtideApp` for the test to judge.
import { Memory } from "memtide";
import { converse } from "../ai-sdk/scenario.mjs";
import { runGraph } from "../langgraph/scenario.mjs";

/** A fresh IndexedDB database per run, so a page reloaded in one profile starts empty. */
const fresh = (what) => `memtide-${what}-${Date.now()}-${Math.random().toString(36).slice(2)}`;

async function outcome(step) {
  try {
    return await step();
  } catch (error) {
    return { error: String(error?.stack ?? error) };
  }
}

async function run() {
  const aiSdk = await outcome(async () => {
    const mem = await Memory.open({ name: fresh("ai-sdk") });
    try {
      return await converse(mem);
    } finally {
      await mem.close();
    }
  });
  const graphDb = fresh("langgraph");
  const langgraph = await outcome(() => runGraph(() => Memory.open({ name: graphDb })));
  // Which storage the memories were in: IndexedDB databases of those names.
  const databases = (await indexedDB.databases()).map((d) => d.name);
  return { aiSdk, langgraph, databases, graphDb };
}

run().then((result) => {
  window.memtideApp = result;
});
