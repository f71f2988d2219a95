/**
 * Frequent lists deferred (`src/postgres/deferredLists.ts`): a generation published with frequent lists (option
 * `frequentListDocuments`, set low here so that small registries have them) answers exactly as the in-memory index,
 * bit for bit, whether a turn read the candidates' frequent rows, read every list whole after all, or had the lists
 * in its posting cache; and turns do take each way.
 *
 * Runs against a throwaway cluster (see test/support/postgresCluster.ts), or the server at LEXGROUND_POSTGRES_URL.
 * Skipped with a notice without PostgreSQL; a failure under LEXGROUND_REQUIRE_POSTGRES=1.
 */
import fc from "fast-check";
import { expect, it } from "vitest";
import {
  buildIndexSnapshot,
  type KnowledgeResolvedRetrieval,
  type KnowledgeSelection,
  normalizeAndValidate,
  resolveRetrieval,
  retrieve,
  retrieveFrom,
} from "../../src/index.js";
import { deferralCosts } from "../../src/postgres/deferredLists.js";
import type { PostgresBackend } from "../../src/postgres/index.js";
import { TurnProfile } from "../../src/postgres/turnProfile.js";
import {
  blockedArbitrary,
  registryArbitrary,
  requestArbitrary,
  resolvedArbitrary,
} from "../property/arbitraries.js";
import { propertyRuns, propertySeed } from "../property/seed.js";
import { startPostgresSuite } from "../support/postgresSuite.js";
import { expectSameCandidates } from "../support/sameCandidates.js";

const suite = await startPostgresSuite("PostgreSQL frequent-list tests", { external: true });
const { describePostgres } = suite;

function sameSelection(actual: KnowledgeSelection, expected: KnowledgeSelection): void {
  expect(actual.primary).toEqual(expected.primary);
  expect(actual.expanded).toEqual(expected.expanded);
  expect(actual.candidateCount).toBe(expected.candidateCount);
  expect(actual.confidence).toBe(expected.confidence);
  expectSameCandidates(actual.candidates, expected.candidates);
  // Bit for bit: the same sums in the same order.
  expect(actual.candidates.map((candidate) => [candidate.lexical, candidate.fieldScores])).toEqual(
    expected.candidates.map((candidate) => [candidate.lexical, candidate.fieldScores]),
  );
}

/** Counts of the ways turns took (the backend's turn profile). */
function ways(backend: PostgresBackend): { rows: number; whole: number } {
  const steps = backend.turnProfile?.steps;
  return { rows: steps?.get("defer: rows")?.count ?? 0, whole: steps?.get("defer: whole")?.count ?? 0 };
}

/** How many turns read their candidates' rows in two rounds. */
function twoRounds(backend: PostgresBackend): number {
  return backend.turnProfile?.steps.get("defer: two rounds")?.count ?? 0;
}

/** A registry where a few words are in most entries (frequent lists) and others are rare. */
function skewedRegistry(size: number, seed: number) {
  let state = seed >>> 0;
  const random = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let value = state;
    value = Math.imul(value ^ (value >>> 15), value | 1);
    value ^= value + Math.imul(value ^ (value >>> 7), value | 61);
    return ((value ^ (value >>> 14)) >>> 0) / 4294967296;
  };
  const vocabulary = Array.from({ length: 500 }, (_, index) => `w${index.toString(36)}`);
  const word = () => vocabulary[Math.floor(vocabulary.length * random() ** 4)]!;
  const words = (count: number) => Array.from({ length: count }, word).join(" ");
  return Array.from({ length: size }, (_, index) => ({
    id: `e${(index * 7919) % size}`,
    title: index % 9 === 0 ? "Shared tied title" : words(3),
    summary: words(8),
    body: index % 9 === 0 ? "tied body w0 w1 w2" : words(30),
    domain: index % 37 === 0 ? "hidden" : `d${index % 5}`,
    integrations: index % 13 === 0 ? ["Gated"] : [],
    status: index % 31 === 0 ? ("deprecated" as const) : ("active" as const),
    keywords: [word()],
  }));
}

