// A store held in a Map: the adapter the benches open and fill, and the
// JSON Lines file (one [key, base64 value] per line) that carries a filled
// store from the process that wrote it to the fresh process that opens it.

import fs from "node:fs";

/** The package's adapter over `map`. */
export function mapAdapter(map) {
  return {
    get: (key) => map.get(key) ?? null,
    put: (key, value) => void map.set(key, value.slice()),
    delete: (key) => void map.delete(key),
    list: (prefix) => [...map.keys()].filter((k) => k.startsWith(prefix)),
  };
}

/** Writes the Map as JSON Lines of [key, base64 value]. */
export function save(map, file) {
  const lines = [...map].map(([k, v]) => JSON.stringify([k, Buffer.from(v).toString("base64")]));
  fs.writeFileSync(file, lines.join("\n") + "\n");
}

/** Reads a Map `save` wrote. */
export function load(file) {
  const map = new Map();
  for (const line of fs.readFileSync(file, "utf8").split("\n")) {
    if (!line) continue;
    const [k, v] = JSON.parse(line);
    map.set(k, new Uint8Array(Buffer.from(v, "base64")));
  }
  return map;
}
