/**
 * Incremental updates against full builds: after a random sequence of upserts and removals (reused ids, relations
 * to removed ids, domain, status and integration changes, an empty registry on the way), the changed snapshot and
 * a full build of the same final entries give the same selections, scores (exactly), confidence and blocks; so do
 * the snapshot after a compaction, an index whose changes are folded in the middle of the sequence, a chain that
 * branches (a change applied to a snapshot that is no longer the latest), and one long run of updates in a row
 * (1,000 under `npm run fuzz`).
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  assembleKnowledgeContext,
  buildIndexArtifact,
  buildIndexSnapshot,
  clearKnowledgeIndexCache,
  type KnowledgeEntryInput,
  KnowledgeGroundingEngine,
  type KnowledgeIndexSnapshot,
  type KnowledgeResolvedRetrieval,
  type NormalizedKnowledgeEntry,
  normalizeAndValidate,
  retrieve,
  serializeIndexSnapshot,
} from "../../src/index.js";
import { drain } from "../../src/knowledge/compiledSnapshot.js";
import { applySnapshotChanges, compactSnapshotSteps } from "../../src/knowledge/snapshotChanges.js";
import {
  blockedArbitrary,
  entryArbitrary,
  ID_POOL,
  requestArbitrary,
  resolvedArbitrary,
  tiedEntryArbitrary,
  type UpdateOperation,
  updateOperationsArbitrary,
} from "./arbitraries.js";
import { propertyRuns, propertySeed } from "./seed.js";

const operationsArbitrary = updateOperationsArbitrary(10);

function normalize(entries: readonly KnowledgeEntryInput[]): NormalizedKnowledgeEntry[] | null {
  const result = normalizeAndValidate([{ id: "source", version: "v1", entries: [...entries] }], {
    manifestVersion: "0",
  });
  return result.validation.ok ? result.entries : null;
}

function indexOptions(resolved: KnowledgeResolvedRetrieval, bm25f: boolean) {
  return {
    fieldWeights: resolved.fieldWeights,
    k1: resolved.k1,
    b: resolved.b,
    ...(bm25f ? { scoring: "bm25f" as const, analyzer: "english" as const } : {}),
  };
}

function expectSameTurns(
  changed: KnowledgeIndexSnapshot,
  full: KnowledgeIndexSnapshot,
  requests: Parameters<typeof retrieve>[1][],
  resolved: KnowledgeResolvedRetrieval,
  blocked: string[],
): void {
  expect(changed.entryCount).toBe(full.entryCount);
  expect([...changed.entriesById.keys()].sort()).toEqual([...full.entriesById.keys()].sort());
  for (const request of requests) {
    const actual = retrieve(changed, request, resolved, blocked);
    const expected = retrieve(full, request, resolved, blocked);
    // Exact equality: scores, field breakdowns, phrases, flags, confidence, selections.
    expect(actual).toEqual(expected);
    expect(assembleKnowledgeContext(actual, { maxTokens: 600 })).toEqual(
      assembleKnowledgeContext(expected, { maxTokens: 600 }),
    );
  }
}

/** Applies `operations` in turn (an invalid change is refused: the registry stays), compacting after `compactAt`. */
function applyOperations(
  start: { snapshot: KnowledgeIndexSnapshot; registry: Map<string, KnowledgeEntryInput> },
  operations: readonly UpdateOperation[],
  compactAt: number,
): { snapshot: KnowledgeIndexSnapshot; registry: Map<string, KnowledgeEntryInput> } {
  let { snapshot, registry } = start;
  for (const [step, operation] of operations.entries()) {
    const next = new Map(registry);
    if (operation.kind === "remove") for (const id of operation.ids) next.delete(id);
    else for (const entry of operation.entries) next.set(entry.id, entry);
    const finalEntries = normalize([...next.values()]);
    if (!finalEntries) continue; // an invalid change is refused; the registry stays as it was
    registry = next;
    const byId = new Map(finalEntries.map((entry) => [entry.id, entry]));
    snapshot =
      operation.kind === "remove"
        ? applySnapshotChanges(snapshot, operation.ids, [])
        : applySnapshotChanges(
            snapshot,
            [],
            operation.entries.map((entry) => byId.get(entry.id)!),
          );
    if (step === compactAt) snapshot = drain(compactSnapshotSteps(snapshot));
  }
  return { snapshot, registry };
}

