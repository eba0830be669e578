// Writes a full run's table into docs/benchmarks.md, between two markers:
// the rest of that file (how to run each section, what it measures, the
// figures per section and their history) is written by hand.
import fs from "node:fs";
import path from "node:path";
import { REPO_DIR } from "./paths.mjs";

const load = (l) => l.map((x) => x.toFixed(2)).join(" / ");

/** A 1-minute load average at or above this share of the cores counts as a busy machine. */
const BUSY_LOAD_PER_CORE = 0.5;

/** What the doc says about the machine's load during the run. */
function loadSentence(m) {
  const busy = Math.max(m.loadBefore[0], m.loadAfter[0]) >= BUSY_LOAD_PER_CORE * m.cores;
  const figures = `load average (1/5/15 min) ${load(m.loadBefore)} when the run started and
${load(m.loadAfter)} when it ended, on ${m.cores} cores`;
  return busy
    ? `**The machine was shared and busy**: ${figures}; expect ±20–30 %
and re-run on a quiet machine before drawing fine conclusions.`
    : `The machine was quiet: ${figures}.`;
}

/** The native section's report, when the results have one. */
function nativeParagraph(results) {
  if (!results.native) return "";
  return `Native figures (section 6, no peer), as \`bench_native\` printed them:

\`\`\`text
${results.native.report.trimEnd()}
\`\`\`

`;
}

/** When, at which commit and under which load the figures were taken. */
function runsParagraph(results) {
  const m = results.machine;
  const machine = `${m.cpu} (${m.cores} cores), ${m.memoryGiB} GiB, Node ${m.node}`;
  if (!results.runs) return `${m.date.slice(0, 10)}, ${machine}, commit ${m.commit}.\n${loadSentence(m)} `;
  const runs = results.runs.map((run) =>
    `- ${run.sections.join(", ")}: ${run.date.slice(0, 10)}, commit ${run.commit}. ${loadSentence(run)}`);
  return `${machine}, in ${runs.length} runs of different sections:\n\n${runs.join("\n")}\n\n`;
}

/** The markers around the part of docs/benchmarks.md a full run rewrites. */
export const LATEST_BEGIN = "<!-- latest-full-run:begin (written by bench/lib/docs.mjs) -->";
export const LATEST_END = "<!-- latest-full-run:end -->";

/** The latest full run's block: when and where it ran, its repetitions, its table. */
export function latestRunBlock(results, table) {
  const p = results.profileSettings;
  return `${runsParagraph(results)}Repetitions: ${p.embedRuns} latency runs,
${p.loads} loads, ${p.throughputRuns} throughput passes over ${p.sentenceCount} sentences, ${p.queries} queries per
retrieval size, ${p.builds} lexical builds, ${p.coldRuns} cold starts.

${table}

Ratios are memtide ÷ peer; the parenthesis says which direction is better.

${nativeParagraph(results)}`.trimEnd();
}

/**
 * `doc` with the text between its latest-run markers replaced by `block`.
 * The rest of the file is written by hand, so a doc without both markers,
 * in order and once each, is refused rather than rewritten.
 */
export function replaceLatestRun(doc, block) {
  const begin = doc.indexOf(LATEST_BEGIN);
  const end = doc.indexOf(LATEST_END);
  const once = (marker, at) => at >= 0 && doc.indexOf(marker, at + marker.length) < 0;
  if (!once(LATEST_BEGIN, begin) || !once(LATEST_END, end) || end < begin) {
    throw new Error(`docs/benchmarks.md must hold "${LATEST_BEGIN}" and then "${LATEST_END}", once each`);
  }
  return `${doc.slice(0, begin + LATEST_BEGIN.length)}\n\n${block}\n\n${doc.slice(end)}`;
}

/** Writes the latest full run into docs/benchmarks.md, between its markers. */
export function writeDocs(results, table) {
  const file = path.join(REPO_DIR, "docs", "benchmarks.md");
  fs.writeFileSync(file, replaceLatestRun(fs.readFileSync(file, "utf8"), latestRunBlock(results, table)));
}
