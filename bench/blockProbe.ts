/**
 * Event-loop readings of the update scenario (`bench/updates.ts`): the longest block over a period, read four ways
 * ({@link BlockProbe}), and, with `--profile-blocks`, what ran inside each block over 20 ms ({@link BlockProfiler}:
 * the in-process sampling profiler's samples that fall inside the block, grouped by the deepest frame of the
 * library, of the benchmark, or V8's collector), so a block can be told apart as the library's code, the
 * collector, or the benchmark's own bookkeeping.
 */
import { openSync, readSync } from "node:fs";
import { Session } from "node:inspector";
import { constants, monitorEventLoopDelay, PerformanceObserver } from "node:perf_hooks";

/** Event-loop blocks over a period, read several ways: the longest of each, and how many went over the target. */
export type BlockReadings = {
  /** Longest delay seen by `monitorEventLoopDelay` (1 ms resolution; wall clock). */
  histogramMilliseconds: number;
  /** Longest gap between 1 ms interval ticks (wall clock: on a loaded machine it counts waits for a core). */
  timerGapMilliseconds: number;
  /**
   * Most CPU time the main thread itself ran between two ticks (Linux `/proc/thread-self/schedstat`: excludes
   * waiting for a core and the collector's helper threads; includes collector pauses on the main thread). The
   * kernel updates that figure at its scheduler tick and at context switches, so it moves in steps of the tick
   * (4 ms here, `CONFIG_HZ=250`): a 6 ms block reads 4 or 8 ms. Where that file is missing, the process CPU time
   * (all threads), an upper bound.
   */
  mainThreadCpuMilliseconds: number;
  /** Longest garbage-collection pause of the main thread (Node's `gc` performance entries). */
  collectorPauseMilliseconds: number;
  /**
   * How many tick gaps were longer than {@link LOGGED_BLOCK_MS} (the target): by wall clock, and by the main
   * thread's CPU time in them. (The time the thread waited for a core cannot be told per gap on this machine: the
   * run-queue delay of `schedstat` is added one scheduling event late, and in a busy loop at load 14 most gaps over
   * 1 ms came with no preemption the guest kernel saw, so the vCPU itself was descheduled by the host.)
   */
  overTarget: { byTimerGap: number; byCpu: number };
  /** The five longest tick gaps, longest first: wall clock, and the main thread's CPU in them. */
  longestGaps: { gapMs: number; cpuMs: number }[];
  /** Ticks seen (about one per millisecond when nothing blocks). */
  ticks: number;
};

/** Node's `gc` entry kinds, named. */
const GC_KINDS: Record<number, string> = {
  [constants.NODE_PERFORMANCE_GC_MINOR]: "minor",
  [constants.NODE_PERFORMANCE_GC_MAJOR]: "major",
  [constants.NODE_PERFORMANCE_GC_INCREMENTAL]: "incremental marking",
  [constants.NODE_PERFORMANCE_GC_WEAKCB]: "weak callbacks",
};

/**
 * The calling thread's `/proc/thread-self/schedstat`, kept open and read again from its start into one buffer, and
 * its first number parsed from the bytes: the probe reads it every millisecond, and a string per read (as
 * `readFileSync(…, "utf8").split(" ")` made) was a few hundred bytes a tick in the young generation whose
 * collections it measures (about 2 MB per compaction at 100k). Null where the file cannot be opened.
 */
const schedstat: { descriptor: number; buffer: Buffer } | null = (() => {
  try {
    return { descriptor: openSync("/proc/thread-self/schedstat", "r"), buffer: Buffer.alloc(128) };
  } catch {
    return null;
  }
})();

/** CPU nanoseconds the main thread has run (Linux), or null where the kernel does not say. */
export function threadCpuNanoseconds(): number | null {
  if (!schedstat) return null;
  try {
    const length = readSync(schedstat.descriptor, schedstat.buffer, 0, schedstat.buffer.length, 0);
    let nanoseconds = 0;
    for (let at = 0; at < length; at++) {
      const digit = schedstat.buffer[at]! - 48;
      if (digit < 0 || digit > 9) break;
      nanoseconds = nanoseconds * 10 + digit;
    }
    return nanoseconds;
  } catch {
    return null;
  }
}

/** Microseconds of the monotonic clock the V8 profiler stamps its samples with. */
function monotonicMicroseconds(): number {
  return Number(process.hrtime.bigint() / 1000n);
}

/** Blocks longer than this are listed by `--log-blocks` (the target's bound). */
export const LOGGED_BLOCK_MS = 20;

