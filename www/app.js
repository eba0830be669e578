// The memtide playground: a chat-like page over a real memtide store (IndexedDB,
// in a worker), with what retrieval found and why, the block injection would
// add to the prompt, and an inspector to review and edit what is stored.

import { WorkerMemory } from "/memtide/worker.js";

const $ = (id) => document.getElementById(id);

// ----- the store, in its worker -----------------------------------------------

// The store runs in a dedicated worker (store-worker.js serves it), so that
// compiling the model and embedding never freeze the page; memtide/worker
// gives it the promise API of `Memory`. It opens lexical-only, usable at
// once, then the worker fetches the model (cached, sha256-checked) and
// embeds the stored memories.
const worker = new Worker("/store-worker.js", { type: "module" });
worker.onerror = (event) => showMode({ mode: "failed", error: event.message || "the worker did not start" });
const opened = WorkerMemory.open(worker, { name: "memtide-playground", onChange: () => refreshAll() });

/** Calls a method of the store; rejects with a MemtideError carrying memtide's `code`. */
async function call(method, ...args) {
  const memory = await opened;
  if (method === "usage") return { wasmBytes: await memory.wasmMemoryBytes() };
  return memory[method](...args);
}

async function loadModel(memory) {
  const files = new Map();
  const sum = (key) => [...files.values()].reduce((s, f) => s + f[key], 0);
  let embedding = false;
  try {
    const embedded = await memory.setModel({ baseUrl: "/model/" }, {
      onDownload: ({ url, loaded, total }) => {
        files.set(url, { loaded, total: total ?? loaded });
        showDownload(sum("loaded"), sum("total"));
      },
      onProgress: () => {
        if (!embedding) showMode({ mode: "embedding" });
        embedding = true;
      },
    });
    showMode({ mode: "hybrid", embedded });
  } catch (error) {
    showMode({ mode: "lexical", error: String(error?.message ?? error) });
  }
}

opened.then((memory) => {
  showMode({ mode: "lexical" });
  loadModel(memory);
}, (error) => showMode({ mode: "failed", error: String(error?.message ?? error) }));

// ----- small helpers ----------------------------------------------------------------

/** Creates an element with attributes, properties (`on*` are listeners) and children. */
function h(tag, props = {}, ...children) {
  const element = document.createElement(tag);
  for (const [key, value] of Object.entries(props)) {
    if (value === undefined || value === false || value === null) continue;
    if (key.startsWith("on")) element.addEventListener(key.slice(2), value);
    else if (key === "dataset") Object.assign(element.dataset, value);
    else if (key in element && !key.includes("-")) element[key] = value;
    else element.setAttribute(key, value === true ? "" : value);
  }
  element.append(...children.flat().filter((c) => c !== undefined && c !== null && c !== false));
  return element;
}

let toastTimer;
function toast(message, kind = "info") {
  const box = $("toast");
  box.textContent = message;
  box.dataset.kind = kind;
  box.hidden = false;
  clearTimeout(toastTimer);
  toastTimer = setTimeout(() => { box.hidden = true; }, kind === "error" ? 8000 : 3500);
}

/** What `attempt` resolves to when the action failed. */
const FAILED = Symbol("failed");

/** Runs an action, showing its failure (with memtide's error code) instead of throwing. */
async function attempt(action) {
  try {
    return await action();
  } catch (error) {
    toast(error.code ? `${error.code}: ${error.message}` : String(error.message ?? error), "error");
    return FAILED;
  }
}

const bytes = (n) => n < 1024 ? `${n} B` : n < 1048576 ? `${(n / 1024).toFixed(1)} KiB` : `${(n / 1048576).toFixed(1)} MiB`;
const shorten = (text, n = 48) => text.length > n ? `${text.slice(0, n - 1)}…` : text;
const when = (rfc3339) => new Date(rfc3339).toLocaleString(undefined, { dateStyle: "medium", timeStyle: "short" });

function debounce(fn, ms) {
  let timer;
  return (...args) => { clearTimeout(timer); timer = setTimeout(() => fn(...args), ms); };
}

