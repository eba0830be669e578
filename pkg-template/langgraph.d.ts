// Types of memtide/langgraph: a LangGraph.js `BaseStore` over a memtide
// `Memory`. Needs `@langchain/langgraph` (or `@langchain/langgraph-checkpoint`)
// installed beside memtide.
import { BaseStore, InvalidNamespaceError, type Operation, type OperationResults } from "@langchain/langgraph-checkpoint";
import type { Memory, Scope } from "./index.js";

export interface MemoryStoreOptions {
  /** The memtide store the items live in. */
  memory: Memory;
  /**
   * The tenant every namespace of this store lives in (default
   * `{userId: "langgraph", workspaceId: "store"}`): namespace `["a", "b"]` is
   * the scope `{...scope, projectId: "a:b"}` (at most 256 bytes).
   */
  scope?: Pick<Scope, "userId" | "workspaceId">;
  /**
   * What memtide indexes of a value for `search` with a `query`: paths such as
   * `"text"`, `"facts[*].text"`, `"$"` (the whole value as JSON, the default).
   * A put's own `index` paths replace them; `index: false` indexes the key alone.
   */
  index?: { fields?: string[] };
}

/**
 * A LangGraph.js store over a memtide `Memory`: each item is one memory whose
 * `key` is the item's key, whose `metadata` is its value (a JSON object, at
 * most `limits.maxMetadataBytes` of JSON) and whose scope is its namespace's.
 * `search` filters by value fields (plain values by equality, or `$eq`,
 * `$ne`, `$gt`, `$gte`, `$lt`, `$lte`, `$in`, `$nin`) and, with a `query`,
 * ranks by memtide's retrieval, `score` being the hit's relevance in 0..=1.
 * `delete` erases the memory (a hard delete).
 */
export declare class MemoryStore extends BaseStore {
  constructor(options: MemoryStoreOptions);
  /** The memtide scope of a namespace. */
  scopeOf(namespace: string[]): Scope;
  batch<Op extends Operation[]>(operations: Op): Promise<OperationResults<Op>>;
}

export { InvalidNamespaceError };
