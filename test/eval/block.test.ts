/** Block-level evaluation end to end: hand-checked figures, failing queries, and parity with `ground()`. */
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { loadEvalCollection } from "../../src/eval/collection.js";
import { evaluateConfigurations } from "../../src/eval/run.js";
import { KnowledgeGroundingEngine } from "../../src/knowledge/engine.js";
import type { KnowledgeContextConfig, KnowledgeRetrievalConfig } from "../../src/types/knowledge.js";
import { runCli, withTemporaryDirectory, writeTinyBeir } from "./helpers.js";

const repository = join(import.meta.dirname, "..", "..");
const exampleKb = join(repository, "examples", "knowledge-base");

type BlockJson = {
  configurations: {
    name: string;
    budget: number;
    block: {
      entries: number;
      tokens: number;
      precision: number | null;
      recall: number;
      hitShare: number;
      emptyBlocks: number;
      passageQueries: number;
      passageShare: number | null;
    };
    failures: {
      id: string;
      expected: { id: string; code: string; reason: string }[];
      included: { id: string; rank: number | null }[];
      missedPassage: string | null;
    }[];
    queries: { id: string; block: { includedIds: string[]; tokens: number } }[];
  }[];
};

describe("block figures on the tiny collection (hand-checked)", () => {
  it("query 1 gets [1, s4], query 2 gets [w2, 1], query 4 is missing: precision 1/2, recall and hit 2/3", async () => {
    await withTemporaryDirectory(async (directory) => {
      await writeTinyBeir(directory);
      const result = await runCli(["eval", "--kb", "tiny", "--json"], directory);
      expect(result.code).toBe(0);
      const [only] = (JSON.parse(result.stdout) as BlockJson).configurations;
      // The block is what ground() hands the model, so the query's own id "1" (an exact title match) stays in
      // it even though the BEIR ranking drops it; it is not judged relevant.
      const byId = new Map(only!.queries.map((query) => [query.id, query.block]));
      expect(byId.get("1")!.includedIds).toEqual(["1", "s4"]);
      expect(byId.get("2")!.includedIds).toEqual(["w2", "1"]);
      expect(only!.block.entries).toBe(2);
      expect(only!.block.precision).toBe(0.5);
      expect(only!.block.recall).toBeCloseTo(2 / 3, 12);
      expect(only!.block.hitShare).toBeCloseTo(2 / 3, 12);
      expect(only!.block.emptyBlocks).toBe(0);
      expect(only!.block.passageShare).toBeNull();
      expect(only!.failures).toEqual([]);
      expect(only!.block.tokens).toBe((byId.get("1")!.tokens + byId.get("2")!.tokens) / 2);
    });
  });

  it("lists a failing query with the reason and what was included instead (table and JSON)", async () => {
    await withTemporaryDirectory(async (directory) => {
      await writeTinyBeir(directory);
      // The train split judges h3 relevant to "wind electricity": h3 has neither word.
      const json = await runCli(["eval", "--kb", "tiny", "--split", "train", "--json"], directory);
      const [only] = (JSON.parse(json.stdout) as BlockJson).configurations;
      expect(only!.block.hitShare).toBe(0);
      expect(only!.failures).toHaveLength(1);
      const [failure] = only!.failures;
      expect(failure!.id).toBe("2");
      expect(failure!.expected).toEqual([
        {
          id: "h3",
          grade: 1,
          rank: null,
          code: "not-retrieved",
          reason: "no phrase or lexical match within the evaluated ranking depth",
        },
      ]);
      expect(failure!.included.map((entry) => [entry.id, entry.rank])).toEqual([
        ["w2", 1],
        ["1", 2],
      ]);

      const html = await runCli(
        ["eval", "--kb", "tiny", "--split", "train", "--report", "out.html"],
        directory,
      );
      expect(html.code).toBe(0);
      const page = await readFile(join(directory, "out.html"), "utf8");
      expect(page).toContain("default: 1 of 1 queries");
      expect(page).toContain(
        "<li><code>h3</code>: no phrase or lexical match within the evaluated ranking depth</li>",
      );
      expect(page).toContain("<li><code>w2</code> (rank 1, score ");

      // One entry per block: s4 (relevant to query 1) ranks second behind the exact match "1".
      const table = await runCli(
        ["eval", "--kb", "tiny", "--config", '{"name": "one", "retrieval": {"resultLimit": 1}}'],
        directory,
      );
      expect(table.code).toBe(0);
      expect(table.stdout).toMatch(/^default\s+4000\s+2\.00\s+\d+\s+0\.5000\s+0\.6667\s+0\.6667\s+–$/m);
      expect(table.stdout).toMatch(/^one\s+4000\s+1\.00\s+\d+\s+0\.5000\s+0\.3333\s+0\.3333\s+–$/m);
      expect(table.stdout).toContain("Failing queries: one (1 of 2:");
      expect(table.stdout).toContain('  1 "solar panels"');
      expect(table.stdout).toContain("    expected s4: ranked 2; the block takes the top 1");
      expect(table.stdout).toContain("    included instead: 1 (rank 1, score ");
    });
  });

  it("a tight budget drops a selected entry: the reason is the budget", async () => {
    await withTemporaryDirectory(async (directory) => {
      await writeTinyBeir(directory);
      const collection = await loadEvalCollection(join(directory, "tiny"));
      const [full] = evaluateConfigurations(collection.entries, collection.queries, collection.qrels, [
        { name: "default", settings: {} },
      ]).configurations;
      const first = full!.queries.find((query) => query.id === "1")!.block.tokens;
      // A budget that holds the block of query 1 without s4: the opening plus entry "1" only.
      const [tight] = evaluateConfigurations(collection.entries, collection.queries, collection.qrels, [
        { name: "tight", settings: { context: { maxTokens: first - 20 } } },
      ]).configurations;
      const failure = tight!.failures.find((entry) => entry.id === "1")!;
      expect(failure.expected[0]).toMatchObject({ id: "s4", code: "budget" });
    });
  });
});

