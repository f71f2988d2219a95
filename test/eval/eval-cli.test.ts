import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { runCli, withTemporaryDirectory, writeTinyBeir } from "./helpers.js";

const repository = join(import.meta.dirname, "..", "..");
const exampleKb = join(repository, "examples", "knowledge-base");

type JsonReport = {
  queryCount: number;
  missingQueries: string[];
  ignoreIdenticalIds: boolean;
  configurations: {
    name: string;
    metrics: { ndcg10: number; recall10: number; recall100: number; mrr10: number };
    calibration: Record<string, { count: number; relevantTop: number; precision: number | null }>;
    latency: { p50: number; p99: number };
    queries: { id: string; metrics: { ndcg10: number }; confidence: string; topId: string | null }[];
  }[];
  diff?: { first: string; second: string; queries: { id: string; delta: number }[] };
};

describe("lexground eval on a BEIR folder", () => {
  it("defaults queries and qrels from the folder, drops the query's own id, counts missing queries as 0", async () => {
    await withTemporaryDirectory(async (directory) => {
      await writeTinyBeir(directory);
      const result = await runCli(["eval", "--kb", "tiny", "--json"], directory);
      expect(result.stderr).toBe("");
      expect(result.code).toBe(0);
      const report = JSON.parse(result.stdout) as JsonReport;
      expect(report.queryCount).toBe(3);
      expect(report.missingQueries).toEqual(["4"]);
      expect(report.ignoreIdenticalIds).toBe(true);
      const [only] = report.configurations;
      expect(only!.name).toBe("default");
      expect(only!.metrics.ndcg10).toBeCloseTo(2 / 3, 12);
      expect(only!.metrics.recall10).toBeCloseTo(2 / 3, 12);
      expect(only!.metrics.mrr10).toBeCloseTo(2 / 3, 12);
      const byId = new Map(only!.queries.map((query) => [query.id, query]));
      expect(byId.get("1")!.topId).toBe("s4");
      expect(byId.get("1")!.metrics.ndcg10).toBe(1);
      expect(byId.has("3")).toBe(false);
      // Both evaluated queries have a relevant top result with medium confidence.
      expect(only!.calibration.medium).toEqual({ count: 2, relevantTop: 2, precision: 1 });
      expect(only!.calibration.high).toEqual({ count: 0, relevantTop: 0, precision: null });
      expect(only!.latency.p50).toBeGreaterThanOrEqual(0);
      expect(only!.latency.p99).toBeGreaterThanOrEqual(only!.latency.p50);
    });
  });

  it("keeps identical ids on request: the exact title match then ranks first and is a confident miss", async () => {
    await withTemporaryDirectory(async (directory) => {
      await writeTinyBeir(directory);
      const result = await runCli(["eval", "--kb", "tiny", "--json", "--keep-identical-ids"], directory);
      expect(result.code).toBe(0);
      const report = JSON.parse(result.stdout) as JsonReport;
      const [only] = report.configurations;
      const first = only!.queries.find((query) => query.id === "1")!;
      expect(first.topId).toBe("1");
      expect(first.confidence).toBe("high");
      expect(first.metrics.ndcg10).toBeCloseTo(2 / Math.log2(3) / 2, 12);
      expect(only!.metrics.ndcg10).toBeCloseTo((2 / Math.log2(3) / 2 + 1) / 3, 12);
      expect(only!.calibration.high).toEqual({ count: 1, relevantTop: 0, precision: 0 });
    });
  });

  it("reads another split's qrels with --split", async () => {
    await withTemporaryDirectory(async (directory) => {
      await writeTinyBeir(directory);
      const result = await runCli(["eval", "--kb", "tiny", "--split", "train", "--json"], directory);
      expect(result.code).toBe(0);
      const report = JSON.parse(result.stdout) as JsonReport;
      expect(report.queryCount).toBe(1);
      expect(report.configurations[0]!.metrics).toEqual({ ndcg10: 0, recall10: 0, recall100: 0, mrr10: 0 });
    });
  });

  it("compares configurations side by side and lists per-query differences", async () => {
    await withTemporaryDirectory(async (directory) => {
      await writeTinyBeir(directory);
      await writeFile(
        join(directory, "stemmed.json"),
        JSON.stringify({ retrieval: { analyzer: "english" } }),
      );
      const table = await runCli(
        [
          "eval",
          "--kb",
          "tiny",
          "--keep-identical-ids",
          "--config",
          '{"name": "titles only", "retrieval": {"fieldWeights": {"summary": 0, "body": 0}}}',
          "stemmed.json",
          "--diff",
        ],
        directory,
      );
      expect(table.stderr).toBe("");
      expect(table.code).toBe(0);
      const lines = table.stdout.split("\n");
      expect(lines.some((line) => /^default\s+0\.5436\s/.test(line))).toBe(true);
      expect(lines.some((line) => /^titles only\s/.test(line))).toBe(true);
      expect(lines.some((line) => /^stemmed\s/.test(line))).toBe(true);
      expect(table.stdout).toContain("Confidence calibration");
      expect(table.stdout).toContain(
        "Per-query differences default → titles only: 1 changed, 0 better, 0 worse",
      );
      expect(table.stdout).toMatch(/\+0\.000\s+1\.000\s+1\.000\s+medium → low\s+2 "wind electricity"/);

      const json = await runCli(
        [
          "eval",
          "--kb",
          "tiny",
          "--keep-identical-ids",
          "--no-default",
          "--config",
          '{"name": "titles only", "retrieval": {"fieldWeights": {"summary": 0, "body": 0}}}',
          '{"retrieval": {"exactBoost": 0}}',
          "--diff",
          "--json",
        ],
        directory,
      );
      const report = JSON.parse(json.stdout) as JsonReport;
      expect(report.configurations.map((configuration) => configuration.name)).toEqual([
        "titles only",
        "config 2",
      ]);
      expect(report.diff!.first).toBe("titles only");
      // Query 2 matches w2 in the title only (low, a single candidate) or in title and body (medium).
      expect(report.diff!.queries).toEqual([
        {
          id: "2",
          text: "wind electricity",
          before: 1,
          after: 1,
          delta: 0,
          confidenceBefore: "low",
          confidenceAfter: "medium",
          topBefore: "w2",
          topAfter: "w2",
        },
      ]);
    });
  });

  it("writes a self-contained HTML report", async () => {
    await withTemporaryDirectory(async (directory) => {
      await writeTinyBeir(directory);
      const result = await runCli(["eval", "--kb", "tiny", "--report", "out.html"], directory);
      expect(result.code).toBe(0);
      expect(result.stdout).toContain("Report          out.html");
      const html = await readFile(join(directory, "out.html"), "utf8");
      expect(html.startsWith("<!doctype html>")).toBe(true);
      expect(html.match(/<svg viewBox/g)?.length).toBe(4);
    });
  });

  it("rejects bad input with a clear message and exit code", async () => {
    await withTemporaryDirectory(async (directory) => {
      await writeTinyBeir(directory);
      const badConfig = await runCli(
        ["eval", "--kb", "tiny", "--config", '{"retrieval": {"k1": -1}}'],
        directory,
      );
      expect(badConfig.code).toBe(2);
      expect(badConfig.stderr).toContain("retrieval.k1 must be a finite number >= 0, got -1");
      const badName = await runCli(["eval", "--kb", "tiny", "--config", '{"name": 3}'], directory);
      expect(badName.code).toBe(2);
      expect(badName.stderr).toContain('"name" must be a non-empty string');
      const noDiffPartner = await runCli(["eval", "--kb", "tiny", "--diff"], directory);
      expect(noDiffPartner.code).toBe(2);
      expect(noDiffPartner.stderr).toContain("--diff needs two configurations");
      const missingQrels = await runCli(["eval", "--kb", "tiny", "--split", "dev"], directory);
      expect(missingQrels.code).toBe(1);
      expect(missingQrels.stderr).toContain("tiny/qrels/dev.tsv: file not found");
      const noKb = await runCli(["eval"], directory);
      expect(noKb.code).toBe(2);
      expect(noKb.stderr).toContain("no knowledge base given");
      await writeFile(join(directory, "bad.tsv"), "1\ts4\n");
      const badQrels = await runCli(["eval", "--kb", "tiny", "--qrels", "bad.tsv"], directory);
      expect(badQrels.code).toBe(1);
      expect(badQrels.stderr).toContain("bad.tsv:1: expected 3 (BEIR) or 4 (TREC) columns, got 2");
      const badDepth = await runCli(["eval", "--kb", "tiny", "--depth", "5"], directory);
      expect(badDepth.code).toBe(2);
    });
  });
});

