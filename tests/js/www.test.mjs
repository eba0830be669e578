// The playground (www/) in headless Debian Chromium driven by playwright-core,
// served by www/serve.mjs as the main job serves it. Drives the page as a
// user would: waits for the model, saves memories in two workspaces through
// the conversation, checks what retrieval ranks first and that the other
// workspace stays out, that the injection preview keeps to its budget, that
// memories survive a reload, that a deleted memory leaves retrieval, and that
// the page works with the server gone. Saves a screenshot as an artifact
// ($MEMTIDE_ARTIFACTS, default target/artifacts/playground.png).
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdir, readFile } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import { launchChromium } from "./chromium.mjs";
import { startServer } from "../../www/serve.mjs";

const repo = fileURLToPath(new URL("../../", import.meta.url));
const modelDir = process.env.MEMTIDE_MODEL_DIR ??
  execFileSync("bash", ["scripts/fetch-model.sh"], { cwd: repo, encoding: "utf8" }).trim().split("\n").pop();
const artifacts = process.env.MEMTIDE_ARTIFACTS ?? `${repo}target/artifacts`;

const SISTER = "My sister's birthday is on the ninth of March.";
const FERNS = "I water the ferns every Sunday morning.";
const REPORT = "The quarterly report is due on the ninth of March.";
const QUESTION = "When is my sister's birthday?";

let server;
let browser;

before(async () => {
  server = await startServer({ port: 0, modelDir });
  browser = await launchChromium();
});

after(async () => {
  await browser?.close();
  await server?.close();
});

/** Waits until the page's model status says hybrid retrieval. */
async function untilHybrid(page) {
  await page.waitForSelector('#model[data-mode="hybrid"]', { timeout: 120_000 });
}

/** Types a message and sends it with Enter; resolves to its saved outcome. */
async function say(page, text) {
  const index = await page.locator(".message").count();
  await page.fill("#draft", text);
  await page.press("#draft", "Enter");
  const outcome = await page.waitForFunction((i) => {
    const saved = document.querySelectorAll(".message .saved")[i];
    return saved && saved.dataset.outcome !== "none" && saved.dataset.outcome;
  }, index);
  return outcome.jsonValue();
}

/** Waits until the inspector lists exactly these memory texts (in any order). */
async function untilRows(page, texts) {
  const wanted = JSON.stringify([...texts].sort());
  await page.waitForFunction((w) => JSON.stringify(
    [...document.querySelectorAll("#items tr[data-id] .text")].map((c) => c.textContent).sort()) === w, wanted);
}

/** Types `text` as a draft and resolves to the retrieval hits shown for it. */
async function hitsFor(page, text) {
  await page.fill("#draft", text);
  await page.waitForFunction((t) => document.querySelector("#hits").dataset.query === t, text);
  return page.$$eval("#hits .hit", (hits) => hits.map((hit) => ({
    text: hit.querySelector(".text").textContent,
    why: hit.querySelector(".why")?.textContent ?? "",
    semantic: hit.querySelector(".bar.semantic").getAttribute("aria-label"),
  })));
}

/** The injection preview's block and figures. */
const injection = (page) => page.$eval("#block", (block) => ({
  text: block.textContent, tokens: Number(block.dataset.tokens), budget: Number(block.dataset.budget),
  used: Number(block.dataset.used), dropped: document.querySelectorAll("#dropped li[data-id]").length,
}));

/** Moves the budget slider and waits for the preview to follow. */
async function setBudget(page, tokens) {
  await page.locator("#budget").fill(String(tokens));
  await page.waitForFunction((b) => document.querySelector("#block").dataset.budget === String(b), tokens);
  return injection(page);
}

test("the server serves the page, the package and the model, and nothing outside them", async () => {
  const status = async (path) => (await fetch(new URL(path, server.url))).status;
  const page = await fetch(server.url);
  assert.equal(page.headers.get("content-type"), "text/html; charset=utf-8");
  assert.match(await page.text(), /<title>memtide playground<\/title>/);
  const wasm = await fetch(new URL("/memtide/wasm/memtide_bg.wasm", server.url));
  assert.equal(wasm.headers.get("content-type"), "application/wasm", "streaming compilation needs the wasm type");
  await wasm.arrayBuffer();
  assert.equal(await status("/model/tokenizer.json"), 200);
  for (const escape of ["/%2e%2e/package.json", "/memtide/..%2f..%2fCargo.toml", "/model/%2e%2e%2f%2e%2e%2fetc/passwd",
    "/..%5c..%5cCargo.toml", "/index.html%00.js", "/memtide/", "/missing.js", "/%E0%A4%A"]) {
    assert.equal(await status(escape), 404, escape);
  }
});

