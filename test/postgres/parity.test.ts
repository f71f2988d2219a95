/**
 * Same answers: for the same registry, configuration and query, the PostgreSQL backend selects exactly what the
 * in-memory index selects (ids, order, scores within 1e-9 relative, flags, phrases, breakdowns, confidence,
 * expansion), on random registries (the engine-vs-plain arbitraries, plus analyzers and BM25F), on the example
 * knowledge base through the whole engine (blocks byte for byte), and with hostile ids (NUL, unpaired
 * surrogates, astral characters next to U+E000–U+FFFF, where UTF-8 byte order and UTF-16 code-unit order differ).
 *
 * Runs against a throwaway cluster (see test/support/postgresCluster.ts), or the server at LEXGROUND_POSTGRES_URL.
 * Skipped with a notice without PostgreSQL; a failure under LEXGROUND_REQUIRE_POSTGRES=1.
 */
import fc from "fast-check";
import { beforeAll, expect, it } from "vitest";
import { loadKnowledgeBase } from "../../src/files/index.js";
import {
  buildIndexSnapshot,
  KnowledgeGroundingEngine,
  type KnowledgeResolvedRetrieval,
  type KnowledgeScoredCandidate,
  type KnowledgeSelection,
  type KnowledgeSource,
  normalizeAndValidate,
  resolveRetrieval,
  retrieve,
  retrieveFrom,
} from "../../src/index.js";
import { contributionAt } from "../../src/knowledge/scoringList.js";
import type { PostgresBackend } from "../../src/postgres/index.js";
import { decodeWireList } from "../../src/postgres/wireLists.js";
import { run } from "../cli/helpers.js";
import { startOpenAICompatibleServer } from "../neurolink/support/openaiCompatibleServer.js";
import {
  blockedArbitrary,
  registryArbitrary,
  requestArbitrary,
  resolvedArbitrary,
} from "../property/arbitraries.js";
import { propertyRuns, propertySeed } from "../property/seed.js";
import { startPostgresSuite } from "../support/postgresSuite.js";
import { expectSameCandidates } from "../support/sameCandidates.js";

const suite = await startPostgresSuite("PostgreSQL backend parity tests", { external: true });
const { url, describePostgres } = suite;

function backend(schema: string): PostgresBackend {
  return suite.backend({ schema });
}

/** The shared comparison, plus the adaptive cut-off each candidate carries. */
function sameCandidates(actual: KnowledgeScoredCandidate[], expected: KnowledgeScoredCandidate[]): void {
  expectSameCandidates(actual, expected);
  actual.forEach((candidate, index) => {
    expect(candidate.cut).toEqual(expected[index]!.cut);
  });
}

function sameSelection(actual: KnowledgeSelection, expected: KnowledgeSelection): void {
  expect(actual.primary).toEqual(expected.primary);
  expect(actual.expanded).toEqual(expected.expanded);
  expect(actual.candidateCount).toBe(expected.candidateCount);
  expect(actual.confidence).toBe(expected.confidence);
  expect(actual.expansionSkipped).toBe(expected.expansionSkipped);
  sameCandidates(actual.candidates, expected.candidates);
}

const analysisArbitrary = fc.record({
  analyzer: fc.constantFrom("none" as const, "english" as const, "english-extended" as const),
  scoring: fc.constantFrom("sum" as const, "bm25f" as const),
});