// ----- model status -------------------------------------------------------------------

function showDownload(loaded, total) {
  const bar = $("download");
  bar.max = total || 1;
  bar.value = loaded;
  if ($("model").dataset.mode === "lexical") {
    $("mode").textContent = `Lexical-only (BM25) while the model downloads: ${bytes(loaded)} of ${bytes(total)}`;
  }
}

function showMode({ mode, error, embedded }) {
  $("model").dataset.mode = mode;
  const text = {
    lexical: error
      ? `Lexical-only (BM25): the model could not be loaded (${error})`
      : "Lexical-only (BM25) while the model downloads…",
    embedding: "Lexical-only (BM25) while the model compiles and embeds the stored memories…",
    hybrid: "Hybrid retrieval: BM25 + MiniLM" +
      (embedded ? `, ${embedded} stored ${embedded === 1 ? "memory" : "memories"} embedded` : ""),
    failed: `The memory store could not open: ${error}`,
  }[mode];
  $("mode").textContent = text;
  if (mode === "embedding") $("download").removeAttribute("value");
  if (mode === "lexical" || mode === "hybrid") refreshAll();
}

// ----- scope and settings -----------------------------------------------------------

const settingsKey = "memtide-playground-settings";
const remembered = ["userId", "workspaceId", "projectId", "sessionId", "autoCapture", "budget", "format", "limit",
  "includePending", "includePii", "kind"];

function loadSettings() {
  let saved = {};
  try { saved = JSON.parse(localStorage.getItem(settingsKey)) ?? {}; } catch { /* first visit */ }
  for (const id of remembered) {
    if (!(id in saved)) continue;
    const input = $(id);
    if (input.type === "checkbox") input.checked = Boolean(saved[id]);
    else input.value = saved[id];
  }
  if (saved.level) document.querySelector(`input[name=level][value=${CSS.escape(saved.level)}]`).checked = true;
  $("budgetValue").value = $("budget").value;
}

function saveSettings() {
  const settings = { level: level() };
  for (const id of remembered) settings[id] = $(id).type === "checkbox" ? $(id).checked : $(id).value;
  localStorage.setItem(settingsKey, JSON.stringify(settings));
}

const field = (id) => $(id).value.trim() || undefined;
const level = () => document.querySelector("input[name=level]:checked").value;

/** The scope the conversation is in: what queries see. */
function chatScope() {
  return { userId: field("userId") ?? "", workspaceId: field("workspaceId") ?? "", projectId: field("projectId"), sessionId: field("sessionId") };
}

/** The scope new memories are saved in, by the chosen level. */
function saveScope() {
  const { userId, workspaceId, projectId, sessionId } = chatScope();
  const chosen = level();
  if (chosen === "project" && !projectId) throw Object.assign(new Error("set a project to save project memories"), { code: "INVALID_INPUT" });
  if (chosen === "session" && !sessionId) throw Object.assign(new Error("set a session to save session memories"), { code: "INVALID_INPUT" });
  return {
    userId, workspaceId,
    projectId: chosen === "workspace" ? undefined : projectId,
    sessionId: chosen === "session" ? sessionId : undefined,
  };
}

const scopePath = (scope) => [scope.workspaceId, scope.projectId, scope.cardId, scope.sessionId].filter(Boolean).join(" › ");

// ----- conversation ---------------------------------------------------------------------

const messages = [];

function outcomeText(message) {
  const { result, error } = message;
  if (error) return `Not saved: ${error}`;
  if (!result) return "";
  const redacted = /<private>/i.test(message.text) ? " (its <private> part left out)" : "";
  if (result.outcome === "added") return result.similarTo ? `Saved; similar to ${result.similarTo}` : `Saved as a memory${redacted}`;
  if (result.outcome === "merged") return result.reason === "duplicate" ? "Already known: merged into the same memory" : "Merged into a similar memory";
  return {
    noMemory: "Not saved: it says <no-memory>",
    private: "Not saved: all of it was private",
    suppressed: "Not saved: a memory you deleted said this",
    duplicate: "Not saved: already known",
  }[result.reason] ?? `Not saved (${result.reason})`;
}

