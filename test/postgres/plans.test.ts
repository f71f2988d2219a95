/**
 * What a turn's statements cost does not grow with the registry beyond their own postings: the phrase lookups,
 * the posting lists of the turn's terms and the entry ids of phrase hits are read by index, one at a time, never
 * by scanning (and hashing) the phrase or entries tables, which the planner would otherwise do because it cannot
 * know how few n-grams and hits a query has (at 100,000 entries that scan was half a second of every turn). Checked on the plans PostgreSQL
 * actually chooses (`EXPLAIN (FORMAT JSON)`) for a published generation of a few thousand entries.
 *
 * Skipped with a notice without PostgreSQL; a failure under LEXGROUND_REQUIRE_POSTGRES=1.
 */
import { expect, it } from "vitest";
import { normalizeAndValidate } from "../../src/index.js";
import { sqlTextArray } from "../../src/postgres/copyOut.js";
import { phraseGrams } from "../../src/postgres/phraseKeys.js";
import {
  ENTRY_STATISTICS_TARGET,
  encodeKey,
  entryIdsStatement,
  generationTables,
  phraseHitsStatement,
  termPostingsQuery,
} from "../../src/postgres/sql.js";
import { startPostgresSuite } from "../support/postgresSuite.js";

const suite = await startPostgresSuite("PostgreSQL plan tests");
const { describePostgres } = suite;

type PlanNode = {
  "Node Type": string;
  "Relation Name"?: string;
  "Total Cost"?: number;
  Plans?: PlanNode[];
};

/** The tables a plan scans sequentially. */
function sequentialScans(node: PlanNode, found: string[] = []): string[] {
  if (node["Node Type"] === "Seq Scan" && node["Relation Name"]) found.push(node["Relation Name"]);
  for (const child of node.Plans ?? []) sequentialScans(child, found);
  return found;
}

describePostgres("a turn's statements read phrases and entries by index", () => {
  it("the phrase statement and the postings statement scan neither the phrase, the entries nor the postings table", async () => {
    const words = Array.from({ length: 300 }, (_, index) => `word${index}`);
    const entries = Array.from({ length: 4_000 }, (_, index) => ({
      id: `entry.${index}`,
      title: `${words[index % 300]} ${words[(index * 7) % 300]} title ${index}`,
      summary: `${words[(index * 3) % 300]} ${words[(index * 11) % 300]} summary`,
      domain: `d${index % 4}`,
      integrations: index % 9 === 0 ? ["gated"] : [],
      aliases: [`alias ${words[(index * 13) % 300]} ${index}`],
    }));
    const { entries: normalized } = normalizeAndValidate([{ id: "plans", version: "1", entries }], {
      manifestVersion: "0",
    });
    const backend = suite.backend({ schema: "plans" });
    const published = await backend.publish(normalized, { indexOptions: {}, contentKey: "plans" });
    const tables = generationTables("plans", published.generation);
    const pool = suite.newPool({ options: "-c max_parallel_workers_per_gather=0 -c jit=off" });
    const tokens = ["word1", "word7", "title", "alias", "word13", "summary"];
    const terms = tokens.map(encodeKey);
    const keys = [...new Set(phraseGrams(tokens, 4)!.map((gram) => gram.key))];
    const explain = async (text: string, values: unknown[]) => {
      const result = await pool.query({ text: `explain (format json) ${text}`, values });
      return sequentialScans((result.rows[0]!["QUERY PLAN"] as { Plan: PlanNode }[])[0]!.Plan);
    };
    const scanned = [
      ...(await explain(phraseHitsStatement(tables), [keys])),
      ...(await explain(phraseHitsStatement(tables, true), [tokens, 4])),
      ...(await explain(termPostingsQuery(tables, { terms: "$1::text[]", keys: "$2::text[]" }, "coded"), [
        terms,
        keys,
      ])),
    ];
    expect(scanned.filter((table) => /_(phrases|entries|postings)$/.test(table))).toEqual([]);
    // The COPY takes no parameters: its terms and phrase keys are constants in its text, so the planner knows how
    // few keys and terms there are. From subqueries it guessed a million n-grams, costed the statement far above
    // `jit_above_cost`, and a pool without `jit=off` compiled every turn's COPY (1.4–1.8 s per turn).
    const jitPool = suite.newPool({ options: "-c jit=on" });
    const copyQuery = termPostingsQuery(
      tables,
      { terms: sqlTextArray(terms), keys: sqlTextArray(keys) },
      "coded",
    );
    const planned = await jitPool.query({ text: `explain (format json) ${copyQuery}` });
    const plan = (planned.rows[0]!["QUERY PLAN"] as { Plan: PlanNode; JIT?: unknown }[])[0]!;
    const jitAbove = Number((await jitPool.query({ text: "show jit_above_cost" })).rows[0]!.jit_above_cost);
    expect(plan.Plan["Total Cost"]).toBeLessThan(jitAbove);
    // The entries' key is analyzed from a small sample (ANALYZE copies each sampled entry whole), and a turn's
    // entry ids are still read by that key. (At 100,000 entries every statement of a turn had the same plan at
    // either target; here, 4,000 entries, the selection's relations join scans the entries at either.)
    const target = await pool.query({
      text: "select attstattarget from pg_attribute where attrelid = $1::regclass and attname = 'doc'",
      values: [tables.entries],
    });
    expect(Number(target.rows[0]!.attstattarget)).toBe(ENTRY_STATISTICS_TARGET);
    const docs = (count: number) => Array.from({ length: count }, (_, index) => (index * 13) % 4_000);
    const entryScans = [
      ...(await explain(entryIdsStatement(tables), [docs(20)])),
      ...(await explain(entryIdsStatement(tables), [docs(60)])),
    ];
    expect(entryScans.filter((table) => /_entries$/.test(table))).toEqual([]);
  }, 120_000);

  it("spells any text[] value in SQL text exactly (quotes, backslashes, braces, dollar quotes, NULL, empty)", async () => {
    const pool = suite.newPool();
    const values = [
      "plain",
      "",
      "NULL",
      'a "quoted" word',
      "back\\slash\\",
      "{braces},commas",
      "it's",
      "$t$ and $tt$",
      "  spaced  ",
      "\u00e9\u{1F600}\uE000",
      "line\nbreak\ttab",
    ];
    for (const list of [values, [], ["$t$"], [values.join("")]]) {
      const result = await pool.query({ text: `select ${sqlTextArray(list)} as value` });
      expect(result.rows[0]!.value).toEqual(list);
    }
  });
});
