/**
 * Where a publication's time goes, phase by phase (computing the postings, each table's `COPY`, the indexes, the
 * statistics, the commit), for benchmarks and diagnostics: the wall time and the app's CPU time of each phase.
 */
import { performance } from "node:perf_hooks";

/** One finished phase of a publication. */
export type PublicationPhase = {
  /** What ran: `compute`, `copy <table>`, `index <table>`, `analyze`, `commit`, … */
  name: string;
  /** Wall-clock milliseconds. */
  wallMs: number;
  /** CPU milliseconds of this process (user + system) in the phase. */
  appCpuMs: number;
};

/** Observes each phase as it ends (a benchmark reads the server's CPU time there). */
export type PublicationPhaseObserver = (phase: PublicationPhase) => void;

/** Records a publication's phases in order; one phase runs at a time. */
export class PublicationPhases {
  readonly phases: PublicationPhase[] = [];
  private current: { name: string; wall: number; cpu: NodeJS.CpuUsage } | null = null;

  constructor(private readonly observer?: PublicationPhaseObserver) {}

  /** Ends the running phase (if any) and starts `name`. */
  start(name: string): void {
    this.end();
    this.current = { name, wall: performance.now(), cpu: process.cpuUsage() };
  }

  /** Ends the running phase (if any). */
  end(): void {
    const current = this.current;
    if (!current) return;
    this.current = null;
    const cpu = process.cpuUsage(current.cpu);
    const phase = {
      name: current.name,
      wallMs: performance.now() - current.wall,
      appCpuMs: (cpu.user + cpu.system) / 1000,
    };
    this.phases.push(phase);
    this.observer?.(phase);
  }

  /** Runs `work` as phase `name`. */
  async run<T>(name: string, work: () => Promise<T>): Promise<T> {
    this.start(name);
    try {
      return await work();
    } finally {
      this.end();
    }
  }
}