function renderMessages() {
  const list = $("messages");
  if (!messages.length) return;
  list.replaceChildren(...messages.map((message) => {
    const saved = message.result || message.error;
    return h("li", { className: "message", dataset: { role: message.role } },
      h("span", { className: "who" }, message.role),
      h("p", {}, message.text),
      h("div", { className: "saved", dataset: { outcome: message.result?.outcome ?? (message.error ? "error" : "none") } },
        saved ? outcomeText(message) : h("button", {
          type: "button", className: "small secondary", dataset: { action: "save" },
          "aria-label": `Save to memory: ${shorten(message.text)}`, onclick: () => save(message),
        }, "Save to memory")));
  }));
  list.lastElementChild.scrollIntoView({ block: "nearest" });
}

async function save(message) {
  try {
    const input = {
      text: message.text,
      scope: saveScope(),
      kind: message.kind,
      tags: message.tags,
      source: { kind: "message", ref: `${message.role}-${message.number}` },
    };
    [message.result] = await call("ingest", input);
    message.error = undefined;
  } catch (error) {
    message.error = error.message;
    toast(`${error.code ?? "ERROR"}: ${error.message}`, "error");
  }
  renderMessages();
  refreshAll();
}

function draftMessage() {
  const text = $("draft").value.trim();
  if (!text) return undefined;
  const tags = $("tags").value.split(",").map((t) => t.trim()).filter(Boolean);
  return { role: $("role").value, text, kind: $("kind").value, tags: tags.length ? tags : undefined, number: messages.length + 1 };
}

async function send(saveIt) {
  const message = draftMessage();
  if (!message) return;
  messages.push(message);
  $("draft").value = "";
  renderMessages();
  if (saveIt) await save(message);
  else refreshAll();
}

// ----- retrieval and injection previews -----------------------------------------

/** What retrieval runs for: the message being typed, else the last user message. */
function currentQuery() {
  return $("draft").value.trim() || messages.findLast((m) => m.role === "user")?.text || "";
}

function bar(kind, label, fraction, value) {
  const width = `${Math.round(Math.max(0, Math.min(1, fraction)) * 100)}%`;
  return [
    h("span", {}, label),
    h("span", { className: `bar ${kind}`, role: "img", "aria-label": `${label} ${value}` }, h("span", { style: `width:${width}` })),
    h("span", { className: "value" }, value),
  ];
}

function why(hit, scope) {
  const { policy } = hit;
  if (!policy) return undefined;
  const fields = policy.scopeFields.map((f) => `${f}=${hit.item.scope[f]}`).join(", ");
  const status = policy.status === "approved" ? "approved" : "pending (included on request)";
  const pii = policy.pii ? "contains PII (included on request)" : "no PII";
  const expiry = policy.expiresAt ? `kept until ${when(policy.expiresAt)}` : "no expiry";
  const filters = policy.filters.length ? `matches the ${policy.filters.join(", ")} filter` : "no filters set";
  const narrower = hit.item.scope.sessionId || hit.item.scope.projectId ? "" : ` (workspace-wide, seen from ${scopePath(scope)})`;
  return h("p", { className: "why" }, h("strong", {}, "Passed: "),
    `scope ${fields}${narrower} · ${status} · not private · not deleted · ${pii} · ${expiry} · ${filters}`);
}