describe("lexground eval on the example knowledge base", () => {
  it("uses questions.json with each question's integrations, and every figure is consistent", async () => {
    const questions = JSON.parse(await readFile(join(exampleKb, "questions.json"), "utf8")) as unknown[];
    const result = await runCli(["eval", "--kb", exampleKb, "--json"], repository);
    expect(result.code).toBe(0);
    const report = JSON.parse(result.stdout) as JsonReport;
    expect(report.queryCount).toBe(questions.length);
    expect(report.ignoreIdenticalIds).toBe(false);
    const [only] = report.configurations;
    for (const value of Object.values(only!.metrics)) {
      expect(value).toBeGreaterThan(0);
      expect(value).toBeLessThanOrEqual(1);
    }
    const classified = Object.values(only!.calibration).reduce((sum, cell) => sum + cell.count, 0);
    expect(classified).toBe(questions.length);
  });

  it("needs a question's integrations to find integration-bound entries", async () => {
    await withTemporaryDirectory(async (directory) => {
      const question = {
        question: "Where does kestrel_wc_debug_log write its output?",
        expected: ["integrations.woocommerce-plugin-settings"],
      };
      await writeFile(
        join(directory, "with.json"),
        JSON.stringify([{ ...question, integrations: ["woocommerce"] }]),
      );
      await writeFile(join(directory, "without.json"), JSON.stringify([question]));
      const found = await runCli(["eval", "--kb", exampleKb, "--queries", "with.json", "--json"], directory);
      const missed = await runCli(
        ["eval", "--kb", exampleKb, "--queries", "without.json", "--json"],
        directory,
      );
      expect((JSON.parse(found.stdout) as JsonReport).configurations[0]!.metrics.recall100).toBe(1);
      expect((JSON.parse(missed.stdout) as JsonReport).configurations[0]!.metrics.recall100).toBe(0);
    });
  });
});