describePostgres("frequent lists deferred: the same answers as in memory", () => {
  it("on a skewed registry: long and short queries, scopes, history, every cut; rows read and lists read whole", async () => {
    const { entries, validation } = normalizeAndValidate(
      [{ id: "skewed", version: "1", entries: skewedRegistry(3_000, 0x2545f491) }],
      { manifestVersion: "0" },
    );
    expect(validation.ok).toBe(true);
    const pg = suite.backend({ schema: "frequent_skewed", postingCacheBytes: 0, frequentListDocuments: 150 });
    const cached = suite.backend({ schema: "frequent_skewed", frequentListDocuments: 150 });
    // Written by default only from 262,144 entries: the same registry without the option has none.
    const plain = suite.backend({ schema: "frequent_none", postingCacheBytes: 0 });
    pg.turnProfile = new TurnProfile();
    cached.turnProfile = new TurnProfile();
    plain.turnProfile = new TurnProfile();
    const snapshot = buildIndexSnapshot(entries, {});
    await pg.publish(entries, { indexOptions: {}, contentKey: "skewed" });
    await plain.publish(entries, { indexOptions: {}, contentKey: "skewed" });
    const searchers = [(await pg.current())!.searcher, (await cached.current())!.searcher];
    const plainSearcher = (await plain.current())!.searcher;
    const queries = [
      "w0",
      "w0 w1 w2 w3",
      "tied body",
      "w0 w1 w2 w3 w4 w5 w6 w7 w8 w9 wa wb wc wd we wf wg",
      "shared tied title w5",
      "w1c w2d w0 w1",
      `${Array.from({ length: 60 }, (_, index) => `w${(index * 7).toString(36)}`).join(" ")}`,
    ];
    const history = [{ role: "user" as const, text: "w4 w6 w9 tied w0 w1 w3 wz" }];
    for (const candidateLimit of [1, 5, 24, 48]) {
      const resolved = {
        ...resolveRetrieval(undefined),
        candidateLimit,
        resultLimit: Math.min(candidateLimit, 12),
      };
      for (const query of queries)
        for (const [enabledIntegrations, blocked] of [
          [[], []],
          [["gated"], ["hidden"]],
          [[], ["hidden", "d1", "d2"]],
        ] as [string[], string[]][])
          for (const recentTurns of [[], history]) {
            const request = { query, recentTurns, enabledIntegrations };
            const memory = retrieve(snapshot, request, resolved, blocked);
            for (const searcher of [...searchers, plainSearcher])
              sameSelection(await retrieveFrom(searcher, request, resolved, blocked), memory);
          }
    }
    // Turns took both ways; the generation without frequent lists never defers.
    expect(ways(pg).rows).toBeGreaterThan(0);
    expect(ways(pg).whole).toBeGreaterThan(0);
    expect(ways(plain)).toEqual({ rows: 0, whole: 0 });
    // Some read their candidates' rows in two rounds (the best partial sums first), some in one.
    expect(twoRounds(pg)).toBeGreaterThan(0);
    expect(twoRounds(pg)).toBeLessThan(ways(pg).rows);
    expect(cached.postingCache.counts.hits).toBeGreaterThan(0);
    // Frequent lists read whole only to be summed came from the cache's coded bytes too (never without a cache).
    expect(cached.turnProfile.steps.get("frequent kept")?.count ?? 0).toBeGreaterThan(0);
    expect(pg.turnProfile.steps.get("frequent kept")).toBeUndefined();
    const statistics = await suite.newPool({ max: 1 }).query({
      text: "select g.statistics from frequent_skewed.generations g join frequent_skewed.serving s using (generation)",
    });
    const frequent = JSON.parse(String(statistics.rows[0]!.statistics)).frequent;
    expect(frequent).toMatchObject({ minimumDocuments: 150 });
    expect(frequent.lists).toBeGreaterThan(10);
  }, 180_000);

  it("on random registries, queries, scopes and settings (BM25F never defers)", async () => {
    const pg = suite.backend({ schema: "frequent_random", postingCacheBytes: 0, frequentListDocuments: 2 });
    pg.turnProfile = new TurnProfile();
    const seed = propertySeed("postgres-frequent-vs-memory");
    // Every frequent list deferred, and rows read even where a small registry's lists would cost less (same answers
    // either way).
    const costs = { ...deferralCosts };
    deferralCosts.listBytesPerPosting = Number.POSITIVE_INFINITY;
    deferralCosts.share = Number.POSITIVE_INFINITY;
    // Two rounds of rows whenever there are more candidates than K, the first round of K.
    deferralCosts.twoStagesFrom = 1;
    deferralCosts.firstStage = 1;
    // Partial sums by blocks of 3 entries: every block boundary a list may cross.
    deferralCosts.sumBlock = 3;
    suite.cleanup(async () => {
      Object.assign(deferralCosts, costs);
    });
    let runs = 0;
    let bm25fRows = 0;
    await fc.assert(
      fc.asyncProperty(
        registryArbitrary,
        fc.array(requestArbitrary, { minLength: 1, maxLength: 4 }),
        resolvedArbitrary,
        fc.constantFrom("sum" as const, "bm25f" as const),
        blockedArbitrary,
        async (registry, requests, resolvedBase, scoring, blocked) => {
          const { entries, validation } = normalizeAndValidate(
            [{ id: "source", version: "v1", entries: registry }],
            { manifestVersion: "0" },
          );
          if (!validation.ok) return;
          const resolved: KnowledgeResolvedRetrieval = { ...resolvedBase, scoring };
          const options = { fieldWeights: resolved.fieldWeights, k1: resolved.k1, b: resolved.b, scoring };
          const snapshot = buildIndexSnapshot(entries, options);
          await pg.publish(entries, { indexOptions: options, contentKey: `run-${runs++}` });
          const searcher = (await pg.current())!.searcher;
          const before = ways(pg);
          for (const request of requests)
            sameSelection(
              await retrieveFrom(searcher, request, resolved, blocked),
              retrieve(snapshot, request, resolved, blocked),
            );
          const after = ways(pg);
          if (scoring === "bm25f") bm25fRows += after.rows + after.whole - before.rows - before.whole;
        },
      ),
      { seed, numRuns: propertyRuns(30) },
    );
    expect(bm25fRows).toBe(0);
    // Random draws need not give a turn more candidates than K (CI once drew none), so the ways are asserted on a
    // fixed registry with the same settings: queries of frequent words over a few hundred entries, K of 1 to 12,
    // read rows, in two rounds whenever there are more candidates than K.
    const { entries } = normalizeAndValidate(
      [{ id: "skewed", version: "1", entries: skewedRegistry(240, 0x9e3779b9) }],
      { manifestVersion: "0" },
    );
    const resolvedSum: KnowledgeResolvedRetrieval = { ...resolveRetrieval(undefined), scoring: "sum" };
    const snapshot = buildIndexSnapshot(entries, {});
    await pg.publish(entries, { indexOptions: {}, contentKey: "fixed" });
    const searcher = (await pg.current())!.searcher;
    const rowsBefore = ways(pg).rows;
    const twoRoundsBefore = twoRounds(pg);
    for (const candidateLimit of [1, 3, 12])
      for (const query of ["w0 w1", "w0 w1 w2 w3 w5", "tied body w2"]) {
        const resolved = { ...resolvedSum, candidateLimit, resultLimit: candidateLimit };
        const request = { query, recentTurns: [], enabledIntegrations: [] };
        sameSelection(
          await retrieveFrom(searcher, request, resolved, []),
          retrieve(snapshot, request, resolved, []),
        );
      }
    expect(ways(pg).rows).toBeGreaterThan(rowsBefore);
    expect(twoRounds(pg)).toBeGreaterThan(twoRoundsBefore);
  }, 180_000);
});