function renderHits(hits, scope) {
  if (!hits.length) {
    $("hits").replaceChildren(h("li", { className: "empty" }, "Nothing in this scope matches."));
    return;
  }
  const maxLexical = Math.max(...hits.map((hit) => hit.explain.lexical), 1e-9);
  const maxFused = Math.max(...hits.map((hit) => hit.score), 1e-9);
  $("hits").replaceChildren(...hits.map((hit) => {
    const { explain, item } = hit;
    const factors = [
      explain.inherited && "score inherited from the question it answers",
      explain.speakerFactor !== 1 && `×${explain.speakerFactor.toFixed(2)} another speaker`,
      explain.timeFactor !== 1 && `×${explain.timeFactor.toFixed(2)} no time word for a "when" question`,
      explain.scopeMultiplier !== 1 && `×${explain.scopeMultiplier.toFixed(2)} narrower scope`,
    ].filter(Boolean);
    return h("li", { className: "hit", dataset: { id: item.id } },
      h("p", { className: "text" }, item.text),
      h("p", { className: "meta" },
        h("span", { className: "chip" }, item.kind),
        h("span", { className: "chip" }, scopePath(item.scope)),
        item.pinned && h("span", { className: "chip pinned" }, "pinned"),
        item.status !== "approved" && h("span", { className: `chip ${item.status}` }, item.status),
        ...item.tags.map((tag) => h("span", { className: "chip" }, `#${tag}`))),
      h("div", { className: "bars" },
        bar("lexical", "lexical", explain.lexical / maxLexical, explain.lexical.toFixed(2)),
        explain.semantic === undefined
          ? bar("semantic", "semantic", 0, "—")
          : bar("semantic", "semantic", explain.semantic, explain.semantic.toFixed(3)),
        bar("combined", "combined", explain.combined, explain.combined.toFixed(3)),
        bar("fused", "fused", hit.score / maxFused, hit.score.toFixed(3))),
      factors.length ? h("p", { className: "meta" }, factors.join(" · ")) : undefined,
      why(hit, chatScope()));
  }));
}

async function renderInjection(injection, budget) {
  const block = $("block");
  block.textContent = injection.block || "(empty: nothing fits or nothing matches)";
  Object.assign(block.dataset, { tokens: injection.tokens, budget, used: injection.used.length });
  const meter = $("used");
  meter.max = budget;
  meter.value = injection.tokens;
  $("injectionStats").textContent = `${injection.tokens} of ${budget} tokens` +
    ` (${injection.estimated ? "estimated" : "counted by the model's tokenizer"}),` +
    ` ${injection.used.length} ${injection.used.length === 1 ? "memory" : "memories"}`;
  if (!injection.dropped.length) {
    $("dropped").replaceChildren(h("li", { className: "empty" }, "Nothing."));
    return;
  }
  const items = await Promise.all(injection.dropped.map(({ id }) => call("get", id).catch(() => undefined)));
  $("dropped").replaceChildren(...injection.dropped.map(({ id, tokens }, i) =>
    h("li", { dataset: { id } }, `${shorten(items[i]?.text ?? id, 70)} — ${tokens} tokens`)));
}

let generation = 0;
async function refreshPreviews() {
  const mine = ++generation;
  const text = currentQuery();
  const scope = chatScope();
  $("queryText").textContent = text ? `For “${shorten(text, 90)}”, in ${scopePath(scope)}:` : "Type a message to see what memtide would recall for it.";
  if (!text || !scope.userId || !scope.workspaceId) {
    $("hits").replaceChildren();
    $("block").textContent = "";
    $("injectionStats").textContent = "No block yet.";
    $("used").value = 0;
    $("dropped").replaceChildren(h("li", { className: "empty" }, "Nothing."));
    return;
  }
  const common = {
    text, scope, dryRun: true, includePending: $("includePending").checked, includePii: $("includePii").checked,
  };
  const budget = Number($("budget").value);
  const result = await attempt(() => Promise.all([
    call("retrieve", { ...common, explain: true, limit: Math.max(1, Math.min(50, Number($("limit").value) || 8)) }),
    call("inject", { ...common, budgetTokens: budget, format: $("format").value }),
  ]));
  if (result === FAILED || mine !== generation) return;
  renderHits(result[0], scope);
  $("hits").dataset.query = text;
  await renderInjection(result[1], budget);
}

// ----- inspector -------------------------------------------------------------------------

let cursor;

