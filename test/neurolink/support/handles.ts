/** Checks that a test file leaves no more active handles (sockets, timers, child processes) than it found. */
import { afterAll, beforeAll } from "vitest";

function counts(): Map<string, number> {
  const result = new Map<string, number>();
  for (const resource of process.getActiveResourcesInfo())
    result.set(resource, (result.get(resource) ?? 0) + 1);
  return result;
}

function leakedSince(before: Map<string, number>): string[] {
  const leaked: string[] = [];
  for (const [resource, count] of counts()) {
    const extra = count - (before.get(resource) ?? 0);
    if (extra > 0) leaked.push(`${resource}x${extra}`);
  }
  return leaked;
}

/** Registers hooks comparing active resources before the file's tests and after its own cleanup. */
export function expectNoLeakedHandles(): void {
  let before = new Map<string, number>();
  beforeAll(() => {
    before = counts();
  });
  afterAll(async () => {
    // Closed sockets and killed processes release their handles within a few turns of the event loop.
    let leaked = leakedSince(before);
    for (let attempt = 0; attempt < 60 && leaked.length > 0; attempt++) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      leaked = leakedSince(before);
    }
    if (leaked.length > 0) throw new Error(`active handles left behind: ${leaked.join(", ")}`);
  });
}
