// The cold-start page (section 4), run in Chromium: `?engine=memtide|orama`
// and `?phase=populate|cold` (`&query=` the text cold asks). Populate stores the corpus in IndexedDB; cold
// opens it and answers one query, reporting `performance.now()` (time since
// navigation started) when the answer is in. Texts only: the model is not
// loaded on either side (its load time is section 1's).
import { memoryCorpus } from "/bench/lib/corpus.mjs";
import { STOPWORDS } from "/bench/lib/stopwords.mjs";

const params = new URLSearchParams(location.search);
// Where memtide's package is served: /pkg/ (dist/memtide), or /pkg-before/
// (an earlier build, `--cold-before`).
const PKG = params.get("pkg") ?? "/pkg/";
const size = Number(params.get("size"));
const SCOPE = { userId: "bench", workspaceId: "main" };
const MEMTIDE_DB = "bench-cold-memtide";
const ORAMA_DB = "bench-cold-orama";
const INGEST_BATCH = 1000;
/** When each stage of a cold visit ended (`performance.now()`): the page's
 * script started, the engine's code was imported, memtide's .wasm was
 * compiled, the store was open. */
const stages = {};
const mark = (stage) => { stages[stage] = performance.now(); };

/** One value in its own IndexedDB database (Orama's saved index). */
function idb(mode, value) {
  return new Promise((resolve, reject) => {
    const open = indexedDB.open(ORAMA_DB, 1);
    open.onupgradeneeded = () => open.result.createObjectStore("data");
    open.onerror = () => reject(open.error);
    open.onsuccess = () => {
      const tx = open.result.transaction("data", mode);
      const request = mode === "readwrite" ? tx.objectStore("data").put(value, "index") : tx.objectStore("data").get("index");
      tx.oncomplete = () => { open.result.close(); resolve(request.result); };
      tx.onerror = () => reject(tx.error);
    };
  });
}

const ENGINES = {
  memtide: {
    async populate(texts) {
      const { Memory } = await import(`${PKG}browser.js`);
      const memory = await Memory.open({ storage: "indexeddb", name: MEMTIDE_DB });
      for (let i = 0; i < texts.length; i += INGEST_BATCH) {
        await memory.ingest(texts.slice(i, i + INGEST_BATCH).map((text) => ({ text, scope: SCOPE })));
      }
      const { items } = await memory.stats();
      await memory.close();
      return items;
    },
    async cold(query) {
      const { Memory, init } = await import(`${PKG}browser.js`);
      mark("imported");
      // Fetching and compiling the .wasm, apart from opening the store.
      await init();
      mark("compiled");
      // When the core .wasm's response ended, and whether it came from the
      // HTTP cache (nothing transferred); a lexical-only page fetches no
      // other (the model's module, since the third session of 2026-11-26).
      const wasm = performance.getEntriesByType("resource").find((e) => e.name.endsWith("memtide_bg.wasm"));
      if (wasm) {
        stages.wasmFetched = wasm.responseEnd;
        stages.wasmFromCache = wasm.transferSize === 0;
      }
      const memory = await Memory.open({ storage: "indexeddb", name: MEMTIDE_DB });
      mark("opened");
      return (await memory.retrieve({ text: query, scope: SCOPE, limit: 10, dryRun: true })).length;
    },
  },
  orama: {
    async populate(texts) {
      const { create, insertMultiple, save, count } = await import("/orama/index.js");
      const db = create({ schema: { text: "string" }, components: { tokenizer: { stopWords: STOPWORDS } } });
      await insertMultiple(db, texts.map((text, i) => ({ id: String(i), text })), 1000);
      await idb("readwrite", save(db));
      return count(db);
    },
    async cold(query) {
      const { create, load, search } = await import("/orama/index.js");
      mark("imported");
      const db = create({ schema: { text: "string" }, components: { tokenizer: { stopWords: STOPWORDS } } });
      load(db, await idb("readonly"));
      mark("opened");
      return (await search(db, { term: query, limit: 10 })).hits.length;
    },
  },
};

try {
  const engine = ENGINES[params.get("engine")];
  if (params.get("phase") === "populate") {
    window.benchResult = { stored: await engine.populate(memoryCorpus(size, 1).texts) };
  } else {
    // The query comes in the URL: making the corpus again (its vectors)
    // would take longer than opening the store, and is no part of it.
    mark("started");
    const hits = await engine.cold(params.get("query"));
    window.benchResult = { ms: performance.now(), hits, stages };
  }
} catch (error) {
  window.benchResult = { error: String(error?.stack ?? error) };
}