function listQuery() {
  const { userId, workspaceId } = chatScope();
  const kind = $("filterKind").value;
  const status = $("filterStatus").value;
  const tag = $("filterTag").value.trim();
  return {
    scope: $("filterScope").value === "user" ? { userId } : { userId, workspaceId },
    kinds: kind ? [kind] : undefined,
    statuses: status ? [status] : undefined,
    tags: tag ? [tag] : undefined,
    pinned: $("filterPinned").checked ? true : undefined,
    includeDeleted: $("filterDeleted").checked,
    limit: 25,
  };
}

async function change(id, patch, done) {
  if (await attempt(() => call("update", id, patch)) !== FAILED) {
    if (done) toast(done);
    refreshAll();
  }
}

function editor(row, item) {
  const area = h("textarea", { value: item.text, "aria-label": "Memory text" });
  const finish = () => refreshInspector();
  const commit = () => change(item.id, { text: area.value }, "Memory updated");
  area.addEventListener("keydown", (event) => {
    if (event.key === "Escape") finish();
    if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) commit();
  });
  row.querySelector(".text").replaceWith(h("div", { className: "text" }, area,
    h("div", { className: "actions" },
      h("button", { type: "button", className: "small", dataset: { action: "save-edit" }, onclick: commit }, "Save"),
      h("button", { type: "button", className: "small secondary", onclick: finish }, "Cancel"))));
  area.focus();
}

function itemRow(item) {
  const label = shorten(item.text, 40);
  const button = (action, text, onclick, className = "small secondary") =>
    h("button", { type: "button", className, dataset: { action }, "aria-label": `${text}: ${label}`, onclick }, text);
  const row = h("tr", { dataset: { id: item.id }, "data-deleted": Boolean(item.deletedAt) });
  const status = item.deletedAt ? "deleted" : item.status;
  row.append(
    h("td", {},
      h("div", { className: "text" }, item.text),
      h("div", { className: "tags" },
        item.pinned && h("span", { className: "chip pinned" }, "pinned"),
        ...item.tags.map((tag) => h("span", { className: "chip" }, `#${tag}`)),
        h("span", { className: "chip", title: item.createdAt }, when(item.createdAt)))),
    h("td", {}, item.kind),
    h("td", {}, scopePath(item.scope)),
    h("td", {}, h("span", { className: `chip ${status}` }, status)),
    h("td", {}, `${item.usageCount}×`),
    h("td", {}, h("div", { className: "actions" },
      item.deletedAt
        ? button("restore", "Restore", () => change(item.id, { deleted: false }, "Memory restored"))
        : [
          button("edit", "Edit", () => editor(row, item)),
          item.status !== "approved" && button("approve", "Approve", () => change(item.id, { status: "approved" })),
          item.status !== "rejected" && button("reject", "Reject", () => change(item.id, { status: "rejected" })),
          button(item.pinned ? "unpin" : "pin", item.pinned ? "Unpin" : "Pin", () => change(item.id, { pinned: !item.pinned })),
          button("delete", "Delete", async () => {
            if (await attempt(() => call("delete", item.id)) !== FAILED) { toast("Memory deleted (restorable)"); refreshAll(); }
          }),
        ],
      button("erase", "Erase", async () => {
        if (!confirm(`Erase “${label}” for good? Every stored byte of it is removed.`)) return;
        if (await attempt(() => call("delete", item.id, { hard: true })) !== FAILED) { toast("Memory erased"); refreshAll(); }
      }, "small danger"))));
  return row;
}

async function refreshInspector(more = false) {
  const { userId, workspaceId } = chatScope();
  if (!userId || !workspaceId) return;
  const page = await attempt(() => call("list", { ...listQuery(), cursor: more ? cursor : undefined }));
  if (page === FAILED) return;
  cursor = page.nextCursor ?? undefined;
  const rows = page.items.map(itemRow);
  if (more) $("items").append(...rows);
  else $("items").replaceChildren(...(rows.length ? rows : [h("tr", {}, h("td", { colSpan: 6, className: "empty" }, "No memories match."))]));
  $("more").hidden = !cursor;
}