describe("the evaluated block is the one ground() hands the model", () => {
  const cases: { name: string; retrieval?: KnowledgeRetrievalConfig; context?: KnowledgeContextConfig }[] = [
    { name: "default" },
    {
      name: "tuned, 1,000-token budget, no citations",
      retrieval: {
        analyzer: "english",
        scoring: "bm25f",
        fieldWeights: { title: 2, summary: 1 },
        exactBoost: 10,
      },
      context: { maxTokens: 1000, includeCitations: false },
    },
  ];
  for (const { name, retrieval, context } of cases) {
    it(`example knowledge base, ${name}: same entries and tokens for every question`, async () => {
      const collection = await loadEvalCollection(exampleKb);
      const settings = { ...(retrieval ? { retrieval } : {}), ...(context ? { context } : {}) };
      const [result] = evaluateConfigurations(collection.entries, collection.queries, collection.qrels, [
        { name, settings },
      ]).configurations;
      const engine = new KnowledgeGroundingEngine({
        enabled: true,
        sources: collection.knowledgeBase.sources,
        timeoutMs: 60_000,
        ...settings,
      });
      await engine.ready();
      const byId = new Map(result!.queries.map((query) => [query.id, query.block]));
      for (const query of collection.queries) {
        const outcome = await engine.ground({
          query: query.text,
          scope: { enabledIntegrations: query.integrations ?? [] },
        });
        const block = byId.get(query.id)!;
        expect(block.includedIds, query.id).toEqual(
          outcome.ephemeralContext?.citations?.map((citation) => citation.id) ?? [],
        );
        expect(block.tokens, query.id).toBe(outcome.metadata.contextTokens);
      }
    });
  }
});

describe("judged passages", () => {
  it("a question's passage reaches the block when its entry is rendered in full, not when only its summary fits", async () => {
    await withTemporaryDirectory(async (directory) => {
      const question = {
        question: "What does payouts.instantEnabled do?",
        expected: ["payouts.instant-payouts"],
        passage: "Up to 10 instant payouts a day and 50,000 per payout.",
      };
      await writeFile(join(directory, "questions.json"), JSON.stringify([question]));
      const run = async (config: string) => {
        const result = await runCli(
          [
            "eval",
            "--kb",
            exampleKb,
            "--queries",
            "questions.json",
            "--no-default",
            "--config",
            config,
            "--json",
          ],
          directory,
        );
        expect(result.stderr).toBe("");
        return (JSON.parse(result.stdout) as BlockJson).configurations[0]!;
      };
      const roomy = await run('{"name": "roomy"}');
      expect(roomy.block.passageQueries).toBe(1);
      expect(roomy.block.passageShare).toBe(1);
      expect(roomy.failures).toEqual([]);
      // 250 tokens: the opening and the entry's summary fit (185 tokens), its body does not.
      const tight = await run(
        '{"name": "tight", "context": {"maxTokens": 250}, "retrieval": {"relationLimit": 0}}',
      );
      expect([roomy.budget, tight.budget]).toEqual([4000, 250]);
      expect(tight.block.hitShare).toBe(1);
      expect(tight.block.passageShare).toBe(0);
      expect(tight.failures[0]!.missedPassage).toBe(question.passage);
      expect(tight.failures[0]!.expected[0]).toMatchObject({
        id: "payouts.instant-payouts",
        code: "included",
      });
    });
  });
});