test("without the model the page says it is lexical-only and still retrieves", async () => {
  const context = await browser.newContext();
  await context.route("**/model/**", (route) => route.abort());
  const page = await context.newPage();
  await page.goto(server.url);
  await page.waitForSelector('#model[data-mode="lexical"]');
  await page.waitForFunction(() => document.querySelector("#mode").textContent.includes("could not be loaded"));
  assert.match(await page.textContent("#mode"), /^Lexical-only \(BM25\)/);
  await page.fill("#userId", "bo");
  assert.equal(await say(page, FERNS), "added");
  const hits = await hitsFor(page, "when do I water the ferns?");
  assert.equal(hits[0].text, FERNS);
  assert.equal(hits[0].semantic, "semantic —", "no semantic score without the model");
  await context.close();
});

test("the inspector: filter, edit, pin, reject and approve, erase, export and import; keyboard first", async () => {
  const context = await browser.newContext({ acceptDownloads: true });
  const page = await context.newPage();
  const errors = [];
  page.on("pageerror", (error) => errors.push(String(error)));
  await page.goto(server.url);
  await page.keyboard.press("Tab");
  assert.equal(await page.evaluate(() => document.activeElement.className), "skip", "the first Tab reaches the skip link");
  await page.keyboard.press("Enter");
  assert.equal(await page.evaluate(() => document.activeElement.id), "draft", "which moves to the message box");
  await untilHybrid(page);

  const THERMOSTAT = "The greenhouse thermostat is set to 18 degrees.";
  const WARMER = "The greenhouse thermostat is set to 21 degrees.";
  const BASIL = "We repotted the basil on Monday.";
  await page.fill("#userId", "cy");
  await page.fill("#workspaceId", "lab");
  await page.selectOption("#kind", "fact");
  await page.fill("#tags", "garden");
  assert.equal(await say(page, THERMOSTAT), "added");
  await page.selectOption("#kind", "episodic");
  await page.fill("#tags", "");
  assert.equal(await say(page, BASIL), "added");
  assert.equal(await say(page, "The alarm code is <private>5521</private> and the panel is by the north door."), "added");
  assert.match(await page.textContent(".message:last-child .saved"), /<private> part left out/);
  const ALARM = "The alarm code is and the panel is by the north door.";
  await untilRows(page, [THERMOSTAT, BASIL, ALARM]);

  // Filters.
  await page.selectOption("#filterKind", "fact");
  await untilRows(page, [THERMOSTAT]);
  await page.selectOption("#filterKind", "");
  await page.fill("#filterTag", "garden");
  await untilRows(page, [THERMOSTAT]);
  await page.fill("#filterTag", "");
  await untilRows(page, [THERMOSTAT, BASIL, ALARM]);

  // Edit with the keyboard: Ctrl+Enter saves; retrieval sees the new text.
  const row = (text) => page.locator("#items tr", { hasText: text });
  await row(THERMOSTAT).locator('button[data-action="edit"]').click();
  await page.fill("#items textarea", WARMER);
  await page.press("#items textarea", "Control+Enter");
  await untilRows(page, [WARMER, BASIL, ALARM]);
  assert.equal((await hitsFor(page, "greenhouse temperature"))[0].text, WARMER);

  // Pinned memories come first in the block, whatever the query.
  await row(BASIL).locator('button[data-action="pin"]').click();
  await row(BASIL).locator('button[data-action="unpin"]').waitFor();
  await page.check("#filterPinned");
  await untilRows(page, [BASIL]);
  await page.uncheck("#filterPinned");
  await hitsFor(page, "thermostat degrees");
  const block = (await injection(page)).text;
  assert.ok(block.includes(BASIL) && block.indexOf(BASIL) < block.indexOf(WARMER), block);

  // Rejected memories leave retrieval; approving brings them back.
  await untilRows(page, [WARMER, BASIL, ALARM]);
  await row(WARMER).locator('button[data-action="reject"]').click();
  await row(WARMER).locator('button[data-action="approve"]').waitFor();
  assert.ok(!(await hitsFor(page, "greenhouse thermostat")).some((hit) => hit.text === WARMER));
  await page.selectOption("#filterStatus", "rejected");
  await untilRows(page, [WARMER]);
  await row(WARMER).locator('button[data-action="approve"]').click();
  await page.selectOption("#filterStatus", "");
  await untilRows(page, [WARMER, BASIL, ALARM]);
  assert.equal((await hitsFor(page, "greenhouse thermostat degrees"))[0].text, WARMER);

  // A project memory: seen from its project, not from the workspace.
  const TRAYS = "Seedling trays go under the grow light.";
  await page.fill("#projectId", "seedlings");
  await page.check('input[name=level][value="project"]');
  assert.equal(await say(page, TRAYS), "added");
  await page.check('input[name=level][value="workspace"]');
  await untilRows(page, [WARMER, BASIL, ALARM, TRAYS]);
  assert.equal(await row(TRAYS).locator("td:nth-child(3)").textContent(), "lab › seedlings");
  assert.equal((await hitsFor(page, "where do the seedling trays go?"))[0].text, TRAYS);
  await page.fill("#projectId", "");
  assert.ok(!(await hitsFor(page, "seedling trays and the grow light")).some((hit) => hit.text === TRAYS));

  // Export, erase (one, then the workspace, both confirmed), import the file back.
  const [download] = await Promise.all([page.waitForEvent("download"), page.click("#export")]);
  const exported = await readFile(await download.path(), "utf8");
  for (const text of [WARMER, BASIL, ALARM, TRAYS]) assert.ok(exported.includes(text));
  assert.ok(!exported.includes("5521"), "the private span never reached the store");
  page.once("dialog", (dialog) => dialog.accept());
  await row(ALARM).locator('button[data-action="erase"]').click();
  await untilRows(page, [WARMER, BASIL, TRAYS]);
  page.once("dialog", (dialog) => dialog.accept());
  await page.click("#eraseAll");
  await untilRows(page, []);
  await page.setInputFiles("#importFile", { name: "export.json", mimeType: "application/json", buffer: Buffer.from(exported) });
  await untilRows(page, [WARMER, BASIL, ALARM, TRAYS]);
  assert.match(await page.textContent("#toast"), /Imported: 4 added/);
  assert.deepEqual(errors, []);
  await context.close();
});