async function refreshUsage() {
  const [stats, usage, estimate] = await Promise.all([
    call("stats").catch(() => undefined),
    call("usage").catch(() => undefined),
    navigator.storage?.estimate?.().catch(() => undefined),
  ]);
  if (!stats) return;
  const entries = [
    ["memories", stats.active], ["pending", stats.pending], ["pinned", stats.pinned], ["deleted", stats.deleted],
    ["embedded", stats.embedded], ["stored", bytes(stats.storedBytes)],
    estimate && ["origin storage", `${bytes(estimate.usage ?? 0)} of ${bytes(estimate.quota ?? 0)}`],
    usage && ["wasm memory", bytes(usage.wasmBytes)],
  ].filter(Boolean);
  $("usage").replaceChildren(...entries.map(([term, value]) => h("div", {}, h("dt", {}, term), h("dd", {}, String(value)))));
}

function refreshAll() {
  refreshPreviews();
  refreshInspector();
  refreshUsage();
}

// ----- export, import, erase ----------------------------------------------------------

async function exportFile() {
  const data = await attempt(() => call("export"));
  if (data === FAILED) return;
  const url = URL.createObjectURL(new Blob([data], { type: "application/json" }));
  const link = h("a", { href: url, download: `mnemo-export-${new Date().toISOString().slice(0, 10)}.json` });
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}

async function importFile(file) {
  const counts = await attempt(async () => call("import", await file.text()));
  if (counts !== FAILED) toast(`Imported: ${counts.added} added, ${counts.replaced} replaced, ${counts.merged} merged${counts.files ? `, ${counts.files} files` : ""}`);
  refreshAll();
}

async function eraseWorkspace() {
  const { userId, workspaceId } = chatScope();
  if (!confirm(`Erase every memory of ${userId} in ${workspaceId}? This cannot be undone.`)) return;
  const result = await attempt(() => call("deleteAll", { scope: { userId, workspaceId }, hard: true }));
  if (result !== FAILED) toast(`Erased ${result.deleted} memories`);
  refreshAll();
}

// ----- wiring ------------------------------------------------------------------------------

loadSettings();
const refreshSoon = debounce(refreshPreviews, 150);
const settingsChanged = debounce(() => { saveSettings(); refreshAll(); }, 200);

$("composer").addEventListener("submit", (event) => { event.preventDefault(); send($("autoCapture").checked); });
$("draft").addEventListener("keydown", (event) => {
  if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
    event.preventDefault();
    send($("autoCapture").checked);
  }
});
$("draft").addEventListener("input", refreshSoon);
$("saveDraft").addEventListener("click", () => send(true));
$("scope").addEventListener("input", settingsChanged);
$("scope").addEventListener("submit", (event) => event.preventDefault());
for (const id of ["limit", "includePending", "includePii", "format", "autoCapture", "kind"]) {
  $(id).addEventListener("change", () => { saveSettings(); refreshPreviews(); });
}
$("budget").addEventListener("input", () => { $("budgetValue").value = $("budget").value; saveSettings(); refreshSoon(); });
$("filters").addEventListener("change", (event) => { if (event.target.id !== "importFile") refreshInspector(); });
$("filterTag").addEventListener("input", debounce(() => refreshInspector(), 200));
$("filters").addEventListener("submit", (event) => event.preventDefault());
$("more").addEventListener("click", () => refreshInspector(true));
$("export").addEventListener("click", exportFile);
$("importFile").addEventListener("change", (event) => {
  const [file] = event.target.files;
  if (file) importFile(file);
  event.target.value = "";
});
$("eraseAll").addEventListener("click", eraseWorkspace);
$("mode").textContent = "Opening the memory store…";

if ("serviceWorker" in navigator) {
  navigator.serviceWorker.register("/sw.js").then(() => navigator.serviceWorker.ready).then(() => {
    $("offline").hidden = false;
    document.documentElement.dataset.offlineReady = "true";
  }).catch(() => { /* served without a secure context: online only */ });
}
