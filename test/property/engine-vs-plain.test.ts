/**
 * The fast engine against the plain oracle (test/plain): on random registries, queries, scopes and settings,
 * the selected and expanded ids, every candidate (score within 1e-9 relative, flags, phrases, per-field
 * breakdown), the confidence and the rendered context must be the same.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  assembleKnowledgeContext,
  buildIndexSnapshot,
  type KnowledgeScoredCandidate,
  type KnowledgeSelection,
  normalizeAndValidate,
  retrieve,
} from "../../src/index.js";
import { buildPlainSnapshot, plainRetrieve } from "../plain/plainGrounding.js";
import { blockedArbitrary, registryArbitrary, requestArbitrary, resolvedArbitrary } from "./arbitraries.js";
import { propertyRuns, propertySeed } from "./seed.js";

function closeTo(actual: number, expected: number): boolean {
  if (actual === expected) return true;
  return Math.abs(actual - expected) <= 1e-9 * Math.max(Math.abs(actual), Math.abs(expected));
}

function sameCandidates(actual: KnowledgeScoredCandidate[], expected: KnowledgeScoredCandidate[]): void {
  expect(actual.map((candidate) => candidate.id)).toEqual(expected.map((candidate) => candidate.id));
  actual.forEach((candidate, index) => {
    const other = expected[index]!;
    expect(candidate.exact).toBe(other.exact);
    expect(candidate.alias).toBe(other.alias);
    expect(candidate.matchedPhrases).toEqual(other.matchedPhrases);
    expect(closeTo(candidate.score, other.score), `score ${candidate.score} vs ${other.score}`).toBe(true);
    expect(closeTo(candidate.lexical, other.lexical)).toBe(true);
    expect(Object.keys(candidate.fieldScores).sort()).toEqual(Object.keys(other.fieldScores).sort());
    for (const [field, value] of Object.entries(candidate.fieldScores)) {
      expect(closeTo(value, other.fieldScores[field as keyof typeof other.fieldScores]!)).toBe(true);
    }
  });
}

function sameSelection(actual: KnowledgeSelection, expected: KnowledgeSelection): void {
  expect(actual.primary.map((entry) => entry.id)).toEqual(expected.primary.map((entry) => entry.id));
  expect(actual.expanded.map((entry) => entry.id)).toEqual(expected.expanded.map((entry) => entry.id));
  expect(actual.candidateCount).toBe(expected.candidateCount);
  expect(actual.confidence).toBe(expected.confidence);
  sameCandidates(actual.candidates, expected.candidates);
}

describe("engine equals the plain implementation", () => {
  it("on random registries, queries, scopes and settings", () => {
    const seed = propertySeed("engine-vs-plain");
    fc.assert(
      fc.property(
        registryArbitrary,
        fc.array(requestArbitrary, { minLength: 1, maxLength: 4 }),
        resolvedArbitrary,
        blockedArbitrary,
        fc.integer({ min: 0, max: 600 }),
        (registry, requests, resolved, blocked, maxTokens) => {
          const { entries, validation } = normalizeAndValidate(
            [{ id: "source", version: "v1", entries: registry }],
            {
              manifestVersion: "0",
            },
          );
          if (!validation.ok) return; // generated registries are valid by construction except rare alias clashes
          const options = { fieldWeights: resolved.fieldWeights, k1: resolved.k1, b: resolved.b };
          const snapshot = buildIndexSnapshot(entries, options);
          const plain = buildPlainSnapshot(entries, {
            fieldWeights: resolved.fieldWeights,
            k1: resolved.k1!,
            b: resolved.b!,
          });
          for (const request of requests) {
            const fast = retrieve(snapshot, request, resolved, blocked);
            const slow = plainRetrieve(plain, request, resolved, blocked);
            sameSelection(fast, slow);
            const contextConfig = { maxTokens, includeCitations: maxTokens % 2 === 0 };
            expect(assembleKnowledgeContext(fast, contextConfig)).toEqual(
              assembleKnowledgeContext(slow, contextConfig),
            );
          }
        },
      ),
      { seed, numRuns: propertyRuns(300) },
    );
  });
});
