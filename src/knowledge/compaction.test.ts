import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { propertySeed } from "../../test/property/seed.js";
import { fewestHeapBytesAllocated, heapBytesAllocatedBy } from "../../test/support/heapAllocation.js";
import type { KnowledgeEntryInput, NormalizedKnowledgeEntry } from "../types/knowledge.js";
import { compactedPostings, type FieldCompactor } from "./compaction.js";
import { renumbering } from "./compactionInputs.js";
import { drain } from "./compiledSnapshot.js";
import type { IndexBase } from "./indexChanges.js";
import { KnowledgeLexicalIndex } from "./lexicalIndex.js";
import { OverlayMap, REMOVED } from "./overlayMap.js";
import { emptyFrequencyPostings, inactivePostings } from "./postings.js";
import { normalizeAndValidate } from "./resolve.js";
import { buildIndexSnapshot } from "./snapshot.js";
import { applySnapshotChanges, ascending, compactSnapshotSteps } from "./snapshotChanges.js";

function normalized(entries: KnowledgeEntryInput[]): NormalizedKnowledgeEntry[] {
  const result = normalizeAndValidate([{ id: "source", version: "v1", entries }], { manifestVersion: "0" });
  expect(result.validation.ok).toBe(true);
  return result.entries;
}

const entry = (id: string, title: string, body: string): KnowledgeEntryInput => ({
  id,
  title,
  summary: `${title} summary`,
  body,
  domain: "help",
  integrations: [],
});

const QUERIES = [["alpha"], ["beta", "gamma"], ["alpha", "delta", "summary"], ["omega"]];

function searches(index: KnowledgeLexicalIndex) {
  return QUERIES.map((tokens) => index.search(tokens, 10));
}

