/**
 * Long synchronous work (validating a registry, hashing it for the cache key) is written once as a generator that
 * yields between small steps; these two functions run it either in one go or in time slices that give the event
 * loop a turn, so a server keeps answering while a large registry is processed.
 */
import { yieldToEventLoop } from "./runtime.js";

/** Runs `steps` to its end synchronously and returns its result. */
export function runSteps<Result>(steps: Generator<void, Result, void>): Result {
  let step = steps.next();
  while (!step.done) step = steps.next();
  return step.value;
}

/**
 * Runs `steps` to its end, yielding to the event loop whenever it has worked for `sliceMs` milliseconds. Same
 * result as {@link runSteps}.
 */
export async function runStepsYielding<Result>(
  steps: Generator<void, Result, void>,
  sliceMs: number,
): Promise<Result> {
  let sliceStart = performance.now();
  let step = steps.next();
  while (!step.done) {
    if (performance.now() - sliceStart >= sliceMs) {
      await yieldToEventLoop();
      sliceStart = performance.now();
    }
    step = steps.next();
  }
  return step.value;
}
