// Timing and summary helpers: every figure is a median (or percentile) of
// repeated runs after warm-up runs.

export function percentile(samples, p) {
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((sorted.length - 1) * p / 100))];
}

export const median = (samples) => percentile(samples, 50);

/** `runs` timings (ms) of `work`, after `warmup` untimed calls; `work` may be async. */
export async function sampleMs(work, { warmup, runs }) {
  for (let i = 0; i < warmup; i++) await work(i);
  const samples = [];
  for (let i = 0; i < runs; i++) {
    const start = performance.now();
    await work(i);
    samples.push(performance.now() - start);
  }
  return samples;
}

/** Synchronous variant of `sampleMs` for sub-millisecond calls (no await between runs). */
export function sampleMsSync(work, { warmup, runs }) {
  for (let i = 0; i < warmup; i++) work(i);
  const samples = [];
  for (let i = 0; i < runs; i++) {
    const start = performance.now();
    work(i);
    samples.push(performance.now() - start);
  }
  return samples;
}

export function cosine(a, b) {
  let dot = 0, na = 0, nb = 0;
  for (let i = 0; i < a.length; i++) {
    dot += a[i] * b[i];
    na += a[i] * a[i];
    nb += b[i] * b[i];
  }
  return dot / Math.sqrt(na * nb);
}

export const MIB = 1024 * 1024;

/** Runs the garbage collector when node runs with --expose-gc. */
export function collectGarbage() {
  globalThis.gc?.();
  globalThis.gc?.();
}
