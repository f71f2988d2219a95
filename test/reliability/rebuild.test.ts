/**
 * Issue 11, item 4: overlapping rebuilds. Whatever order builds finish in, the most recently requested VALID set
 * serves in the end: an invalid set or a build that throws never displaces a valid set requested before it, and a
 * set requested earlier never replaces one requested later. Every rebuild resolves saying whether its set went
 * live and, when not, why (`validation-failed`, `build-failed`, `superseded`); never `live` without having served.
 *
 * The process cache is wrapped so that a test can hold each build's completion and release them in any order
 * (fast-check's scheduler in the property, explicit gates in the fixed orderings).
 */
import fc from "fast-check";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { KnowledgeRebuildResult, KnowledgeSource } from "../../src/index.js";
import { propertyRuns, propertySeed } from "../property/seed.js";

/** Called after each build with its result; returns when the build may complete. Pass-through by default. */
let completionGate: (sources: unknown) => Promise<void> = async () => {};

vi.mock("../../src/knowledge/indexCache.js", async (importOriginal) => {
  const original = await importOriginal<typeof import("../../src/knowledge/indexCache.js")>();
  return {
    ...original,
    getOrBuildKnowledgeIndexSnapshot: async (
      ...args: Parameters<typeof original.getOrBuildKnowledgeIndexSnapshot>
    ) => {
      const [sources] = args;
      const throws = Array.isArray(sources) && (sources[0] as KnowledgeSource | undefined)?.id === "throws";
      const result = throws ? null : await original.getOrBuildKnowledgeIndexSnapshot(...args);
      await completionGate(sources);
      if (result === null) throw new Error("index build exploded");
      return result;
    },
  };
});

const { KnowledgeGroundingEngine, clearKnowledgeIndexCache } = await import("../../src/index.js");

afterEach(() => {
  completionGate = async () => {};
  clearKnowledgeIndexCache();
});

const entry = (id: string, title: string) => ({
  id,
  title,
  summary: `${title} summary`,
  domain: "d",
  integrations: [],
});
const SETS = {
  A: [{ id: "set-a", version: "1", entries: [entry("a.alpha", "Alpha walrus")] }],
  B: [{ id: "set-b", version: "1", entries: [entry("b.beta", "Beta walrus")] }],
  C: [{ id: "set-c", version: "1", entries: [entry("c.gamma", "Gamma walrus")] }],
  X: [
    {
      id: "set-x",
      version: "1",
      entries: [{ id: "x", title: "", summary: "s", domain: "d", integrations: [] }],
    },
  ],
  T: [{ id: "throws", version: "1", entries: [entry("t", "Throws")] }],
} satisfies Record<string, KnowledgeSource[]>;
type SetName = keyof typeof SETS;
const VALID: ReadonlySet<SetName> = new Set(["A", "B", "C"]);
const SERVED_ID: Record<string, string> = { A: "a.alpha", B: "b.beta", C: "c.gamma" };
const nameOf = (sources: unknown): SetName | undefined =>
  (Object.keys(SETS) as SetName[]).find(
    (name) => (sources as KnowledgeSource[])?.[0]?.id === SETS[name][0]!.id,
  );

const silent = { warn: () => {} };
const newEngine = (set: SetName = "A") =>
  new KnowledgeGroundingEngine({ enabled: true, sources: SETS[set], timeoutMs: 60_000, logger: silent });
/** The id the engine serves for a query matching every set ("walrus"). */
const serving = async (engine: InstanceType<typeof KnowledgeGroundingEngine>) =>
  (await engine.ground({ query: "walrus" })).metadata.selectedIds;

/** Holds each build of the named sets until {@link release} is called for it. */
function gates(): { release: (set: SetName) => void; waitFor: (set: SetName) => Promise<void> } {
  const held = new Map<SetName, () => void>();
  const arrived = new Map<SetName, () => void>();
  const arrivals = new Map<SetName, Promise<void>>();
  for (const name of Object.keys(SETS) as SetName[]) {
    arrivals.set(name, new Promise<void>((resolve) => arrived.set(name, resolve)));
  }
  completionGate = (sources) => {
    const name = nameOf(sources);
    if (!name) return Promise.resolve();
    arrived.get(name)!();
    return new Promise<void>((resolve) => held.set(name, resolve));
  };
  return {
    release: (set) => held.get(set)!(),
    waitFor: (set) => arrivals.get(set)!,
  };
}

