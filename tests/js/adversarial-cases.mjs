// The adversarial input table (tests/data/adversarial.json) for the
// JavaScript surfaces: the npm package (tests/js/adversarial.test.mjs) and
// the WIT component in jco (tests/wit/adversarial.test.mjs). tests/it/adversarial.rs
// runs the same table through the Rust API and the CLI; docs/reliability.md
// (Adversarial input) describes it.
//
// A case's `input` is the request as a client writes it: JSON, or a
// JavaScript literal where JSON cannot say it (`NaN`, `Infinity`, `-0`,
// `1e309`, `\ud800` escapes that JavaScript reads as lone surrogates).
// `$S` is a scope, `$BIG` a 10 MiB string, `$XBIG` 10 MiB of `x` inside a
// string, `$DEEP` 100,000 nested arrays (inside a string literal: its text).
import { readFileSync } from "node:fs";
import { createHash } from "node:crypto";

export const fixture = JSON.parse(
  readFileSync(new URL("../data/adversarial.json", import.meta.url), "utf8"),
);
export const cases = fixture.cases;

export const BIG_BYTES = 10 * 1024 * 1024;
export const DEEP = 100_000;
const SCOPE = '{"userId": "alice", "workspaceId": "home"}';
const BIG_SENTINEL = "\u0001adversarial:big";
const DEEP_SENTINEL = "\u0001adversarial:deep";

/** What `surface` must answer for `c`. */
export const expected = (c, surface) => c[surface] ?? c.expect;

/** 100,000 nested arrays, built without recursion. */
export function deepArray() {
  let value = [];
  for (let i = 1; i < DEEP; i++) value = [value];
  return value;
}

const deepText = () => "[".repeat(DEEP) + "]".repeat(DEEP);

/**
 * Expands the placeholders of `text`: inside string literals as text,
 * outside them as sentinels the evaluated value carries.
 */
export function expandText(text, { sentinels = true } = {}) {
  let out = "";
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (inString && c === "\\") {
      out += c + text[++i];
      continue;
    }
    if (c === '"') inString = !inString;
    if (c === "$") {
      const name = /^\$(XBIG|BIG|DEEP|S)/.exec(text.slice(i))?.[1];
      if (name) {
        i += name.length;
        if (name === "S") out += SCOPE;
        else if (name === "XBIG") out += "x".repeat(BIG_BYTES);
        else if (inString || !sentinels) {
          out += name === "DEEP" ? deepText() : `"${"x".repeat(BIG_BYTES)}"`;
        } else {
          out += JSON.stringify(name === "DEEP" ? DEEP_SENTINEL : BIG_SENTINEL);
        }
        continue;
      }
    }
    out += c;
  }
  return out;
}

function replaceSentinels(value) {
  if (value === BIG_SENTINEL) return "x".repeat(BIG_BYTES);
  if (value === DEEP_SENTINEL) return deepArray();
  if (Array.isArray(value)) return value.map(replaceSentinels);
  if (value && typeof value === "object") {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, replaceSentinels(v)]));
  }
  return value;
}

/** A literal of the table as the JavaScript value a client would pass. */
export function evaluate(literal) {
  // eslint-disable-next-line no-new-func
  return replaceSentinels(new Function(`return (${expandText(literal)});`)());
}

export const hexBytes = (hex) => Uint8Array.from(hex.match(/../g).map((h) => parseInt(h, 16)));

const sha256 = (text) => createHash("sha256").update(text).digest("hex");

/** An export document around `items` (and the header's files) with their right checksums. */
function exportDocument(header, items) {
  const text = JSON.stringify(items);
  const files = header.files === undefined ? "" : `,"filesChecksum":"${sha256(JSON.stringify(header.files))}","files":${JSON.stringify(header.files)}`;
  return `{"format":${JSON.stringify(header.format)},"version":${header.version},"checksum":"${sha256(text)}","items":${text}${files}}`;
}

/**
 * The byte ranges of the checksummed parts of `exported` (the values of
 * `items` and `files`): a flip inside one must be refused.
 */