test("save, retrieve, inject within budget, reload, delete, offline: the playground in Chromium", async () => {
  const context = await browser.newContext({ viewport: { width: 1440, height: 1100 } });
  const page = await context.newPage();
  const errors = [];
  page.on("pageerror", (error) => errors.push(String(error)));
  const started = Date.now();
  await page.goto(server.url);
  await page.waitForSelector('#model[data-mode="lexical"], #model[data-mode="embedding"], #model[data-mode="hybrid"]');
  const usable = Date.now() - started;
  await untilHybrid(page);
  console.log(`playground: usable (lexical) after ${usable} ms, hybrid after ${Date.now() - started} ms (first visit)`);
  assert.match(await page.textContent("#mode"), /Hybrid retrieval/);

  await page.fill("#userId", "ann");
  await page.fill("#workspaceId", "home");
  assert.equal(await page.isChecked("#autoCapture"), true, "automatic capture is on by default");
  assert.equal(await say(page, SISTER), "added");
  assert.equal(await say(page, FERNS), "added");
  assert.equal(await say(page, "My bank PIN is 4471 <no-memory>"), "skipped");
  await page.fill("#workspaceId", "work");
  assert.equal(await say(page, REPORT), "added");
  await untilRows(page, [REPORT]);
  await page.fill("#workspaceId", "home");
  await untilRows(page, [SISTER, FERNS]);

  const hits = await hitsFor(page, QUESTION);
  assert.equal(hits[0].text, SISTER, "the right memory ranks first");
  assert.ok(!hits.some((hit) => hit.text === REPORT), "the other workspace's memory is absent");
  assert.match(hits[0].why, /Passed: scope userId=ann, workspaceId=home/);
  assert.match(hits[0].semantic, /^semantic 0\.\d+$/, "the breakdown has the semantic part");

  // Injection preview: everything fits a large budget; a smaller one leaves a memory out and keeps to it.
  const roomy = await setBudget(page, 1000);
  assert.equal(roomy.used, 2);
  assert.equal(roomy.dropped, 0);
  assert.ok(roomy.text.includes(SISTER) && roomy.text.includes(FERNS));
  const budget = Math.floor((roomy.tokens - 1) / 10) * 10;
  const tight = await setBudget(page, budget);
  assert.ok(tight.tokens <= budget, `${tight.tokens} tokens within a budget of ${budget}`);
  assert.ok(tight.dropped >= 1, "the budget left a memory out");
  assert.equal(tight.used + tight.dropped, 2);
  assert.equal(await page.$eval("#budgetValue", (o) => o.value), String(budget));

  // A reload keeps the memories (IndexedDB) and the settings.
  await page.waitForSelector("html[data-offline-ready]");
  const reloaded = Date.now();
  await page.reload();
  await untilHybrid(page);
  console.log(`playground: hybrid ${Date.now() - reloaded} ms after a reload (model from the Cache API)`);
  assert.equal(await page.inputValue("#workspaceId"), "home");
  await untilRows(page, [SISTER, FERNS]);
  assert.equal((await hitsFor(page, QUESTION))[0].text, SISTER);

  // Delete through the inspector: gone from the list and from retrieval.
  await page.locator("#items tr", { hasText: SISTER }).locator('button[data-action="delete"]').click();
  await untilRows(page, [FERNS]);
  const after = await hitsFor(page, `${QUESTION} Is it soon?`);
  assert.ok(!after.some((hit) => hit.text === SISTER), "the deleted memory is not retrieved");
  await page.fill("#draft", QUESTION);
  await mkdir(artifacts, { recursive: true });
  await page.screenshot({ path: `${artifacts}/playground.png`, fullPage: true });
  console.log(`screenshot: ${artifacts}/playground.png`);

  // With the server gone, the page still loads (service worker) and answers from IndexedDB.
  await server.close();
  await page.reload();
  await untilHybrid(page);
  await untilRows(page, [FERNS]);
  assert.equal((await hitsFor(page, "plants watering day"))[0].text, FERNS);
  assert.deepEqual(errors, []);
  await context.close();
});
