// memtide in a Cloudflare Worker with one Durable Object per user: the
// Worker routes `/users/<userId>/<endpoint>` to the object named after the
// user (`idFromName`), which keeps that user's store in its own SQLite
// storage (strongly consistent; every write one transaction) and serves POST
// /ingest, /retrieve and /inject. Users' memories never share a store.
// Retrieval is lexical-only here; pass `model` to `Memory.open` as the KV
// example does (examples/cloudflare-worker) for semantic search.
import { DurableObject } from "cloudflare:workers";
import { Memory } from "memtide";
import { DurableObjectSqlStorage } from "memtide/durable-object";
import { handleMemoryRequest } from "../http-handler.js";

export class UserMemory extends DurableObject {
  /** The object's store, opened by its first request. */
  #opening;

  async fetch(request) {
    this.#opening ??= Memory.open({ storage: new DurableObjectSqlStorage(this.ctx.storage) }).catch((error) => {
      this.#opening = undefined; // let the next request try again
      throw error;
    });
    const mem = await this.#opening;
    if (new URL(request.url).pathname === "/stats") return Response.json(await mem.stats());
    return handleMemoryRequest(mem, request);
  }
}

export default {
  async fetch(request, env) {
    const url = new URL(request.url);
    const [, users, userId, ...rest] = url.pathname.split("/");
    if (users !== "users" || !userId || rest.length !== 1) {
      return Response.json({ error: { code: "NOT_FOUND", message: "use /users/<userId>/(ingest|retrieve|inject|stats)" } }, { status: 404 });
    }
    const object = env.USER_MEMORY.get(env.USER_MEMORY.idFromName(decodeURIComponent(userId)));
    url.pathname = `/${rest[0]}`;
    return object.fetch(new Request(url, request));
  },
};