/** One main-thread CPU block over {@link LOGGED_BLOCK_MS}. */
export type LongBlock = {
  phase: string;
  endedAtMs: number;
  /** The same instant on the profiler's clock. */
  endedAtMicroseconds: number;
  cpuMs: number;
  gapMs: number;
};

/** Watches the event loop from `start()` to `stop()` (see {@link BlockReadings}). */
export class BlockProbe {
  private readonly histogram = monitorEventLoopDelay({ resolution: 1 });
  private ticker: ReturnType<typeof setInterval> | null = null;
  private lastTick = 0;
  private lastThreadCpu: number | null = null;
  private gapsOver = 0;
  private cpuOver = 0;
  private ticks = 0;
  /** The five longest gaps so far, longest first. */
  private longest: { gapMs: number; cpuMs: number }[] = [];
  private lastProcessCpu = process.cpuUsage();
  private maxGap = 0;
  private maxCpu = 0;
  private phase = "";
  private maxPause = 0;
  /** Every block over the listing threshold since the last {@link logLongBlocks}. */
  readonly longBlocks: LongBlock[] = [];
  /** Collector pauses of the main thread over {@link LOGGED_BLOCK_MS} (Node's `gc` performance entries). */
  readonly longPauses: { phase: string; startedAtMs: number; durationMs: number; kind: string }[] = [];
  private readonly collector = new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) {
      this.maxPause = Math.max(this.maxPause, entry.duration);
      if (entry.duration > LOGGED_BLOCK_MS) {
        const detail = (entry as { detail?: { kind?: number } }).detail;
        this.longPauses.push({
          phase: this.phase,
          startedAtMs: entry.startTime,
          durationMs: entry.duration,
          kind: GC_KINDS[detail?.kind ?? 0] ?? String(detail?.kind),
        });
      }
    }
  });

  /**
   * @param markPhases print each phase change on stdout too, to place `--trace-gc` lines (also on stdout).
   * @param listedOverMs blocks kept for {@link logLongBlocks}: over this many milliseconds of main-thread CPU
   * (`--list-blocks-over`; the counts of {@link BlockReadings.overTarget} stay at the target's 20 ms).
   */
  constructor(
    private readonly markPhases = false,
    private readonly listedOverMs = LOGGED_BLOCK_MS,
  ) {}

  start(phase = ""): void {
    this.setPhase(phase);
    this.histogram.reset();
    this.histogram.enable();
    this.maxGap = 0;
    this.maxCpu = 0;
    this.maxPause = 0;
    this.gapsOver = 0;
    this.cpuOver = 0;
    this.ticks = 0;
    this.longest = [];
    this.collector.observe({ entryTypes: ["gc"] });
    this.lastTick = performance.now();
    this.lastThreadCpu = threadCpuNanoseconds();
    this.lastProcessCpu = process.cpuUsage();
    this.ticker = setInterval(() => this.tick(), 1);
  }

  private tick(): void {
    const now = performance.now();
    const gap = now - this.lastTick;
    this.maxGap = Math.max(this.maxGap, gap);
    this.lastTick = now;
    const thread = threadCpuNanoseconds();
    this.ticks++;
    let cpuMs: number;
    if (thread !== null && this.lastThreadCpu !== null) {
      cpuMs = (thread - this.lastThreadCpu) / 1e6;
      this.lastThreadCpu = thread;
    } else {
      const cpu = process.cpuUsage(this.lastProcessCpu);
      cpuMs = (cpu.user + cpu.system) / 1000;
      this.lastProcessCpu = process.cpuUsage();
    }
    this.maxCpu = Math.max(this.maxCpu, cpuMs);
    if (gap > LOGGED_BLOCK_MS) this.gapsOver++;
    if (cpuMs > LOGGED_BLOCK_MS) this.cpuOver++;
    if (this.longest.length < 5 || gap > this.longest[this.longest.length - 1]!.gapMs) {
      this.longest.push({ gapMs: gap, cpuMs });
      this.longest.sort((left, right) => right.gapMs - left.gapMs);
      if (this.longest.length > 5) this.longest.pop();
    }
    if (cpuMs > this.listedOverMs)
      this.longBlocks.push({
        phase: this.phase,
        endedAtMs: now,
        endedAtMicroseconds: monotonicMicroseconds(),
        cpuMs,
        gapMs: gap,
      });
  }

  /** Prints the long blocks and collector pauses seen since the last call (stderr), then forgets them. */
  logLongBlocks(profile?: SampledProfile): void {
    for (const block of this.longBlocks) {
      console.error(
        `block ${block.cpuMs.toFixed(1)} ms CPU (${block.gapMs.toFixed(1)} ms wall) ending at ${block.endedAtMs.toFixed(0)} ms: ${block.phase}`,
      );
      if (profile) console.error(describeBlock(profile, block));
    }
    for (const pause of this.longPauses)
      console.error(
        `collector pause (${pause.kind}) ${pause.durationMs.toFixed(1)} ms from ${pause.startedAtMs.toFixed(0)} ms: ${pause.phase}`,
      );
    this.longBlocks.length = 0;
    this.longPauses.length = 0;
  }

  /** Names what runs from now on, for the list of long blocks. */
  setPhase(phase: string): void {
    this.phase = phase;
    if (this.markPhases) console.log(`# phase at ${performance.now().toFixed(0)} ms: ${phase}`);
  }

  stop(): BlockReadings {
    this.tick();
    if (this.ticker) clearInterval(this.ticker);
    this.histogram.disable();
    this.collector.disconnect();
    return {
      collectorPauseMilliseconds: this.maxPause,
      histogramMilliseconds: this.histogram.max / 1e6,
      timerGapMilliseconds: this.maxGap,
      mainThreadCpuMilliseconds: this.maxCpu,
      overTarget: { byTimerGap: this.gapsOver, byCpu: this.cpuOver },
      longestGaps: this.longest,
      ticks: this.ticks,
    };
  }
}

