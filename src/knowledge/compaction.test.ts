import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { propertySeed } from "../../test/property/seed.js";
import type { KnowledgeEntryInput, NormalizedKnowledgeEntry } from "../types/knowledge.js";
import { drain } from "./compiledSnapshot.js";
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
});
