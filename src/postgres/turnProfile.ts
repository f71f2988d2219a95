/**
 * Where a reader's turns spend their time, step by step: wall milliseconds, calls and bytes per step (the binary
 * COPY of posting lists, decoding them, ranking, the small statements). Off unless a benchmark sets
 * `backend.turnProfile`; the turn path then adds a few clock reads per step.
 * @internal
 */

/** One step's totals. */
export type TurnStep = { milliseconds: number; count: number; bytes: number };

/** Per-step totals of the turns run while it is set (a benchmark resets it between turns). */
export class TurnProfile {
  readonly steps = new Map<string, TurnStep>();

  /** Adds one call of `step` that took `milliseconds` (and moved `bytes`). */
  add(step: string, milliseconds: number, bytes = 0): void {
    const found = this.steps.get(step);
    if (found) {
      found.milliseconds += milliseconds;
      found.count++;
      found.bytes += bytes;
    } else this.steps.set(step, { milliseconds, count: 1, bytes });
  }

  /** Forgets every step. */
  reset(): void {
    this.steps.clear();
  }
}