describePostgres("the PostgreSQL backend selects what the in-memory index selects", () => {
  let runs = 0;
  beforeAll(() => {
    runs = 0;
  });

  it("on random registries, queries, scopes and settings (analyzers and BM25F included)", async () => {
    const pg = backend("parity_random");
    // The same generations read by a second reader (its posting cache warm across the requests of a run) and by
    // one without a posting cache.
    const scored = suite.backend({ schema: "parity_random" });
    const cold = suite.backend({ schema: "parity_random", postingCacheBytes: 0 });
    const seed = propertySeed("postgres-vs-memory");
    await fc.assert(
      fc.asyncProperty(
        registryArbitrary,
        fc.array(requestArbitrary, { minLength: 1, maxLength: 4 }),
        resolvedArbitrary,
        analysisArbitrary,
        blockedArbitrary,
        async (registry, requests, resolvedBase, analysis, blocked) => {
          const { entries, validation } = normalizeAndValidate(
            [{ id: "source", version: "v1", entries: registry }],
            {
              manifestVersion: "0",
            },
          );
          if (!validation.ok) return;
          const resolved: KnowledgeResolvedRetrieval = { ...resolvedBase, ...analysis };
          const options = {
            fieldWeights: resolved.fieldWeights,
            k1: resolved.k1,
            b: resolved.b,
            analyzer: analysis.analyzer,
            scoring: analysis.scoring,
          };
          const snapshot = buildIndexSnapshot(entries, options);
          await pg.publish(entries, { indexOptions: options, contentKey: `run-${runs++}` });
          const index = await pg.current();
          const scoredIndex = await scored.current();
          const coldIndex = await cold.current();
          for (const request of requests) {
            const memory = retrieve(snapshot, request, resolved, blocked);
            for (const searcher of [index!.searcher, scoredIndex!.searcher, coldIndex!.searcher]) {
              sameSelection(await retrieveFrom(searcher, request, resolved, blocked), memory);
            }
          }
        },
      ),
      { seed, numRuns: propertyRuns(25) },
    );
  }, 120_000);

  it("ranks exactly: ties at the K-th place, frequent terms, scopes that exclude the best impacts, history", async () => {
    // Deterministic registry where the scorer's MaxScore pruning matters: a few very frequent words, 600 entries
    // sharing one text (exact ties of every score), and the documents with the highest impacts of some words in a
    // domain the scopes block or bound to integrations they disable.
    let state = 0x2545f491;
    const random = () => {
      state = (state + 0x6d2b79f5) >>> 0;
      let value = state;
      value = Math.imul(value ^ (value >>> 15), value | 1);
      value ^= value + Math.imul(value ^ (value >>> 7), value | 61);
      return ((value ^ (value >>> 14)) >>> 0) / 4294967296;
    };
    const vocabulary = Array.from({ length: 400 }, (_, index) => `w${index.toString(36)}`);
    const word = () => vocabulary[Math.floor(vocabulary.length * random() ** 3)]!;
    const words = (count: number) => Array.from({ length: count }, word).join(" ");
    const entries = Array.from({ length: 2_400 }, (_, index) => {
      const tied = index % 4 === 0;
      const top = index % 97 === 0;
      return {
        id: `e${(index * 7919) % 2_400}`,
        title: tied ? "Shared tied title" : `${words(3)}${top ? " w0 w0 w1" : ""}`,
        summary: tied ? "tied summary w0 w1 w2" : words(8),
        body: tied ? "tied body w0 w3 w5 w8" : `${words(20)}${top ? " w0 w0 w0 w1 w1" : ""}`,
        domain: top ? "hidden" : `d${index % 5}`,
        integrations: index % 13 === 0 ? ["Gated"] : [],
        status: index % 31 === 0 ? ("deprecated" as const) : ("active" as const),
        keywords: tied ? ["tied"] : [word()],
      };
    });
    const { entries: normalized, validation } = normalizeAndValidate(
      [{ id: "pruning", version: "1", entries }],
      { manifestVersion: "0" },
    );
    expect(validation.ok).toBe(true);
    const queries = [
      "w0",
      "w0 w1",
      "tied",
      "shared tied title",
      "w0 w3 w5 w8",
      "w2 w7 w1c",
      "summary w0",
      `${vocabulary[150]} ${vocabulary[3]}`,
    ];
    const history = [{ role: "user" as const, text: "w4 w6 w9 tied" }];
    for (const scoring of ["sum", "bm25f"] as const) {
      // Without a posting cache (every list fetched), and with one (filled as the turns go).
      const pg = suite.backend({ schema: `parity_pruning_${scoring}`, postingCacheBytes: 0 });
      const cached = suite.backend({ schema: `parity_pruning_${scoring}` });
      const options = { scoring };
      const snapshot = buildIndexSnapshot(normalized, options);
      await pg.publish(normalized, { indexOptions: options, contentKey: `pruning-${scoring}` });
      const index = await pg.current();
      const cachedIndex = await cached.current();
      for (const candidateLimit of [1, 3, 24]) {
        const resolved = {
          ...resolveRetrieval(undefined),
          candidateLimit,
          resultLimit: candidateLimit,
          scoring,
        };
        for (const query of queries) {
          for (const [enabledIntegrations, blocked] of [
            [[], []],
            [["gated"], ["hidden"]],
            [[], ["hidden", "d1"]],
          ] as [string[], string[]][]) {
            for (const recentTurns of [[], history]) {
              const request = { query, recentTurns, enabledIntegrations };
              const memory = retrieve(snapshot, request, resolved, blocked);
              for (const searcher of [index!.searcher, cachedIndex!.searcher]) {
                const database = await retrieveFrom(searcher, request, resolved, blocked);
                sameSelection(database, memory);
                // Bit for bit: the same operations in the same order.
                expect(
                  database.candidates.map((candidate) => [candidate.lexical, candidate.fieldScores]),
                ).toEqual(memory.candidates.map((candidate) => [candidate.lexical, candidate.fieldScores]));
              }
            }
          }
        }
      }
      expect(cached.postingCache.counts.hits).toBeGreaterThan(0);
      expect(pg.postingCache.size).toBe(0);
    }
  }, 120_000);

  it("scores long queries in the app bit for bit, cold and from the posting cache, never from an older generation's postings", async () => {
    // Documents matching many of a long query's terms in several fields: each score is a sum of dozens of
    // contributions, whose last bits depend on the order of the additions.
    const pg = backend("parity_scored");
    const cold = suite.backend({ schema: "parity_scored", postingCacheBytes: 0 });
    const vocabulary = Array.from({ length: 40 }, (_, index) => `v${index}`);
    let state = 7;
    const next = () => {
      state = (state * 1103515245 + 12345) % 2147483648;
      return state / 2147483648;
    };
    const words = (count: number) =>
      Array.from({ length: count }, () => vocabulary[Math.floor(next() * vocabulary.length)]).join(" ");
    const registry = (prefix: string, count: number) => {
      const entries = Array.from({ length: count }, (_, index) => ({
        id: `${prefix}${index}`,
        title: words(4),
        summary: words(12),
        body: words(60),
        domain: "d",
        integrations: [],
        keywords: [words(2)],
      }));
      return normalizeAndValidate([{ id: "scored", version: prefix, entries }], { manifestVersion: "0" })
        .entries;
    };
    const resolved = { ...resolveRetrieval(undefined), candidateLimit: 24, resultLimit: 24 };
    const requests = Array.from({ length: 6 }, (_, turn) => ({
      query: words(6),
      recentTurns: [{ role: "user" as const, text: vocabulary.slice(turn, turn + 30).join(" ") }],
      enabledIntegrations: [],
    }));
    const compare = async (entries: ReturnType<typeof registry>) => {
      const snapshot = buildIndexSnapshot(entries, {});
      for (const searcher of [(await pg.current())!.searcher, (await cold.current())!.searcher]) {
        for (const request of requests) {
          const database = await retrieveFrom(searcher, request, resolved, []);
          const memory = retrieve(snapshot, request, resolved, []);
          expect(
            database.candidates.map((candidate) => [candidate.id, candidate.lexical, candidate.fieldScores]),
          ).toEqual(
            memory.candidates.map((candidate) => [candidate.id, candidate.lexical, candidate.fieldScores]),
          );
        }
      }
    };
    const first = registry("s", 300);
    await pg.publish(first, { indexOptions: {}, contentKey: "scored-1" });
    await compare(first);
    const afterFirst = { ...pg.postingCache.counts };
    // The same turns again: every term's postings from the cache.
    await compare(first);
    expect(pg.postingCache.counts.misses).toBe(afterFirst.misses);
    expect(pg.postingCache.counts.hits).toBeGreaterThan(afterFirst.hits);
    // A new generation with the same terms (other entries, other dense ids and contributions): the cached
    // postings of the first must not be read.
    const second = registry("t", 280);
    await pg.publish(second, { indexOptions: {}, contentKey: "scored-2" });
    await compare(second);
    expect(pg.postingCache.counts.misses).toBeGreaterThan(afterFirst.misses);
    expect(cold.postingCache.size).toBe(0);
    // Generations published by older lexground: session 10's packed lists (little-endian documents and
    // contributions, no coded lists), then older ones (the contributions as an array only). Readers fall back
    // to each form in turn; publications leave that array null, so it is filled from the coded lists.
    const { generation } = pg.status();
    const olderPool = suite.newPool();
    const postings = `parity_scored.g${generation}_postings`;
    const coded = await olderPool.query({ text: `select term, field, coded_list from ${postings}` });
    await olderPool.query({
      text: `alter table ${postings} add column docs_bytes bytea, add column contribution_bytes bytea`,
    });
    const snapshot = buildIndexSnapshot(second, {});
    const compareOlder = async () => {
      const older = suite.backend({ schema: "parity_scored", postingCacheBytes: 0 });
      for (const request of requests) {
        const database = await retrieveFrom((await older.current())!.searcher, request, resolved, []);
        const memory = retrieve(snapshot, request, resolved, []);
        expect(
          database.candidates.map((candidate) => [candidate.id, candidate.lexical, candidate.fieldScores]),
        ).toEqual(
          memory.candidates.map((candidate) => [candidate.id, candidate.lexical, candidate.fieldScores]),
        );
      }
    };
    for (const row of coded.rows) {
      const list = decodeWireList(row.coded_list as Buffer, 0x7fff_ffff);
      const values = Float64Array.from(list.docs, (_, position) => contributionAt(list, position));
      await olderPool.query({
        text: `update ${postings} set docs_bytes = $3, contribution_bytes = $4 where term = $1 and field = $2`,
        values: [
          row.term,
          row.field,
          Buffer.from(list.docs.buffer, list.docs.byteOffset, list.docs.byteLength),
          Buffer.from(values.buffer, values.byteOffset, values.byteLength),
        ],
      });
    }
    await olderPool.query({ text: `alter table ${postings} drop column coded_list` });
    await compareOlder();
    for (const row of coded.rows) {
      const list = decodeWireList(row.coded_list as Buffer, 0x7fff_ffff);
      const values = Array.from(list.docs, (_, position) => contributionAt(list, position));
      await olderPool.query({
        // Each value as JavaScript's shortest round-trip text: PostgreSQL reads it back to the same double.
        text: `update ${postings} set contributions = $3::float8[] where term = $1 and field = $2`,
        values: [row.term, row.field, `{${values.map(String).join(",")}}`],
      });
    }
    await olderPool.query({
      text: `alter table ${postings} drop column docs_bytes, drop column contribution_bytes`,
    });
    await olderPool.end();
    await compareOlder();
  });

  it("with hostile ids, domains and integrations (NUL, unpaired surrogates, astral vs U+E000–U+FFFF)", async () => {
    const pg = backend("parity_hostile");
    const hostile = [
      "a\u0000b",
      "\ud800lone",
      "x\udfff",
      "\u{1F600}smile",
      "\uE000private",
      "\uFFFDreplacement",
      "\u0001x",
      "plain",
    ];
    const entries = hostile.map((id, index) => ({
      id,
      title: `shared title ${index % 2 === 0 ? "even" : "odd"}`,
      summary: "shared summary words",
      domain: hostile[(index + 1) % hostile.length]!,
      integrations: index % 3 === 0 ? [hostile[(index + 2) % hostile.length]!] : [],
      aliases: [`alias ${id}`],
      relatedEntryIds: [hostile[(index + 3) % hostile.length]!],
    }));
    const { entries: normalized, validation } = normalizeAndValidate(
      [{ id: "hostile", version: "1", entries }],
      { manifestVersion: "0" },
    );
    expect(validation.ok).toBe(true);
    const resolved = resolveRetrieval(undefined);
    const snapshot = buildIndexSnapshot(normalized, {});
    await pg.publish(normalized, { indexOptions: {}, contentKey: "hostile" });
    const index = await pg.current();
    const scopes: [string[], string[]][] = [
      [[], []],
      [[hostile[2]!.toLowerCase()], [hostile[1]!]],
      [hostile.map((id) => id.toLowerCase()), [hostile[4]!, hostile[5]!]],
    ];
    for (const query of [
      "shared title",
      "shared summary words even",
      "alias",
      "a b",
      "smile private replacement",
    ]) {
      for (const [enabledIntegrations, blocked] of scopes) {
        const request = { query, recentTurns: [], enabledIntegrations };
        sameSelection(
          await retrieveFrom(index!.searcher, request, resolved, blocked),
          retrieve(snapshot, request, resolved, blocked),
        );
      }
    }
  });

  it("finds long phrases in long queries as memory does (n-grams spelled by the app, or by the database when too long; again from the kept keys)", async () => {
    const pg = backend("parity_phrases");
    const words = Array.from({ length: 40 }, (_, index) => `w${index % 7}x${index}`);
    const entries = [
      {
        id: "long.alias",
        title: "Long alias",
        summary: "s",
        domain: "d",
        integrations: [],
        aliases: [words.join(" ")],
      },
      {
        id: "short",
        title: "w1x1 w2x2",
        summary: "s",
        domain: "d",
        integrations: [],
        aliases: ["w0x0", "w3x3 w4x4"],
      },
      { id: "repeat", title: "Repeat", summary: "s", domain: "d", integrations: [], aliases: ["w5x5 w6x6"] },
    ];
    const { entries: normalized } = normalizeAndValidate([{ id: "phrases", version: "1", entries }], {
      manifestVersion: "0",
    });
    const snapshot = buildIndexSnapshot(normalized, {});
    await pg.publish(normalized, { indexOptions: {}, contentKey: "phrases" });
    const index = await pg.current();
    const resolved = resolveRetrieval(undefined);
    const filler = "w5x5 w6x6 w0x0 filler ".repeat(150);
    const queries = [
      `${filler}${words.join(" ")}`,
      `${words.join(" ")} ${words.join(" ")}`,
      "w1x1 w2x2 w0x0",
      words.slice(0, 12).join(" "),
      "w5x5 w6x6 w3x3 w4x4",
    ];
    for (const query of [...queries, ...queries]) {
      const request = { query, recentTurns: [], enabledIntegrations: [] };
      const memory = retrieve(snapshot, request, resolved, []);
      sameSelection(await retrieveFrom(index!.searcher, request, resolved, []), memory);
    }
  });

  it("breaks ties at the top-K cut as memory does: lower id first in UTF-16 code-unit order", async () => {
    const pg = backend("parity_ties");
    // Astral characters (surrogates, 0xD800–0xDFFF) sort before U+E000–U+FFFF in code units, after them in UTF-8.
    const ids = ["t\uFF21", "t\u{1F600}", "t\uE000", "t\u{10000}", "tz", "t\uFFFD", "ta", "t\u{1F4A9}"];
    const entries = ids.map((id) => ({
      id,
      title: "Identical title",
      summary: "identical summary",
      domain: "d",
      integrations: [],
    }));
    const { entries: normalized } = normalizeAndValidate([{ id: "ties", version: "1", entries }], {
      manifestVersion: "0",
    });
    const snapshot = buildIndexSnapshot(normalized, {});
    await pg.publish(normalized, { indexOptions: {}, contentKey: "ties" });
    const index = await pg.current();
    for (const candidateLimit of [1, 2, 3]) {
      const resolved = { ...resolveRetrieval(undefined), candidateLimit, resultLimit: candidateLimit };
      const request = { query: "summary", recentTurns: [], enabledIntegrations: [] };
      const memory = retrieve(snapshot, request, resolved, []);
      expect(memory.primary.length).toBe(candidateLimit);
      sameSelection(await retrieveFrom(index!.searcher, request, resolved, []), memory);
    }
  });

  it("through the engine on the example knowledge base: the same blocks, byte for byte, for every question", async () => {
    const { sources } = await loadKnowledgeBase("examples/knowledge-base");
    const questions = (
      JSON.parse(
        await (await import("node:fs/promises")).readFile("examples/knowledge-base/questions.json", "utf8"),
      ) as { question: string }[]
    ).map((item) => item.question);
    for (const preset of ["neurolink", "recommended"] as const) {
      const pg = backend(`parity_example_${preset}`);
      const config = { enabled: true, sources: sources as KnowledgeSource[], preset, timeoutMs: 30_000 };
      const memory = new KnowledgeGroundingEngine(config);
      const database = new KnowledgeGroundingEngine({ ...config, backend: pg });
      await Promise.all([memory.ready(), database.ready()]);
      expect(database.getStatus()).toMatchObject({
        ready: true,
        entryCount: 191,
        backend: { degraded: false },
      });
      for (const question of questions) {
        const scope = { enabledIntegrations: ["shopify"] };
        const [expected, actual] = [
          await memory.ground({ query: question, scope }),
          await database.ground({ query: question, scope }),
        ];
        expect(actual.metadata.failureReason).toBeUndefined();
        expect(actual.ephemeralContext).toEqual(expected.ephemeralContext);
        expect({ ...actual.metadata, durationMs: 0 }).toEqual({ ...expected.metadata, durationMs: 0 });
        sameCandidates(actual.retrieval!.candidates!, expected.retrieval!.candidates!);
      }
    }
  }, 120_000);

  it("publications write no impact blocks nor forward rows (layout 1, which no turn reads): the same blocks", async () => {
    const { sources } = await loadKnowledgeBase("examples/knowledge-base");
    const pg = suite.backend({ schema: "parity_layout" });
    const config = { enabled: true, sources: sources as KnowledgeSource[], timeoutMs: 30_000 };
    const memory = new KnowledgeGroundingEngine(config);
    const database = new KnowledgeGroundingEngine({ ...config, backend: pg });
    await Promise.all([memory.ready(), database.ready()]);
    const generation = pg.status().generation;
    expect(generation).toBeGreaterThan(0);
    const inspector = suite.newPool({ max: 1 });
    try {
      const found = await inspector.query({
        text: `select g.layout, to_regclass($2) is null as no_impacts, to_regclass($3) is null as no_forward
          from parity_layout.generations g where g.generation = $1`,
        values: [generation, `parity_layout.g${generation}_impacts`, `parity_layout.g${generation}_forward`],
      });
      expect(found.rows[0]).toMatchObject({ layout: 1, no_impacts: true, no_forward: true });
    } finally {
      await inspector.end();
    }
    for (const query of ["instant payouts", "how do refunds work with shopify", "payout schedule weekly"]) {
      const scope = { enabledIntegrations: ["shopify"] };
      const [expected, actual] = [
        await memory.ground({ query, scope }),
        await database.ground({ query, scope }),
      ];
      expect(actual.metadata.failureReason).toBeUndefined();
      expect(actual.ephemeralContext).toEqual(expected.ephemeralContext);
      sameCandidates(actual.retrieval!.candidates!, expected.retrieval!.candidates!);
    }
  }, 60_000);

  it("entries of a few kilobytes stay in their table's pages (no TOAST); larger ones go out of line; same blocks", async () => {
    const words = ["ledger", "payout", "refund", "invoice", "dispute", "balance", "transfer", "charge"];
    const prose = (seed: number, count: number) =>
      Array.from({ length: count }, (_, index) => words[(seed * 7 + index * 3) % words.length]).join(" ");
    const entries = Array.from({ length: 24 }, (_, index) => ({
      id: `toast.entry-${index}`,
      title: `${words[index % words.length]} guide ${index}`,
      summary: prose(index, 20),
      // About 3 KB of JSON per entry (as the benchmark's registry), one entry of about 20 KB.
      body: prose(index + 1, index === 5 ? 2_600 : 350),
      domain: "toast",
      integrations: [],
    }));
    const sources: KnowledgeSource[] = [{ id: "toast", version: "1", entries }];
    const pg = suite.backend({ schema: "parity_toast" });
    const config = { enabled: true, sources, timeoutMs: 30_000 };
    const memory = new KnowledgeGroundingEngine(config);
    const database = new KnowledgeGroundingEngine({ ...config, backend: pg });
    await Promise.all([memory.ready(), database.ready()]);
    const generation = pg.status().generation;
    const inspector = suite.newPool({ max: 1 });
    try {
      const found = await inspector.query({
        text: `select count(*) filter (where octet_length(e.entry) between 2500 and 8000)::int as typical
          from parity_toast.g${generation}_entries e`,
      });
      expect(found.rows[0]!.typical).toBeGreaterThan(20);
      const toasted = await inspector.query({
        text: `select t.relname as toast from pg_class c join pg_class t on t.oid = c.reltoastrelid
          where c.oid = to_regclass($1)`,
        values: [`parity_toast.g${generation}_entries`],
      });
      const chunks = await inspector.query({
        text: `select count(distinct chunk_id)::int as values from pg_toast.${toasted.rows[0]!.toast}`,
      });
      // Only the one large entry's JSON went out of line (each typical entry did before, as one TOAST value).
      expect(chunks.rows[0]!.values).toBe(1);
    } finally {
      await inspector.end();
    }
    for (const query of ["ledger payout refund", "dispute balance guide 5", "transfer charge invoice"]) {
      const [expected, actual] = [await memory.ground({ query }), await database.ground({ query })];
      expect(actual.metadata.failureReason).toBeUndefined();
      expect(actual.ephemeralContext).toEqual(expected.ephemeralContext);
      sameCandidates(actual.retrieval!.candidates!, expected.retrieval!.candidates!);
    }
  }, 60_000);

  it("the CLI: build --backend publishes (then reuses), query --backend selects what query selects in memory", async () => {
    const schema = ["--backend", url, "--backend-schema", "parity_cli", "--preset", "recommended"];
    const cwd = process.cwd();
    const built = await run(["build", "examples/knowledge-base", ...schema, "--json"], { cwd });
    expect(built.code, built.stderr).toBe(0);
    expect(JSON.parse(built.stdout).published).toMatchObject({ reused: false, entryCount: 191 });
    const again = await run(["build", "examples/knowledge-base", ...schema, "--json"], { cwd });
    expect(JSON.parse(again.stdout).published).toMatchObject({ reused: true });
    const question = "How do I turn on instant payouts?";
    const database = await run(["query", question, ...schema, "--json"], { cwd });
    expect(database.code, database.stderr).toBe(0);
    const memory = await run(
      ["query", question, "--kb", "examples/knowledge-base", "--preset", "recommended", "--json"],
      { cwd },
    );
    const memoryReport = JSON.parse(memory.stdout) as {
      primary: { id: string }[];
      context: { text: string };
    };
    const databaseReport = JSON.parse(database.stdout) as { selectedIds: string[]; context: string };
    expect(databaseReport.selectedIds).toEqual(memoryReport.primary.map((entry) => entry.id));
    expect(databaseReport.context).toBe(memoryReport.context.text);
  }, 60_000);

  it("the CLI: ask --backend answers as ask --kb does, offline and through a model", async () => {
    const schema = ["--backend", url, "--backend-schema", "parity_ask"];
    const cwd = process.cwd();
    const question = "How do I turn on instant payouts?";
    const local = ["--kb", "examples/knowledge-base"];
    // Nothing published yet in this schema: a clear failure, not an empty answer.
    const empty = await run(["ask", question, ...schema, "--offline"], { cwd });
    expect(empty.code).toBe(1);
    expect(empty.stderr).toMatch(/nothing is published to PostgreSQL/);
    const offline = async (knowledge: string[]) => {
      const result = await run(["ask", question, ...knowledge, "--offline", "--json"], { cwd });
      expect(result.code, result.stderr).toBe(0);
      return JSON.parse(result.stdout) as Record<string, unknown>;
    };
    const published = await offline([...local, ...schema]);
    expect(published.answer).toMatch(/\[KB:/);
    expect(published).toEqual(await offline(local));
    // A reader: no --kb, serves what the first run published.
    expect(await offline(schema)).toEqual(published);

    const server = await startOpenAICompatibleServer();
    try {
      server.script("test-model", { kind: "text", text: "See [KB:payouts.instant@v1]." });
      const model = async (knowledge: string[]) => {
        const result = await run(
          [
            "ask",
            question,
            ...knowledge,
            "--provider",
            "openai-compatible",
            "--model",
            "test-model",
            "--json",
          ],
          { cwd, env: { OPENAI_COMPATIBLE_BASE_URL: server.baseURL } },
        );
        expect(result.code, result.stderr).toBe(0);
        const system = server.requests.at(-1)!.messages.find((message) => message.role === "system");
        return { answer: JSON.parse(result.stdout) as Record<string, unknown>, system: system?.content };
      };
      const [fromBackend, fromKnowledgeBase] = [await model(schema), await model(local)];
      expect(fromBackend.system).toContain("<knowledge_context>");
      expect(fromBackend.system).toBe(fromKnowledgeBase.system);
      const comparable = ({ knowledge, ...rest }: Record<string, unknown>) => ({
        ...rest,
        knowledge: { ...(knowledge as object), durationMs: 0 },
      });
      expect(comparable(fromBackend.answer)).toEqual(comparable(fromKnowledgeBase.answer));
      expect(fromBackend.answer.alsoInContext).not.toEqual([]);
    } finally {
      await server.close();
    }
  }, 90_000);
});
