/**
 * Bytes a synchronous call allocates on the JavaScript heap, garbage included: V8's sampling heap profiler (through
 * `node:inspector`, whose session answers synchronously on the calling thread) with a small sampling interval, told
 * to keep the samples of objects collected meanwhile. Sampled, so an estimate: tests compare it with bounds far from
 * what a regression allocates (an object per term or per document), never with exact sizes. Typed arrays' contents
 * outside the heap (larger than 64 bytes) are not counted: they are not what fills the young generation.
 */
import { Session } from "node:inspector";

type SamplingNode = { callFrame: { url: string }; selfSize: number; children: SamplingNode[] };

/** Samples `run`'s allocations; returns its result and the estimated bytes. */
export function heapBytesAllocatedBy<Result>(run: () => Result): { result: Result; bytes: number } {
  const session = new Session();
  session.connect();
  const post = (method: string, parameters?: object): unknown => {
    let answer: unknown;
    let failure: Error | null = null;
    session.post(method, parameters, (error, result) => {
      failure = error;
      answer = result;
    });
    if (failure) throw failure;
    return answer;
  };
  try {
    post("HeapProfiler.enable");
    post("HeapProfiler.startSampling", {
      samplingInterval: 64,
      includeObjectsCollectedByMajorGC: true,
      includeObjectsCollectedByMinorGC: true,
    });
    const result = run();
    const { profile } = post("HeapProfiler.stopSampling") as { profile: { head: SamplingNode } };
    let bytes = 0;
    const visit = (node: SamplingNode): void => {
      // The profiler's own answer to the inspector call that stops it is not the run's.
      if (node.callFrame.url === "node:inspector") return;
      bytes += node.selfSize;
      for (const child of node.children) visit(child);
    };
    visit(profile.head);
    return { result, bytes };
  } finally {
    session.disconnect();
  }
}

/**
 * The fewest bytes `run` allocated over `attempts` runs, each on what `prepare` made fresh for it (prepared outside
 * the sampling). A run can also pay for work that is not its own (a function compiled to another tier, inline-cache
 * feedback, a concurrent compiler's handles): the least of a few runs is what the code itself allocates, and a
 * regression that allocates per term or per document still shows in every run.
 */
export function fewestHeapBytesAllocated<Prepared, Result>(
  attempts: number,
  prepare: () => Prepared,
  run: (prepared: Prepared) => Result,
): { result: Result; bytes: number } {
  let fewest: { result: Result; bytes: number } | null = null;
  for (let attempt = 0; attempt < attempts; attempt++) {
    const prepared = prepare();
    const measured = heapBytesAllocatedBy(() => run(prepared));
    if (fewest === null || measured.bytes < fewest.bytes) fewest = measured;
  }
  if (fewest === null) throw new RangeError("fewestHeapBytesAllocated needs at least one attempt");
  return fewest;
}
