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
  type KnowledgeSelection,
  normalizeAndValidate,
  retrieve,
} from "../../src/index.js";
import { buildPlainSnapshot, plainRetrieve } from "../plain/plainGrounding.js";
import { expectSameCandidates } from "../support/sameCandidates.js";
import { blockedArbitrary, registryArbitrary, requestArbitrary, resolvedArbitrary } from "./arbitraries.js";
import { propertyRuns, propertySeed } from "./seed.js";

function sameSelection(actual: KnowledgeSelection, expected: KnowledgeSelection): void {
  expect(actual.primary.map((entry) => entry.id)).toEqual(expected.primary.map((entry) => entry.id));
  expect(actual.expanded.map((entry) => entry.id)).toEqual(expected.expanded.map((entry) => entry.id));
  expect(actual.candidateCount).toBe(expected.candidateCount);
  expect(actual.confidence).toBe(expected.confidence);
  expectSameCandidates(actual.candidates, expected.candidates);
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
