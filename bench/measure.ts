/**
 * Timing and memory measurement. Every number the harness reports comes from these functions; nothing is scaled,
 * rounded before comparison, or filled in.
 */
import { performance } from "node:perf_hooks";

type GcFunction = () => void;

/** `global.gc` from `--expose-gc`; the harness refuses to report heap numbers without it. */
export function requireGc(): GcFunction {
  const gc = (globalThis as { gc?: GcFunction }).gc;
  if (typeof gc !== "function") {
    throw new Error(
      "run with node --expose-gc (npm run bench does): heap after build needs a forced collection",
    );
  }
  return gc;
}

/**
 * Memory the process holds for JavaScript objects: the V8 heap in use plus memory outside it that objects own
 * (typed-array backing stores above a small size live there, so a typed-array index would look free otherwise).
 * Node counts `SharedArrayBuffer`s (a build's postings) in `arrayBuffers` but not in `external`, and ordinary
 * array buffers in both: the larger of the two is taken (it misses at most the smaller of the shared bytes and the
 * external memory that is not an array buffer).
 */
export function usedMemory(): number {
  const usage = process.memoryUsage();
  return usage.heapUsed + Math.max(usage.external, usage.arrayBuffers);
}

/** Collects garbage until the used memory stops shrinking (a single gc() can leave weak/finalizable objects). */
export function settle(gc: GcFunction): number {
  let previous = Number.POSITIVE_INFINITY;
  let current = usedMemory();
  for (let round = 0; round < 5 && current < previous - 64 * 1024; round++) {
    previous = current;
    gc();
    current = usedMemory();
  }
  gc();
  return usedMemory();
}

/**
 * Builds once while measuring time and the memory retained by the result: settle, build, settle again; the
 * difference is what the built structure keeps alive (inputs created before the first settle are not counted).
 */
export async function measureBuild<T>(
  gc: GcFunction,
  build: () => T | Promise<T>,
): Promise<{ value: T; milliseconds: number; retainedBytes: number }> {
  const before = settle(gc);
  const started = performance.now();
  const value = await build();
  const milliseconds = performance.now() - started;
  const after = settle(gc);
  return { value, milliseconds, retainedBytes: after - before };
}

/** Latency statistics of one measured series. */
export type LatencyStats = {
  /** Number of measured operations. */
  count: number;
  p50: number;
  p99: number;
  mean: number;
  /** Operations per second over the measured series (count ÷ summed latency). */
  throughput: number;
};

/** Nearest-rank percentile of already sorted values. */
export function percentile(sorted: readonly number[], fraction: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.ceil(fraction * sorted.length);
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank - 1))]!;
}

export function latencyStats(latencies: readonly number[]): LatencyStats {
  const sorted = [...latencies].sort((left, right) => left - right);
  const total = latencies.reduce((sum, value) => sum + value, 0);
  return {
    count: latencies.length,
    p50: percentile(sorted, 0.5),
    p99: percentile(sorted, 0.99),
    mean: latencies.length === 0 ? Number.NaN : total / latencies.length,
    throughput: total === 0 ? Number.NaN : (latencies.length * 1000) / total,
  };
}

/**
 * Runs `operation` on the queries in order, timing each call, until all ran or `budgetMilliseconds` of measured
 * time is spent (at least `minimum` calls). Returns the per-call latencies in milliseconds and the results.
 */
export async function measureSeries<Q, R>(
  queries: readonly Q[],
  operation: (query: Q) => R | Promise<R>,
  budgetMilliseconds: number,
  minimum: number,
): Promise<{ latencies: number[]; results: R[] }> {
  const latencies: number[] = [];
  const results: R[] = [];
  let spent = 0;
  for (const query of queries) {
    if (spent >= budgetMilliseconds && latencies.length >= minimum) break;
    const started = performance.now();
    let result = operation(query);
    // Only asynchronous operations are awaited, so a synchronous one is timed without a microtask turn.
    if (result instanceof Promise) result = await result;
    const elapsed = performance.now() - started;
    latencies.push(elapsed);
    results.push(result as R);
    spent += elapsed;
  }
  return { latencies, results };
}