/** The parts of a V8 CPU profile (`Profiler.stop`) read here. */
export type SampledProfile = {
  nodes: {
    id: number;
    callFrame: { functionName: string; url: string; lineNumber: number };
    children?: number[];
  }[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
};

/** The in-process sampling profiler (`node:inspector`), for `--profile-blocks`. */
export class BlockProfiler {
  private readonly session = new Session();

  private post<Result>(method: string, parameters?: object): Promise<Result> {
    return new Promise((resolve, reject) =>
      this.session.post(method, parameters, (error, result) =>
        error ? reject(error) : resolve(result as Result),
      ),
    );
  }

  /** Starts sampling every `intervalMicroseconds`. */
  async start(intervalMicroseconds = 250): Promise<void> {
    this.session.connect();
    await this.post("Profiler.enable");
    await this.post("Profiler.setSamplingInterval", { interval: intervalMicroseconds });
    await this.post("Profiler.start");
  }

  async stop(): Promise<SampledProfile> {
    const { profile } = await this.post<{ profile: SampledProfile }>("Profiler.stop");
    this.session.disconnect();
    return profile;
  }
}

/** Where a sample's time goes: V8's own work by name, else the deepest frame of the library or the benchmark. */
function sampleOwner(
  parents: Map<number, number>,
  byId: Map<number, SampledProfile["nodes"][number]>,
  leaf: number,
): string {
  const leafFrame = byId.get(leaf)!.callFrame;
  if (leafFrame.functionName.startsWith("(")) return leafFrame.functionName;
  let owner: string | null = null;
  for (let id: number | undefined = leaf; id !== undefined; id = parents.get(id)) {
    const frame = byId.get(id)!.callFrame;
    const place = frame.url.match(/\/(src|bench)\/(.*)$/);
    if (place) {
      owner = `${frame.functionName || "(anonymous)"} ${place[1]}/${place[2]}:${frame.lineNumber + 1}`;
      break;
    }
  }
  return owner ?? `${leafFrame.functionName || "(anonymous)"} ${leafFrame.url.split("/").pop()}`;
}

/** The profile's samples inside `block` (its wall-clock window), summed by owner: the largest first. */
export function describeBlock(profile: SampledProfile, block: LongBlock): string {
  const parents = new Map<number, number>();
  const byId = new Map<number, SampledProfile["nodes"][number]>();
  for (const node of profile.nodes) {
    byId.set(node.id, node);
    for (const child of node.children ?? []) parents.set(child, node.id);
  }
  const from = block.endedAtMicroseconds - block.gapMs * 1000;
  const totals = new Map<string, number>();
  let time = profile.startTime;
  for (let index = 0; index < profile.samples.length; index++) {
    time += profile.timeDeltas[index]!;
    if (time < from || time > block.endedAtMicroseconds) continue;
    const next = profile.timeDeltas[index + 1] ?? 0;
    const owner = sampleOwner(parents, byId, profile.samples[index]!);
    totals.set(owner, (totals.get(owner) ?? 0) + next / 1000);
  }
  return [...totals]
    .sort((left, right) => right[1] - left[1])
    .slice(0, 8)
    .map(([owner, ms]) => `    ${ms.toFixed(1).padStart(6)} ms  ${owner}`)
    .join("\n");
}