describe("compaction", () => {
  it("sorts a renumbered scope list (a sorted run, then an unsorted tail) as a full sort does", () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(fc.integer({ min: 0, max: 500 }), { maxLength: 60 }),
        fc.nat({ max: 60 }),
        (values, split) => {
          const head = values.slice(0, Math.min(split, values.length)).sort((left, right) => left - right);
          const docs = Int32Array.from([...head, ...values.slice(head.length)]);
          expect([...ascending(docs.slice())]).toEqual([...docs].sort((left, right) => left - right));
        },
      ),
      { seed: propertySeed("compaction-ascending") },
    );
  });

  it("keeps term frequencies of 255 and more exact (base and added documents)", () => {
    const initial = normalized([
      entry("a.one", "Alpha one", `${"alpha ".repeat(300)} beta`),
      entry("b.two", "Beta two", "beta gamma alpha"),
      entry("c.three", "Gamma three", `${"gamma ".repeat(256)} delta`),
      entry("d.four", "Delta four", "delta alpha omega"),
    ]);
    const changes = normalized([
      entry("b.two", "Beta two again", `${"beta ".repeat(400)} alpha`),
      entry("e.five", "Omega five", `${"omega ".repeat(255)} alpha`),
    ]);
    const options = { fieldWeights: { title: 3, aliases: 2, keywords: 2, summary: 1.5, body: 1 } };
    const changed = applySnapshotChanges(
      applySnapshotChanges(buildIndexSnapshot(initial, options), ["c.three"], []),
      [],
      changes,
    );
    const compacted = drain(compactSnapshotSteps(changed));
    const finalEntries = normalized([
      entry("a.one", "Alpha one", `${"alpha ".repeat(300)} beta`),
      entry("b.two", "Beta two again", `${"beta ".repeat(400)} alpha`),
      entry("d.four", "Delta four", "delta alpha omega"),
      entry("e.five", "Omega five", `${"omega ".repeat(255)} alpha`),
    ]);
    const full = buildIndexSnapshot(finalEntries, options);
    const expected = searches(full.lexical as KnowledgeLexicalIndex);
    expect(searches(changed.lexical as KnowledgeLexicalIndex)).toEqual(expected);
    expect(searches(compacted.lexical as KnowledgeLexicalIndex)).toEqual(expected);
    expect((compacted.lexical as KnowledgeLexicalIndex).hasChanges).toBe(false);
    // The compacted index's stored frequencies are what the next change scores from.
    const next = applySnapshotChanges(compacted, ["d.four"], []);
    const nextFull = buildIndexSnapshot(
      finalEntries.filter((item) => item.id !== "d.four"),
      options,
    );
    const nextExpected = searches(nextFull.lexical as KnowledgeLexicalIndex);
    expect(searches(next.lexical as KnowledgeLexicalIndex)).toEqual(nextExpected);
    expect(searches(drain(compactSnapshotSteps(next)).lexical as KnowledgeLexicalIndex)).toEqual(
      nextExpected,
    );
  });

  it("gives a compacted index its long lists' bounds, as a full build of its entries computes them", () => {
    // Lists of at least LONG_LIST_POSTINGS (4,096) postings: "alpha" in every body, "entry" in every title. Without
    // them a compacted index's first turns scanned each frequent term's whole list; fails when they are left out.
    const many = (count: number, from = 0) =>
      Array.from({ length: count }, (_, index) =>
        entry(
          `e.${String(from + index).padStart(5, "0")}`,
          `Entry ${from + index}`,
          `alpha beta${index % 7}`,
        ),
      );
    const initial = normalized(many(4200));
    const added = normalized(many(3, 9000));
    const changed = applySnapshotChanges(buildIndexSnapshot(initial), ["e.00007"], added);
    const compacted = drain(compactSnapshotSteps(changed));
    const full = buildIndexSnapshot(
      normalized([...many(4200).filter((item) => item.id !== "e.00007"), ...many(3, 9000)]),
    );
    const bounds = (snapshot: typeof full) =>
      (snapshot.lexical as unknown as { upperBounds: Map<number, number>[] | null }).upperBounds;
    expect(bounds(full)!.reduce((count, field) => count + field.size, 0)).toBeGreaterThanOrEqual(2);
    expect(bounds(compacted)).toEqual(bounds(full));
    expect(searches(compacted.lexical as KnowledgeLexicalIndex)).toEqual(
      searches(full.lexical as KnowledgeLexicalIndex),
    );
  });

  it("compacts an index whose dense ids are not in id order as a full build of its entries", () => {
    const entries = normalized([
      entry("z.last", "Zeta", "alpha beta"),
      entry("m.middle", "Mu", "beta gamma gamma"),
      entry("a.first", "Alpha", "alpha delta omega"),
    ]);
    const index = new KnowledgeLexicalIndex();
    for (const item of entries) index.addEntry(item);
    index.finalize();
    const [added] = normalized([entry("k.added", "Kappa", "omega alpha alpha")]);
    const changed = index.withChanges(["m.middle"], [added!]);
    const compacted = drain(changed.compactSteps());
    const full = new KnowledgeLexicalIndex();
    for (const item of [entries[0]!, entries[2]!, added!]) full.addEntry(item);
    full.finalize();
    expect(searches(changed)).toEqual(searches(full));
    expect(searches(compacted)).toEqual(searches(full));
    expect(compacted.hasChanges).toBe(false);
  });

  it("renumbers live documents in id order, reading each live base id once and comparing none of them", () => {
    const idArbitrary = fc.stringMatching(/^[a-c][a-c.]{0,3}$/);
    fc.assert(
      fc.property(
        fc.uniqueArray(idArbitrary, { minLength: 1, maxLength: 30 }),
        fc.uniqueArray(idArbitrary, { maxLength: 12 }),
        fc.array(fc.boolean(), { maxLength: 30 }),
        (baseIds, addedIds, removedFlags) => {
          const index = new KnowledgeLexicalIndex();
          for (const item of normalized(baseIds.map((id) => entry(id, `title ${id}`, "alpha beta"))))
            index.addEntry(item);
          index.finalize();
          // Removed: flagged base ids, and any base id added again (a replacement).
          const removed = baseIds.filter((id, at) => removedFlags[at] === true || addedIds.includes(id));
          const added = normalized(addedIds.map((id) => entry(id, `new ${id}`, "gamma alpha")));
          const changed = index.withChanges(removed, added);
          const { base, changes } = changed.finishedState();
          let reads = 0;
          const countedIds = new Proxy(base!.ids as string[], {
            get(target, key, receiver) {
              if (typeof key === "string" && /^\d+$/.test(key)) reads++;
              return Reflect.get(target, key, receiver);
            },
          });
          const counted: IndexBase = { ...base!, ids: countedIds };
          const result = drain(renumbering(counted, changes!));
          const live = [...baseIds.filter((id) => !removed.includes(id)), ...addedIds].sort((left, right) =>
            left < right ? -1 : left > right ? 1 : 0,
          );
          expect(result.ids).toEqual(live);
          expect(reads).toBe(baseIds.length - removed.length);
          for (let doc = 0; doc < result.newDenseIds.length; doc++) {
            const id = doc < baseIds.length ? base!.ids.at(doc)! : changes!.added.ids[doc - baseIds.length]!;
            const target = result.newDenseIds[doc]!;
            if (target >= 0) expect(result.ids[target]).toBe(id);
          }
        },
      ),
      { seed: propertySeed("compaction-renumbering"), numRuns: 60 },
    );
  });

  describe("allocates little on the host's heap (what feeds its young-generation collections)", () => {
    /** A changed index: `baseCount` small base entries, then `addedCount` added ones with 40 words of their own each. */
    function changedIndex(baseCount: number, addedCount: number): KnowledgeLexicalIndex {
      const index = new KnowledgeLexicalIndex();
      const base = normalized(
        Array.from({ length: baseCount }, (_, at) =>
          entry(`base.${String(at).padStart(5, "0")}`, `title ${at % 97}`, `alpha beta w${at % 50}`),
        ),
      );
      for (const item of base) index.addEntry(item);
      index.finalize();
      const added = normalized(
        Array.from({ length: addedCount }, (_, at) =>
          entry(
            `added.${at}`,
            `new ${at}`,
            Array.from({ length: 40 }, (_, word) => `u${at}x${word}`).join(" "),
          ),
        ),
      );
      return index.withChanges(
        base.filter((_, at) => at % 7 === 0).map((item) => item.id),
        added,
      );
    }

    it("derives the added documents' postings with nothing allocated per term or per document", () => {
      const changed = changedIndex(2000, 400);
      const { base, changes, dictionary } = changed.finishedState();
      // Fields are compacted "elsewhere" by a stand-in: what is measured is what the main thread derives first.
      const elsewhere: FieldCompactor = function* () {
        yield;
        return { postings: inactivePostings(), frequencies: emptyFrequencyPostings() };
      };
      const parameters = {
        fieldWeights: { title: 3, aliases: 2, keywords: 2, summary: 1.5, body: 1 },
        k1: 1.2,
        b: 0.75,
        termCount: dictionary.size,
      };
      const { result, bytes } = heapBytesAllocatedBy(() =>
        drain(compactedPostings(base!, changes!, parameters, elsewhere)),
      );
      expect(result!.ids.length).toBe(changes!.documentCount);
      // 16,000 added terms: an object per term (map entries, views, sorts) was 5 MB; the fresh ids are 8 bytes each.
      expect(bytes).toBeLessThan(8 * changes!.documentCount + 512 * 1024);
    });

    it("renumbers with the fresh ids allocated once", () => {
      // A run can also pay for compiling the generator to another tier and its feedback (heap objects too, 10-60 KB
      // depending on what ran before; one CI run measured 98 KB): the least of three runs is what renumbering
      // allocates, and an allocation per document would show in all three.
      const { result, bytes } = fewestHeapBytesAllocated(
        3,
        () => changedIndex(6000, 50).finishedState(),
        ({ base, changes }) => drain(renumbering(base!, changes!)),
      );
      const documentCount = changedIndex(6000, 50).finishedState().changes!.documentCount;
      expect(result.ids.length).toBe(documentCount);
      // Growing the array by pushes copied it about twice over.
      expect(bytes).toBeLessThan(8 * documentCount + 32 * 1024);
    });

    it("prunes an overlay without allocating a version for a key changed once", () => {
      const base = new Map(Array.from({ length: 100 }, (_, at) => [`key.${at}`, at] as const));
      let overlay: OverlayMap<string, number> = OverlayMap.changed<string, number>(
        base,
        new Map([["key.1", REMOVED]]),
      );
      for (let change = 0; change < 4; change++)
        overlay = OverlayMap.changed(
          overlay,
          new Map(Array.from({ length: 1250 }, (_, at) => [`changed.${change}.${at}`, at] as const)),
        );
      const { result: pruned, bytes } = heapBytesAllocatedBy(() => overlay.pruned());
      expect([...pruned]).toEqual([...overlay]);
      expect(pruned.get("key.1")).toBeUndefined();
      // 5,000 keys: the map's own tables (about 90 bytes a key with their growth), no arrays or versions per key.
      expect(bytes).toBeLessThan(5000 * 150);
    });
  });
});
