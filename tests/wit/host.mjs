// A JavaScript host of memtide's WebAssembly component: the component
// transpiled by jco (`--instantiation async`, in dist/wit-js/ or
// $MEMTIDE_WIT_JS), WASI from @bytecodealliance/preview2-shim (sandboxed: no
// files, no environment, no network), and the `memtide:memory/storage` import
// implemented over a Map.
import { readFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { pathToFileURL } from "node:url";

const root = new URL("../../", import.meta.url);
const outDir = process.env.MEMTIDE_WIT_JS
  ? pathToFileURL(`${process.env.MEMTIDE_WIT_JS.replace(/\/$/, "")}/`)
  : new URL("dist/wit-js/", root);

// preview2-shim is a dependency of jco; npm may keep it under jco's own
// node_modules instead of hoisting it, so resolve it from jco's package.
function resolveShim(specifier) {
  const require = createRequire(new URL("package.json", root));
  try {
    return require.resolve(specifier);
  } catch {
    const fromJco = createRequire(require.resolve("@bytecodealliance/jco"));
    return fromJco.resolve(specifier);
  }
}

const { WASIShim } = await import(
  pathToFileURL(resolveShim("@bytecodealliance/preview2-shim/instantiation")).href
);
const { instantiate } = await import(new URL("memtide.js", outDir).href);

const coreModules = new Map();

/** Compiles (once) the core module `name` of the transpiled component. */
async function getCoreModule(name) {
  if (!coreModules.has(name)) {
    coreModules.set(name, WebAssembly.compile(await readFile(new URL(name, outDir))));
  }
  return coreModules.get(name);
}

/**
 * The host's key-value store: a Map of keys to byte arrays. `failPut` and
 * `failDelete`, when set, make those calls fail with the storage-error they
 * return (`{tag: "quota-exceeded" | "other", val: message}`), as a host
 * signals an error result to jco: by throwing the error value.
 */
export class MapStorage {
  constructor() {
    this.map = new Map();
    this.failPut = null;
    this.failDelete = null;
    this.calls = { get: 0, put: 0, delete: 0, list: 0 };
  }

  /** The `memtide:memory/storage` import object over this store. */
  imports() {
    return {
      get: (key) => {
        this.calls.get++;
        const value = this.map.get(key);
        return value === undefined ? undefined : value.slice();
      },
      put: (key, value) => {
        this.calls.put++;
        const failure = this.failPut?.(key);
        if (failure) throw failure;
        this.map.set(key, value.slice());
      },
      delete: (key) => {
        this.calls.delete++;
        const failure = this.failDelete?.(key);
        if (failure) throw failure;
        this.map.delete(key);
      },
      list: (prefix) => {
        this.calls.list++;
        return [...this.map.keys()].filter((k) => k.startsWith(prefix));
      },
    };
  }

  /** A copy of every key and value, for comparisons. */
  snapshot() {
    return new Map([...this.map].map(([k, v]) => [k, Buffer.from(v).toString("base64")]));
  }
}

/**
 * A new instance of the component over `storage`; resolves to its `memory`
 * interface ({Store}).
 */
export async function instantiateMemtide(storage) {
  const wasi = new WASIShim({ sandbox: { preopens: {}, env: {}, args: ["memtide"], enableNetwork: false } });
  const imports = { ...wasi.getImportObject(), "memtide:memory/storage": storage.imports() };
  const exports = await instantiate(getCoreModule, imports);
  return exports.memory;
}

/**
 * Runs `fn` and returns the component's error record ({code, message})
 * it fails with; fails the test when it succeeds or throws anything else.
 */
export function errorOf(fn) {
  try {
    fn();
  } catch (e) {
    if (e && typeof e === "object" && "payload" in e) return e.payload;
    throw e;
  }
  throw new Error("expected the call to fail with a memtide error");
}

/** A scope record. */
export const scope = (userId, workspaceId, extra = {}) => ({ userId, workspaceId, ...extra });

/** A retrieve-query record with the flags at their defaults. */
export const retrieveQuery = (text, scope, extra = {}) => ({
  text,
  scope,
  dryRun: false,
  explain: false,
  includePending: false,
  includePii: false,
  ...extra,
});

/** A list-query record with the flags at their defaults. */
export const listQuery = (extra = {}) => ({ includeDeleted: false, ...extra });
