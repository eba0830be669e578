// The playground (www/) in headless Debian Chromium driven by playwright-core,
// served by www/serve.mjs as the main job serves it. Drives the page as a
// user would: waits for the model, saves memories in two workspaces through
// the conversation, checks what retrieval ranks first and that the other
// workspace stays out, that the injection preview keeps to its budget, that
// memories survive a reload, that a deleted memory leaves retrieval, and that
// the page works with the server gone. Saves a screenshot as an artifact
// ($MNEMO_ARTIFACTS, default target/artifacts/playground.png).
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdir } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";
import { startServer } from "../../www/serve.mjs";

const repo = fileURLToPath(new URL("../../", import.meta.url));
const modelDir = process.env.MNEMO_MODEL_DIR ??
  execFileSync("bash", ["scripts/fetch-model.sh"], { cwd: repo, encoding: "utf8" }).trim().split("\n").pop();
const artifacts = process.env.MNEMO_ARTIFACTS ?? `${repo}target/artifacts`;

const SISTER = "My sister's birthday is on the ninth of March.";
const FERNS = "I water the ferns every Sunday morning.";
const REPORT = "The quarterly report is due on the ninth of March.";
const QUESTION = "When is my sister's birthday?";

let server;
let browser;

before(async () => {
  server = await startServer({ port: 0, modelDir });
  browser = await chromium.launch({
    executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium",
    args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
      "--disable-sync", "--no-first-run", "--disable-quic"],
  });
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
  assert.match(await page.text(), /<title>mnemo playground<\/title>/);
  const wasm = await fetch(new URL("/mnemo/wasm/mnemo_bg.wasm", server.url));
  assert.equal(wasm.headers.get("content-type"), "application/wasm", "streaming compilation needs the wasm type");
  await wasm.arrayBuffer();
  assert.equal(await status("/model/tokenizer.json"), 200);
  for (const escape of ["/%2e%2e/package.json", "/mnemo/..%2f..%2fCargo.toml", "/model/%2e%2e%2f%2e%2e%2fetc/passwd",
    "/..%5c..%5cCargo.toml", "/index.html%00.js", "/mnemo/", "/missing.js", "/%E0%A4%A"]) {
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

test("save, retrieve, inject within budget, reload, delete, offline: the playground in Chromium", async () => {
  const context = await browser.newContext({ viewport: { width: 1440, height: 1100 } });
  const page = await context.newPage();
  const errors = [];
  page.on("pageerror", (error) => errors.push(String(error)));
  await page.goto(server.url);
  await untilHybrid(page);
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
  await page.reload();
  await untilHybrid(page);
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
