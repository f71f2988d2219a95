/**
 * Authorization (checklist row 36): random (entitlements, query) pairs through the engine against an independent filter-then-rank
 * oracle (./oracle.ts). For every pair: no id the caller may not see in the candidates, the primary or expanded
 * entries, the citations or the rendered block (checked by id marker and by the entry's secret word); the
 * candidates, primary and expanded ids equal the oracle's; and never fewer primary entries than
 * min(resultLimit, candidateLimit, allowed entries with any evidence).
 *
 * `npm test` runs 100 registries × 5 pairs; `npm run fuzz` raises the run count (LEXGROUND_PROPERTY_RUNS).
 */
import fc from "fast-check";
import { afterAll, describe, expect, it } from "vitest";
import {
  clearKnowledgeIndexCache,
  KnowledgeGroundingEngine,
  type KnowledgeSource,
  normalizeAndValidate,
  retrieve,
} from "../../src/index.js";
import { propertyRuns, propertySeed } from "../property/seed.js";
import { blockedDomainsArbitrary, entitlementRegistryArbitrary, queryFor, secretOf } from "./generators.js";
import { oracleRetrieve } from "./oracle.js";

const PAIRS_PER_REGISTRY = 5;
const counts = { registries: 0, pairs: 0, invalidRegistries: 0, forbiddenAimed: 0, emptyAllowed: 0 };

afterAll(() => {
  clearKnowledgeIndexCache();
  console.log(
    `[property] authorization oracle: ${counts.pairs} (entitlements, query) pairs over ${counts.registries} registries ` +
      `(${counts.forbiddenAimed} pairs named a forbidden entry, ${counts.invalidRegistries} registries invalid and skipped)`,
  );
});

function closeTo(actual: number, expected: number): boolean {
  return (
    actual === expected ||
    Math.abs(actual - expected) <= 1e-9 * Math.max(Math.abs(actual), Math.abs(expected))
  );
}

describe("authorization against a filter-then-rank oracle", () => {
  it("leaks nothing, ranks like the oracle, and never returns fewer than the allowed entries give", async () => {
    const seed = propertySeed("authorization oracle");
    const caseArbitrary = entitlementRegistryArbitrary.chain((registry) =>
      fc.record({
        registry: fc.constant(registry),
        blockedDomains: blockedDomainsArbitrary,
        limits: fc.record({
          candidateLimit: fc.integer({ min: 0, max: 6 }),
          resultLimit: fc.integer({ min: 0, max: 5 }),
          relationLimit: fc.integer({ min: 0, max: 3 }),
        }),
        maxTokens: fc.integer({ min: 0, max: 3000 }),
        requests: fc.array(queryFor(registry), {
          minLength: PAIRS_PER_REGISTRY,
          maxLength: PAIRS_PER_REGISTRY,
        }),
      }),
    );
    await fc.assert(
      fc.asyncProperty(caseArbitrary, async ({ registry, blockedDomains, limits, maxTokens, requests }) => {
        const sources: KnowledgeSource[] = [{ id: "catalog", version: "7", entries: registry }];
        const { entries, validation } = normalizeAndValidate(sources, { manifestVersion: "0" });
        if (!validation.ok) {
          counts.invalidRegistries++;
          return;
        }
        counts.registries++;
        const engine = new KnowledgeGroundingEngine({
          enabled: true,
          sources,
          blockedDomains,
          retrieval: limits,
          context: { maxTokens },
          timeoutMs: 60_000,
        });
        await engine.ready();
        const snapshot = engine.getSnapshot();
        expect(snapshot, engine.getStatus().lastError ?? "").not.toBeNull();
        const resolved = engine.getResolvedRetrieval();
        for (const request of requests) {
          counts.pairs++;
          const oracle = oracleRetrieve(entries, request, resolved, blockedDomains);
          const forbidden = entries.filter((entry) => !oracle.allowedIds.has(entry.id));
          const forbiddenIds = new Set(forbidden.map((entry) => entry.id));
          if (
            forbidden.some((entry) => request.query.includes(entry.title) || request.query.includes(entry.id))
          )
            counts.forbiddenAimed++;
          if (oracle.allowedIds.size === 0) counts.emptyAllowed++;

          // The selection, candidates included.
          const selection = retrieve(snapshot!, request, resolved, blockedDomains);
          for (const candidate of selection.candidates) expect(forbiddenIds.has(candidate.id)).toBe(false);
          expect(selection.candidates.map((candidate) => candidate.id)).toEqual(
            oracle.candidates.map((candidate) => candidate.id),
          );
          selection.candidates.forEach((candidate, index) => {
            const expected = oracle.candidates[index]!;
            expect(closeTo(candidate.score, expected.score), `${candidate.score} vs ${expected.score}`).toBe(
              true,
            );
            expect([candidate.exact, candidate.alias]).toEqual([expected.exact, expected.alias]);
          });
          expect(selection.candidateCount).toBe(oracle.candidateCount);
          expect(selection.primary.map((entry) => entry.id)).toEqual(oracle.primary);
          expect(selection.expanded.map((entry) => entry.id)).toEqual(oracle.expanded);
          expect(selection.primary.length).toBeGreaterThanOrEqual(
            Math.min(limits.resultLimit, limits.candidateLimit, oracle.allowedMatching),
          );

          // The whole turn: metadata, citations and the block.
          const outcome = await engine.ground({
            query: request.query,
            recentTurns: request.recentTurns,
            scope: { enabledIntegrations: request.enabledIntegrations },
          });
          expect(outcome.metadata.failureReason).toBeUndefined();
          expect(outcome.metadata.selectedIds).toEqual(oracle.primary);
          expect(outcome.metadata.expandedIds).toEqual(oracle.expanded);
          const citations = [
            ...(outcome.retrieval?.citations ?? []),
            ...(outcome.ephemeralContext?.citations ?? []),
          ];
          for (const citation of citations) expect(forbiddenIds.has(citation.id)).toBe(false);
          for (const entry of outcome.retrieval?.entries ?? [])
            expect(forbiddenIds.has(entry.id)).toBe(false);
          const block = outcome.ephemeralContext?.content ?? "";
          expect(block).toBe(outcome.retrieval?.assembledContext ?? "");
          for (const entry of forbidden) {
            const index = registry.findIndex((input) => input.id === entry.id);
            expect(block.includes(secretOf(index)), `secret of ${entry.id} leaked`).toBe(false);
            expect(block.includes(`[KB:${entry.id}@`), `citation of ${entry.id} leaked`).toBe(false);
          }
        }
      }),
      { seed, numRuns: propertyRuns(100) },
    );
    expect(counts.registries).toBeGreaterThan(0);
  });
});