export function checksummedRanges(exported) {
  const bytesBefore = (end) => new TextEncoder().encode(exported.slice(0, end)).length;
  const ranges = [];
  for (const [key, next] of [['"items":', ',"fileCount":'], ['"files":', null]]) {
    const at = exported.indexOf(key);
    if (at < 0) continue;
    const end = next !== null && exported.includes(next) ? exported.indexOf(next) : exported.length - 1;
    ranges.push([bytesBefore(at + key.length), bytesBefore(end)]);
  }
  return ranges;
}

/** True when byte `at` lies in one of `ranges`. */
export const inRanges = (ranges, at) => ranges.some(([start, end]) => at >= start && at < end);

/** The damaged export `derive` names, made from the store's own. */
export function deriveExport(exported, derive) {
  const doc = JSON.parse(exported);
  const items = doc.items;
  const setVersion = (version) => exported.replace(/"version":[^,]*,/, `"version":${version},`);
  switch (derive) {
    case "duplicate-id": items[1].id = items[0].id; break;
    case "duplicate-item": items.push(structuredClone(items[0])); break;
    case "duplicate-text": items.push({ ...structuredClone(items[0]), id: "twinOfTheFirstMemory" }); break;
    case "format=other": return exported.replace('"mnemo-export"', '"other-export"');
    case "no-checksum": return exported.replace(/"checksum":"[0-9a-f]*",/, "");
    case "content-hash": items[0].contentHash = "0".repeat(64); break;
    case "unnormalized-text": items[0].text = "  two   spaces  "; break;
    case "big-text": items[0].text = "x".repeat(BIG_BYTES); break;
    case "unknown-item-field": items[0].colour = "red"; break;
    case "summary-of-live":
    case "summary-of-superseded": {
      // The first memory's summary, its own summary in its scope.
      const text = "A summary of the first memory.";
      const summary = { ...structuredClone(items[0]), id: "summaryOfTheFirstMemory", kind: "summary", text };
      summary.contentHash = sha256(text);
      summary.summaryOf = [items[0].id];
      if (derive === "summary-of-superseded") items[0].supersededAt = items[0].updatedAt;
      items.push(summary);
      break;
    }
    default: {
      const version = /^version=(.*)$/.exec(derive)?.[1];
      if (version === undefined) throw new Error(`unknown derive ${derive}`);
      return setVersion(version);
    }
  }
  return exportDocument(doc, items);
}

/** The rendered hot file with its pinned line twice, the second edited. */
export function hotFileWithDuplicateId(rendered) {
  const line = rendered.split("\n").find((l) => l.includes("mnemo:id="));
  if (!line) throw new Error("no pinned line");
  return rendered.replace(line, `${line}\n${line.replace("spare key", "spare key (edited)")}`);
}

/** The seeded memories (as tests/it/adversarial.rs seeds them). */
export const SEED = [
  { text: "I take my coffee as a cortado, no sugar.", scope: { userId: "alice", workspaceId: "home" } },
  { text: "The spare key is under the blue flower pot.", scope: { userId: "alice", workspaceId: "home" }, pinned: true },
  {
    text: "My phone number is 555-0100.",
    scope: { userId: "alice", workspaceId: "home" },
    privacy: { pii: true, private: false, retentionDays: 30 },
  },
  { text: "Crème brûlée in 東京, naïvely 🎉.", scope: { userId: "alice", workspaceId: "home" }, tags: ["dessert", "旅行"] },
  { text: "A pending memory about the garden.", scope: { userId: "alice", workspaceId: "home" }, status: "pending" },
  { text: "A rejected memory about the violin.", scope: { userId: "alice", workspaceId: "home" }, status: "rejected" },
  { text: "A soft-deleted memory about sushi.", scope: { userId: "alice", workspaceId: "home" } },
  { text: "Bob's workspace memory about coffee.", scope: { userId: "bob", workspaceId: "home" } },
];
export const SEED_FILE = {
  path: "notes/MEMORY.md",
  content: "# Notes\nThe espresso machine is descaled on Sundays.\n\n## Plants\nWater the fern weekly.\n",
};

/** The byte positions and bits a sweep flips in an export of `length` bytes whose items start at `itemsAt`: every bit of the header, one bit of each byte after it. */
export function* flips(length, itemsAt) {
  for (let at = 0; at < length; at++) {
    if (at < itemsAt) {
      for (let bit = 0; bit < 8; bit++) yield [at, bit];
    } else {
      yield [at, at % 8];
    }
  }
}
