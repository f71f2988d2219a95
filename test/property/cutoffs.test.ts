/**
 * Adaptive cut-offs on random registries, queries, scopes and settings: the cut selection is a prefix-consistent
 * subset of the uncut one (same candidates and confidence, primary a prefix, every selected entry also selected
 * without cut-offs), and the block stays within budget, has one opening and one closing tag, and cites exactly
 * the included entries.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  assembleKnowledgeContext,
  buildIndexSnapshot,
  citationMarker,
  KNOWLEDGE_CONTEXT_CLOSE,
  KNOWLEDGE_CONTEXT_OPEN,
  type KnowledgeResolvedRetrieval,
  normalizeAndValidate,
  retrieve,
} from "../../src/index.js";
import { blockedArbitrary, registryArbitrary, requestArbitrary, resolvedArbitrary } from "./arbitraries.js";
import { propertyRuns, propertySeed } from "./seed.js";

const cutoffArbitrary = fc.record(
  {
    minRelativeScore: fc.constantFrom(0, 0.2, 0.5, 0.9, 1),
    minResults: fc.integer({ min: 1, max: 5 }),
    scoreGapRatio: fc.constantFrom(0, 0.3, 0.6, 1),
    expansionFromTop: fc.integer({ min: 0, max: 4 }),
    expansionMinConfidence: fc.constantFrom("high" as const, "medium" as const, "low" as const),
  },
  { requiredKeys: [] },
);

function occurrences(text: string, part: string): number {
  return text.split(part).length - 1;
}

describe("adaptive cut-offs", () => {
  it("select a prefix-consistent subset and keep the block well-formed", () => {
    const seed = propertySeed("cutoffs");
    fc.assert(
      fc.property(
        registryArbitrary,
        fc.array(requestArbitrary, { minLength: 1, maxLength: 3 }),
        resolvedArbitrary,
        cutoffArbitrary,
        fc.constantFrom("seed" as const, "calibrated" as const),
        blockedArbitrary,
        fc.integer({ min: 0, max: 600 }),
        (registry, requests, resolved, cutoffs, confidenceRule, blocked, maxTokens) => {
          const { entries, validation } = normalizeAndValidate(
            [{ id: "source", version: "v1", entries: registry }],
            { manifestVersion: "0" },
          );
          if (!validation.ok) return;
          const snapshot = buildIndexSnapshot(entries, {
            fieldWeights: resolved.fieldWeights,
            k1: resolved.k1,
            b: resolved.b,
          });
          const uncutSettings: KnowledgeResolvedRetrieval = { ...resolved, confidenceRule };
          const cutSettings: KnowledgeResolvedRetrieval = { ...uncutSettings, ...cutoffs };
          for (const request of requests) {
            const uncut = retrieve(snapshot, request, uncutSettings, blocked);
            const cut = retrieve(snapshot, request, cutSettings, blocked);
            // Same candidates, scores and confidence: cut-offs only shrink what is selected.
            expect(cut.candidates.map((candidate) => [candidate.id, candidate.score])).toEqual(
              uncut.candidates.map((candidate) => [candidate.id, candidate.score]),
            );
            expect(cut.confidence).toBe(uncut.confidence);
            expect(cut.candidateCount).toBe(uncut.candidateCount);
            expect(uncut.candidates.some((candidate) => candidate.cut)).toBe(false);
            // Primary: a non-empty prefix of the uncut primary when the uncut one is non-empty.
            const uncutPrimary = uncut.primary.map((entry) => entry.id);
            const cutPrimary = cut.primary.map((entry) => entry.id);
            expect(cutPrimary).toEqual(uncutPrimary.slice(0, cutPrimary.length));
            if (uncutPrimary.length > 0) expect(cutPrimary.length).toBeGreaterThan(0);
            // minResults: the cut-offs never keep fewer than that many (or all there are).
            expect(cutPrimary.length).toBeGreaterThanOrEqual(
              Math.min(cutoffs.minResults ?? 1, uncutPrimary.length),
            );
            // Exactly the dropped primary candidates carry a cut, all with the same rule and end.
            const dropped = cut.candidates.slice(cutPrimary.length, uncutPrimary.length);
            expect(dropped.every((candidate) => candidate.cut !== undefined)).toBe(true);
            expect(
              new Set(dropped.map((candidate) => JSON.stringify(candidate.cut))).size,
            ).toBeLessThanOrEqual(1);
            expect(
              cut.candidates
                .filter((_, index) => index < cutPrimary.length || index >= uncutPrimary.length)
                .some((candidate) => candidate.cut),
            ).toBe(false);
            // Every selected entry is selected without cut-offs too; expansion stays within its limit.
            const uncutSelected = new Set([...uncutPrimary, ...uncut.expanded.map((entry) => entry.id)]);
            for (const entry of [...cut.primary, ...cut.expanded])
              expect(uncutSelected.has(entry.id)).toBe(true);
            expect(cut.expanded.length).toBeLessThanOrEqual(Math.max(0, resolved.relationLimit));
            if (cutoffs.expansionFromTop === 0) expect(cut.expanded).toEqual([]);

            const assembled = assembleKnowledgeContext(cut, { maxTokens });
            expect(assembled.contextTokens).toBeLessThanOrEqual(maxTokens);
            const text = assembled.assembledContext;
            if (text === "") {
              expect(assembled.citations).toEqual([]);
              continue;
            }
            expect(occurrences(text, KNOWLEDGE_CONTEXT_OPEN)).toBe(1);
            expect(occurrences(text, KNOWLEDGE_CONTEXT_CLOSE)).toBe(1);
            expect(text.startsWith(KNOWLEDGE_CONTEXT_OPEN)).toBe(true);
            expect(text.endsWith(KNOWLEDGE_CONTEXT_CLOSE)).toBe(true);
            // Citations: a prefix of the selected entries, in order, each marker in the block, no other marker.
            const selected = [...cut.primary, ...cut.expanded];
            expect(assembled.citations).toEqual(
              selected
                .slice(0, assembled.citations.length)
                .map((entry) => ({ id: entry.id, version: entry.version })),
            );
            const markers = text.match(/\[KB:[^\]\n]*@[^\]\n]*\]/g) ?? [];
            const expected = assembled.citations.map((citation) =>
              citationMarker(citation.id, citation.version),
            );
            expect(markers.filter((marker) => !expected.includes(marker))).toEqual([]);
            for (const marker of expected) expect(text).toContain(marker);
          }
        },
      ),
      { seed, numRuns: propertyRuns(300) },
    );
  });
});