describe("overlapping rebuilds: fixed orderings", () => {
  it("rebuild(B) then at once rebuild(invalid): B serves, and each result says what happened", async () => {
    const engine = newEngine();
    await engine.ready();
    const b = engine.rebuild(SETS.B);
    const x = engine.rebuild(SETS.X);
    const [bResult, xResult] = await Promise.all([b, x]);
    expect(await serving(engine)).toEqual(["b.beta"]);
    expect(bResult).toMatchObject({ live: true });
    expect(xResult).toMatchObject({ live: false, reason: "validation-failed" });
    // Status follows the latest request: it says the set last given is invalid, while B serves.
    expect(engine.getStatus()).toMatchObject({
      ready: true,
      lastError: "knowledge validation failed with 1 error(s)",
    });
  });

  it.each([
    ["B finishes first", ["B", "X"]],
    ["the invalid set finishes first", ["X", "B"]],
  ] as const)("B then invalid, %s: B serves", async (_, order) => {
    const engine = newEngine();
    await engine.ready();
    const gate = gates();
    const results = { B: engine.rebuild(SETS.B), X: engine.rebuild(SETS.X) };
    for (const name of order) {
      await gate.waitFor(name);
      gate.release(name);
      await results[name as "B" | "X"];
    }
    expect(await results.B).toMatchObject({ live: true });
    expect(await results.X).toMatchObject({ live: false, reason: "validation-failed" });
    expect(await serving(engine)).toEqual(["b.beta"]);
  });

  it("B then a build that throws, the throw first: B serves", async () => {
    const engine = newEngine();
    await engine.ready();
    const gate = gates();
    const b = engine.rebuild(SETS.B);
    const t = engine.rebuild(SETS.T);
    await gate.waitFor("T");
    gate.release("T");
    expect(await t).toMatchObject({ live: false, reason: "build-failed" });
    await gate.waitFor("B");
    gate.release("B");
    expect(await b).toMatchObject({ live: true });
    expect(await serving(engine)).toEqual(["b.beta"]);
  });

  it("B then C, C finishes first: C serves and B resolves live: false, reason superseded", async () => {
    const engine = newEngine();
    await engine.ready();
    const gate = gates();
    const b = engine.rebuild(SETS.B);
    const c = engine.rebuild(SETS.C);
    await gate.waitFor("C");
    gate.release("C");
    expect(await c).toMatchObject({ live: true });
    await gate.waitFor("B");
    gate.release("B");
    const bResult = await b;
    expect(bResult).toMatchObject({ live: false, reason: "superseded", ready: true });
    expect(await serving(engine)).toEqual(["c.gamma"]);
  });

  it("B then C, B finishes first: B goes live, then C replaces it", async () => {
    const engine = newEngine();
    await engine.ready();
    const gate = gates();
    const b = engine.rebuild(SETS.B);
    const c = engine.rebuild(SETS.C);
    await gate.waitFor("B");
    gate.release("B");
    expect(await b).toMatchObject({ live: true });
    expect(await serving(engine)).toEqual(["b.beta"]);
    await gate.waitFor("C");
    gate.release("C");
    expect(await c).toMatchObject({ live: true });
    expect(await serving(engine)).toEqual(["c.gamma"]);
  });
});

describe("overlapping rebuilds: every completion order", () => {
  it("the latest requested valid set serves; results never claim live for a set that did not serve", async () => {
    const seed = propertySeed("overlapping rebuilds");
    await fc.assert(
      fc.asyncProperty(
        fc.scheduler(),
        fc.array(fc.constantFrom<SetName>("A", "B", "C", "X", "T"), { minLength: 1, maxLength: 6 }),
        fc.boolean(),
        async (scheduler, plan, warmCache) => {
          clearKnowledgeIndexCache();
          completionGate = async () => {};
          const engine = newEngine("A");
          await engine.ready();
          // A warm cache makes some builds answer at once, a cold one makes them build: both orders occur.
          if (warmCache) for (const name of ["B", "C"] as const) await newEngine(name).ready();
          completionGate = (sources) => scheduler.schedule(Promise.resolve(), `complete ${nameOf(sources)}`);
          const completions: number[] = [];
          const seenDuring: string[][] = [];
          const results: Promise<KnowledgeRebuildResult>[] = plan.map((name, index) => {
            const result = engine.rebuild(SETS[name]);
            void result.then(() => completions.push(index));
            return result;
          });
          // Turns during the rebuilds always see one complete set.
          const turns = plan.map(() =>
            scheduler.schedule(Promise.resolve(), "turn").then(async () => {
              seenDuring.push(await serving(engine));
            }),
          );
          // Builds reach their gate only after validation and indexing (which yield to the event loop), so the
          // scheduler is drained until every rebuild has settled.
          let allSettled = false;
          void Promise.all(results).then(() => {
            allSettled = true;
          });
          while (!allSettled) {
            await scheduler.waitAll();
            await new Promise<void>((resolve) => setImmediate(resolve));
          }
          const settled = await Promise.all(results);
          await Promise.all(turns);
          for (const selected of seenDuring) {
            expect(Object.values(SERVED_ID).map((id) => [id])).toContainEqual(selected);
          }

          // Each result says what happened to its set.
          settled.forEach((result, index) => {
            const name = plan[index]!;
            if (name === "X") expect(result).toMatchObject({ live: false, reason: "validation-failed" });
            else if (name === "T") expect(result).toMatchObject({ live: false, reason: "build-failed" });
            else if (!result.live) {
              expect(result.reason).toBe("superseded");
              // Superseded: a valid set requested later went live before this one completed.
              const completedAt = completions.indexOf(index);
              const laterLive = completions
                .slice(0, completedAt)
                .some((other) => other > index && settled[other]!.live);
              expect(laterLive, `request ${index} superseded without a later live set`).toBe(true);
            }
          });
          // Sets went live in request order: a set requested earlier never replaced one requested later.
          const liveInCompletionOrder = completions.filter((index) => settled[index]!.live);
          expect(liveInCompletionOrder).toEqual([...liveInCompletionOrder].sort((a, b) => a - b));

          // The latest valid set requested serves (the initial set A when none was valid).
          const lastValid = [...plan].reverse().find((name) => VALID.has(name)) ?? "A";
          const lastValidIndex = plan.lastIndexOf(lastValid);
          if (lastValidIndex >= 0) expect(settled[lastValidIndex]!.live).toBe(true);
          expect(await serving(engine)).toEqual([SERVED_ID[lastValid]]);

          // Status follows the request made last.
          const last = plan[plan.length - 1]!;
          const { lastError } = engine.getStatus();
          if (last === "X") expect(lastError).toBe("knowledge validation failed with 1 error(s)");
          else if (last === "T") expect(lastError).toBe("Error: index build exploded");
          else expect(lastError).toBeNull();
        },
      ),
      { seed, numRuns: propertyRuns(60) },
    );
  });
});