const initialArbitrary = fc
  .uniqueArray(fc.constantFrom(...ID_POOL), { minLength: 0, maxLength: 8 })
  .chain((ids) => fc.tuple(...ids.map((id) => entryArbitrary(id))));

describe("incremental updates equal a full build of the final registry", () => {
  for (const mode of ["sum", "bm25f"] as const) {
    it(`after random upserts and removals (${mode} scoring)`, () => {
      const seed = propertySeed(`updates-${mode}`);
      fc.assert(
        fc.property(
          initialArbitrary,
          operationsArbitrary,
          fc.array(requestArbitrary, { minLength: 1, maxLength: 3 }),
          resolvedArbitrary,
          blockedArbitrary,
          fc.integer({ min: -1, max: 10 }),
          (initial, operations, requests, resolved, blocked, compactAt) => {
            const initialEntries = normalize(initial);
            if (!initialEntries) return;
            const options = indexOptions(resolved, mode === "bm25f");
            const { snapshot, registry } = applyOperations(
              {
                snapshot: buildIndexSnapshot(initialEntries, options),
                registry: new Map(initial.map((entry) => [entry.id, entry])),
              },
              operations,
              compactAt,
            );
            const finalEntries = normalize([...registry.values()])!;
            const full = buildIndexSnapshot(finalEntries, options);
            expectSameTurns(snapshot, full, requests, resolved, blocked);
            expectSameTurns(drain(compactSnapshotSteps(snapshot)), full, requests, resolved, blocked);
          },
        ),
        { seed, numRuns: propertyRuns(200) },
      );
    });
  }

  it("after a chain that branches: a change applied to a snapshot that is no longer the latest", () => {
    const seed = propertySeed("updates-branch");
    fc.assert(
      fc.property(
        initialArbitrary,
        operationsArbitrary,
        operationsArbitrary,
        operationsArbitrary,
        fc.array(requestArbitrary, { minLength: 1, maxLength: 3 }),
        resolvedArbitrary,
        fc.boolean(),
        (initial, shared, first, second, requests, resolved, bm25f) => {
          const initialEntries = normalize(initial);
          if (!initialEntries) return;
          const options = indexOptions(resolved, bm25f);
          const fork = applyOperations(
            {
              snapshot: buildIndexSnapshot(initialEntries, options),
              registry: new Map(initial.map((entry) => [entry.id, entry])),
            },
            shared,
            -1,
          );
          // Both branches continue from the same snapshot; the second starts after the first went on.
          const left = applyOperations(fork, first, -1);
          const right = applyOperations(fork, second, -1);
          const again = applyOperations(left, second, -1);
          for (const branch of [left, right, again, fork]) {
            const full = buildIndexSnapshot(normalize([...branch.registry.values()])!, options);
            expectSameTurns(branch.snapshot, full, requests, resolved, []);
          }
        },
      ),
      { seed, numRuns: propertyRuns(100) },
    );
  });

  it("after a long run of random updates in a row (1,000 under npm run fuzz), compacted now and then", () => {
    const seed = propertySeed("updates-long-run");
    // `npm test` runs a shorter sequence; the fuzz script raises LEXGROUND_PROPERTY_RUNS to 1,000 for this suite.
    const length = propertyRuns(150);
    const pool = [...ID_POOL, ...Array.from({ length: 40 }, (_, index) => `entry.${index}`)];
    const longUpsert: fc.Arbitrary<UpdateOperation> = fc
      .tuple(fc.uniqueArray(fc.constantFrom(...pool), { minLength: 1, maxLength: 3 }), fc.boolean())
      .chain(([ids, tied]) =>
        fc.tuple(...ids.map((id) => (tied ? tiedEntryArbitrary(id) : entryArbitrary(id)))),
      )
      .map((entries) => ({ kind: "upsert", entries }));
    const longRemove: fc.Arbitrary<UpdateOperation> = fc
      .uniqueArray(fc.constantFrom(...pool), { minLength: 1, maxLength: 3 })
      .map((ids) => ({ kind: "remove", ids }));
    fc.assert(
      fc.property(
        fc.array(fc.oneof(longUpsert, longUpsert, longUpsert, longRemove), {
          minLength: length,
          maxLength: length,
        }),
        fc.array(requestArbitrary, { minLength: 4, maxLength: 4 }),
        resolvedArbitrary,
        fc.boolean(),
        fc.integer({ min: 50, max: 300 }),
        (operations, requests, resolved, bm25f, compactEvery) => {
          const options = indexOptions(resolved, bm25f);
          let state = {
            snapshot: buildIndexSnapshot([], options),
            registry: new Map<string, KnowledgeEntryInput>(),
          };
          for (let start = 0; start < operations.length; start += 100) {
            const slice = operations.slice(start, start + 100);
            const compactAt = start % compactEvery < 100 ? compactEvery % 100 : -1;
            state = applyOperations(state, slice, compactAt);
            const full = buildIndexSnapshot(normalize([...state.registry.values()])!, options);
            expectSameTurns(state.snapshot, full, requests, resolved, []);
          }
          const full = buildIndexSnapshot(normalize([...state.registry.values()])!, options);
          expectSameTurns(drain(compactSnapshotSteps(state.snapshot)), full, requests, resolved, ["d1"]);
        },
      ),
      { seed, numRuns: 1 },
    );
  });

  it("on an engine started from the self-contained artifact alone, equal to the engine built from the final registry", async () => {
    const seed = propertySeed("updates-artifact-only");
    const ground = async (engine: KnowledgeGroundingEngine, request: Parameters<typeof retrieve>[1]) => {
      const outcome = await engine.ground({
        query: request.query,
        recentTurns: request.recentTurns,
        scope: { enabledIntegrations: request.enabledIntegrations },
      });
      return {
        context: outcome.ephemeralContext ?? null,
        retrieval: { ...outcome.retrieval, durationMs: 0 },
      };
    };
    await fc.assert(
      fc.asyncProperty(
        initialArbitrary,
        operationsArbitrary,
        fc.array(requestArbitrary, { minLength: 1, maxLength: 3 }),
        fc.constantFrom("neurolink", "recommended"),
        async (initial, operations, requests, preset) => {
          const source = (entries: KnowledgeEntryInput[]) => [{ id: "s", version: "7", entries }];
          if (!normalize(initial)) return;
          clearKnowledgeIndexCache();
          const built = new KnowledgeGroundingEngine({ enabled: true, sources: source(initial), preset });
          await built.ready();
          const bytes = serializeIndexSnapshot(built.getSnapshot()!, built.getStatus().content!.key);
          clearKnowledgeIndexCache();
          const engine = new KnowledgeGroundingEngine({
            enabled: true,
            indexArtifact: bytes,
            preset,
            logger: null,
          });
          await engine.ready();
          expect(engine.getStatus().snapshotOrigin).toBe("artifact");
          let registry = new Map(initial.map((entry) => [entry.id, entry]));
          for (const operation of operations) {
            const result =
              operation.kind === "remove"
                ? await engine.remove(operation.ids)
                : await engine.upsert(operation.entries);
            const next = new Map(registry);
            if (operation.kind === "remove") for (const id of operation.ids) next.delete(id);
            else for (const entry of operation.entries) next.set(entry.id, entry);
            // A change is live exactly when the registry after it is valid.
            expect(result.live).toBe(normalize([...next.values()]) !== null);
            if (result.live) registry = next;
          }
          clearKnowledgeIndexCache();
          const full = new KnowledgeGroundingEngine({
            enabled: true,
            sources: source([...registry.values()]),
            preset,
          });
          await full.ready();
          for (const request of requests)
            expect(await ground(engine, request)).toEqual(await ground(full, request));
          await engine.compacted();
          for (const request of requests)
            expect(await ground(engine, request)).toEqual(await ground(full, request));
        },
      ),
      { seed, numRuns: propertyRuns(40) },
    );
    // About 23 s in a full run (each run waits for the engine's compaction delay): three times that and more.
  }, 120_000);

  it("an engine started from an artifact of several sources refuses updates (index-not-ready): it cannot tell where entries live", async () => {
    const sources = [
      {
        id: "a",
        version: "1",
        entries: [{ id: "x", title: "X", summary: "x", domain: "d1", integrations: [] }],
      },
      {
        id: "b",
        version: "2",
        entries: [{ id: "y", title: "Y", summary: "y", domain: "d1", integrations: [] }],
      },
    ];
    clearKnowledgeIndexCache();
    const bytes = await buildIndexArtifact(sources);
    clearKnowledgeIndexCache();
    const engine = new KnowledgeGroundingEngine({ enabled: true, indexArtifact: bytes, logger: null });
    await engine.ready();
    expect(await engine.remove(["x"])).toMatchObject({ live: false, reason: "index-not-ready" });
  });
});
