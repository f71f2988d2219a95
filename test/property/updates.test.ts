/**
 * Incremental updates against full builds: after a random sequence of upserts and removals (reused ids, relations
 * to removed ids, domain, status and integration changes, an empty registry on the way), the changed snapshot and
 * a full build of the same final entries give the same selections, scores (exactly), confidence and blocks; so do
 * the snapshot after a compaction, and an index whose changes are folded in the middle of the sequence.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  assembleKnowledgeContext,
  buildIndexSnapshot,
  type KnowledgeEntryInput,
  type KnowledgeIndexSnapshot,
  type KnowledgeResolvedRetrieval,
  type NormalizedKnowledgeEntry,
  normalizeAndValidate,
  retrieve,
} from "../../src/index.js";
import { drain } from "../../src/knowledge/snapshot.js";
import { applySnapshotChanges, compactSnapshotSteps } from "../../src/knowledge/snapshotChanges.js";
import {
  blockedArbitrary,
  entryArbitrary,
  ID_POOL,
  requestArbitrary,
  resolvedArbitrary,
  tiedEntryArbitrary,
} from "./arbitraries.js";
import { propertyRuns, propertySeed } from "./seed.js";

type Operation = { kind: "upsert"; entries: KnowledgeEntryInput[] } | { kind: "remove"; ids: string[] };

const upsertArbitrary: fc.Arbitrary<Operation> = fc
  .tuple(fc.uniqueArray(fc.constantFrom(...ID_POOL), { minLength: 1, maxLength: 4 }), fc.boolean())
  .chain(([ids, tied]) => fc.tuple(...ids.map((id) => (tied ? tiedEntryArbitrary(id) : entryArbitrary(id)))))
  .map((entries) => ({ kind: "upsert", entries }));
const removeArbitrary: fc.Arbitrary<Operation> = fc
  .uniqueArray(fc.constantFrom(...ID_POOL, "never.there"), { minLength: 1, maxLength: 6 })
  .map((ids) => ({ kind: "remove", ids }));
const operationsArbitrary = fc.array(fc.oneof(upsertArbitrary, upsertArbitrary, removeArbitrary), {
  minLength: 1,
  maxLength: 10,
});

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

describe("incremental updates equal a full build of the final registry", () => {
  for (const mode of ["sum", "bm25f"] as const) {
    it(`after random upserts and removals (${mode} scoring)`, () => {
      const seed = propertySeed(`updates-${mode}`);
      fc.assert(
        fc.property(
          fc
            .uniqueArray(fc.constantFrom(...ID_POOL), { minLength: 0, maxLength: 8 })
            .chain((ids) => fc.tuple(...ids.map((id) => entryArbitrary(id)))),
          operationsArbitrary,
          fc.array(requestArbitrary, { minLength: 1, maxLength: 3 }),
          resolvedArbitrary,
          blockedArbitrary,
          fc.integer({ min: -1, max: 10 }),
          (initial, operations, requests, resolved, blocked, compactAt) => {
            const initialEntries = normalize(initial);
            if (!initialEntries) return;
            const options = indexOptions(resolved, mode === "bm25f");
            let snapshot = buildIndexSnapshot(initialEntries, options);
            let registry = new Map<string, KnowledgeEntryInput>(initial.map((entry) => [entry.id, entry]));
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
});
