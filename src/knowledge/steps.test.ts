import { describe, expect, it } from "vitest";
import { runSteps, runStepsYielding } from "./steps.js";

function* countTo(limit: number, visited: number[]): Generator<void, string, void> {
  for (let index = 0; index < limit; index++) {
    visited.push(index);
    yield;
  }
  return `done after ${limit}`;
}

describe("runSteps / runStepsYielding", () => {
  it("run every step and return the generator's result, synchronously or in slices", async () => {
    const sync: number[] = [];
    expect(runSteps(countTo(5, sync))).toBe("done after 5");
    const sliced: number[] = [];
    // A zero-millisecond slice gives the event loop a turn between every step; the result is the same.
    expect(await runStepsYielding(countTo(5, sliced), 0)).toBe("done after 5");
    expect(sliced).toEqual(sync);
  });

  it("runStepsYielding lets other work run between slices", async () => {
    let ticks = 0;
    const timer = setInterval(() => ticks++, 0);
    function* slow(): Generator<void, void, void> {
      for (let step = 0; step < 20; step++) {
        const until = performance.now() + 2;
        while (performance.now() < until) {
          // Busy for 2 ms, as a slice of real validation work would be.
        }
        yield;
      }
    }
    await runStepsYielding(slow(), 1);
    clearInterval(timer);
    expect(ticks).toBeGreaterThan(0);
  });
});
