/**
 * What the main thread allocates over a window of the update scenario (`bench/updates.ts --sample-allocations`):
 * V8's sampling heap profiler, told to keep the samples of objects collected since (young and old), so the
 * report is everything allocated, garbage included, by the allocating function. Set beside `--trace-gc-nvp`
 * (`allocated=`, `promoted=`, `semi_space_copied=` per scavenge), it says what feeds the young generation's
 * collections and what survives them.
 */
import { Session } from "node:inspector";

/** The parts of a sampling heap profile (`HeapProfiler.stopSampling`) read here. */
type SamplingNode = {
  callFrame: { functionName: string; url: string; lineNumber: number };
  selfSize: number;
  id: number;
  children: SamplingNode[];
};
type SamplingProfile = { head: SamplingNode; samples: { size: number; nodeId: number }[] };

/** Allocated bytes (sampled: each sample stands for about `samplingInterval` bytes) by allocating function. */
export type AllocationReport = { totalBytes: number; sites: { site: string; bytes: number }[] };

/** The sampling heap profiler over a window (`start()` … `stop()`), all objects counted, collected ones too. */
export class AllocationSampler {
  private readonly session = new Session();

  private post<Result>(method: string, parameters?: object): Promise<Result> {
    return new Promise((resolve, reject) =>
      this.session.post(method, parameters, (error, result) =>
        error ? reject(error) : resolve(result as Result),
      ),
    );
  }

  /** Starts sampling about every `samplingInterval` allocated bytes. */
  async start(samplingInterval = 4096): Promise<void> {
    this.session.connect();
    await this.post("HeapProfiler.enable");
    await this.post("HeapProfiler.startSampling", {
      samplingInterval,
      includeObjectsCollectedByMajorGC: true,
      includeObjectsCollectedByMinorGC: true,
    });
  }

  /** Stops, and sums the samples by the deepest frame of the library or the benchmark (else the leaf). */
  async stop(): Promise<AllocationReport> {
    const { profile } = await this.post<{ profile: SamplingProfile }>("HeapProfiler.stopSampling");
    await this.post("HeapProfiler.disable");
    this.session.disconnect();
    const totals = new Map<string, number>();
    let totalBytes = 0;
    const visit = (node: SamplingNode, owner: string | null): void => {
      const frame = node.callFrame;
      const place = frame.url.match(/\/(src|bench)\/(.*)$/);
      const here = place
        ? `${frame.functionName || "(anonymous)"} ${place[1]}/${place[2]}:${frame.lineNumber + 1}`
        : null;
      // The deepest library or benchmark frame owns what its callees (V8 builtins, Node internals) allocate.
      const leaf = `${frame.functionName || "(anonymous)"} ${frame.url.split("/").pop()}`;
      const site = here ?? (owner && process.env.ALLOCATION_LEAVES ? `${owner} > ${leaf}` : owner) ?? leaf;
      if (node.selfSize > 0) {
        totals.set(site, (totals.get(site) ?? 0) + node.selfSize);
        totalBytes += node.selfSize;
      }
      for (const child of node.children) visit(child, here ?? owner);
    };
    visit(profile.head, null);
    const sites = [...totals]
      .map(([site, bytes]) => ({ site, bytes }))
      .sort((left, right) => right.bytes - left.bytes);
    return { totalBytes, sites };
  }
}

/** The report as lines: the total, then the `limit` largest sites. */
export function printAllocations(report: AllocationReport, limit = 20): string {
  const kib = (bytes: number) => `${(bytes / 1024).toFixed(0).padStart(8)} KiB`;
  return [
    `allocated on the main thread (sampled): ${kib(report.totalBytes)}`,
    ...report.sites.slice(0, limit).map(({ site, bytes }) => `${kib(bytes)}  ${site}`),
  ].join("\n");
}
