import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { propertySeed } from "../../test/property/seed.js";
import type { KnowledgeEntryInput, NormalizedKnowledgeEntry } from "../types/knowledge.js";
import { renumbering } from "./compactionInputs.js";
import { drain } from "./compiledSnapshot.js";
import type { IndexBase } from "./indexChanges.js";
import { KnowledgeLexicalIndex } from "./lexicalIndex.js";
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
            const id = doc < baseIds.length ? base!.ids[doc]! : changes!.added.ids[doc - baseIds.length]!;
            const target = result.newDenseIds[doc]!;
            if (target >= 0) expect(result.ids[target]).toBe(id);
          }
        },
      ),
      { seed: propertySeed("compaction-renumbering"), numRuns: 60 },
    );
  });
});
