import { afterEach, describe, expect, it } from "vitest";
import type { KnowledgeEntryInput, NormalizedKnowledgeEntry } from "../types/knowledge.js";
import { compactedLengths } from "./compactionInputs.js";
import { compactionStep } from "./compactionStep.js";
import type { IndexBase, IndexChanges } from "./indexChanges.js";
import type { KnowledgeLexicalIndex } from "./lexicalIndex.js";
import { FIELD_COUNT } from "./postings.js";
import { normalizeAndValidate } from "./resolve.js";
import { buildIndexSnapshot } from "./snapshot.js";
import { applySnapshotChanges, compactSnapshotSteps } from "./snapshotChanges.js";

const DEFAULT_WORK = compactionStep.work;

afterEach(() => {
  compactionStep.work = DEFAULT_WORK;
});

function normalized(entries: KnowledgeEntryInput[]): NormalizedKnowledgeEntry[] {
  const result = normalizeAndValidate([{ id: "source", version: "v1", entries }], { manifestVersion: "0" });
  expect(result.validation.ok).toBe(true);
  return result.entries;
}

/** No word is in more than {@link MOST_DOCUMENTS} entries; every entry has integration "Stripe" (a long list). */
const MOST_DOCUMENTS = 20;
const entry = (index: number, version = 0): KnowledgeEntryInput => ({
  id: `entry.${String(index).padStart(4, "0")}`,
  title: `title${index} common${index % 40} edit${version}x${index % 40}`,
  summary: `summary${index} shared${(index * 7) % 40}`,
  body: `body${index} other${index % 30}`,
  domain: "help",
  integrations: index % 2 === 0 ? ["Stripe", "Shop"] : ["Stripe"],
});

describe("compaction steps", () => {
  it("reads at most the step's work (plus one term's postings) between two yields, and meters every pass", () => {
    const size = 600;
    compactionStep.work = 32;
    const initial = buildIndexSnapshot(
      normalized(Array.from({ length: size }, (_, index) => entry(index))),
      {},
    );
    let changed = applySnapshotChanges(
      initial,
      ["entry.0003", "entry.0100"],
      normalized([entry(5, 1), entry(250, 1), entry(size, 1), entry(size + 1, 1)]),
    );
    changed = applySnapshotChanges(changed, [], normalized([entry(5, 2), entry(7, 2)]));
    const steps = compactSnapshotSteps(changed);
    compactionStep.done = 0;
    let longest = 0;
    let total = 0;
    let stepCount = 0;
    for (let step = steps.next(); ; step = steps.next()) {
      longest = Math.max(longest, compactionStep.done);
      total += compactionStep.done;
      compactionStep.done = 0;
      stepCount++;
      if (step.done) {
        expect((step.value.lexical as KnowledgeLexicalIndex).hasChanges).toBe(false);
        break;
      }
    }
    // A range of the step's work may follow what is left of the one before (a scope list's tail), and a term's
    // postings are read in one go: at most twice the work plus the longest posting list.
    expect(longest).toBeLessThanOrEqual(2 * compactionStep.work + MOST_DOCUMENTS);
    // Every pass over the documents is metered: the renumbering, the lengths of each field, the universal mask,
    // the ranks, the scope lists ("Stripe" alone holds every entry).
    expect(total).toBeGreaterThan(size * (FIELD_COUNT + 4));
    expect(stepCount).toBeGreaterThan(total / (2 * compactionStep.work + MOST_DOCUMENTS));
  });

  it("yields within each field's lengths, not once per field (fails on 9a0b486)", () => {
    // A base of three and a half steps' documents: the lengths of every field take four steps each.
    const count = Math.floor(3.5 * DEFAULT_WORK);
    const lengths = Array.from({ length: FIELD_COUNT }, (_, field) =>
      Int32Array.from({ length: count }, (_, doc) => (doc + field) % 9),
    );
    const base = { ids: new Array<string>(count).fill(""), lengths } as unknown as IndexBase;
    const changes = {
      addedCount: 0,
      added: { terms: [] },
      live: new Uint8Array(count).fill(1),
    } as unknown as IndexChanges;
    const newDenseIds = Int32Array.from({ length: count }, (_, doc) => doc);
    const steps = compactedLengths(base, changes, newDenseIds, count);
    let yields = 0;
    let step = steps.next();
    while (!step.done) {
      yields++;
      step = steps.next();
    }
    expect(yields).toBeGreaterThanOrEqual(FIELD_COUNT * 4);
    for (let field = 0; field < FIELD_COUNT; field++) {
      expect([...step.value.lengths[field]!]).toEqual([...lengths[field]!]);
      expect(step.value.totals[field]).toBe(lengths[field]!.reduce((sum, length) => sum + length, 0));
    }
  });
});
