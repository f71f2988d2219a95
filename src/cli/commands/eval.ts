/**
 * `lexground eval`: runs every judged query through retrieval for one or more configurations side by side and
 * reports nDCG@10, Recall@10, Recall@100, MRR@10, latency, confidence calibration and the block figures (entries,
 * tokens, precision, recall, hit share and passages of the block `ground()` would hand the model) with the failing
 * queries, as a table, JSON or an HTML report; `--diff` lists the per-query differences between the first two
 * configurations.
 */
import { stat, writeFile } from "node:fs/promises";
import { resolve } from "node:path";
import { BLOCK_RECALL_CAP, type BlockFailure } from "../../eval/block.js";
import { type EvalCollection, EvalKnowledgeBaseError, loadEvalCollection } from "../../eval/collection.js";
import { EvalDataError } from "../../eval/data.js";
import { METRIC_LABELS, METRIC_NAMES } from "../../eval/metrics.js";
import { renderHtmlReport } from "../../eval/report.js";
import {
  CONFIDENCE_CLASSES,
  diffConfigurations,
  type EvalConfiguration,
  EvalConfigurationError,
  type EvalQueryDiff,
  type EvalReport,
  evaluateConfigurations,
} from "../../eval/run.js";
import { readConfiguration } from "../config.js";
import { CliFailure, CliUsageError } from "../errors.js";
import { type CommandContext, createProgress, padCell, println } from "../io.js";
import { parsePreset } from "../session.js";

/** Flags of `lexground eval`. */
export type EvalFlags = {
  kb?: string;
  queries?: string;
  qrels?: string;
  split?: string;
  config?: string[];
  preset?: string[];
  default?: boolean;
  json?: boolean;
  report?: string;
  diff?: boolean;
  depth?: string;
  keepIdenticalIds?: boolean;
};

/** Diff rows printed in the table output; `--json` and `--report` have them all. */
const DIFF_ROWS_SHOWN = 25;

/** Failing queries printed per configuration in the table output; `--json` and `--report` have them all. */
const FAILURES_SHOWN = 10;

/** Included entries listed per failing query in the table output. */
const INCLUDED_SHOWN = 6;

/** A figure with a fixed number of decimals, "–" when missing. */
function decimals(value: number | null, digits: number): string {
  return value === null || !Number.isFinite(value) ? "–" : value.toFixed(digits);
}

/** The lines describing one failing query in the table output. */
export function failureLines(failure: BlockFailure): string[] {
  const text = failure.text.length > 90 ? `${failure.text.slice(0, 89)}…` : failure.text;
  const lines = [`${failure.id} ${JSON.stringify(text)}`];
  for (const expected of failure.expected) lines.push(`  expected ${expected.id}: ${expected.reason}`);
  if (failure.moreExpected > 0) lines.push(`  … and ${failure.moreExpected} more relevant entries`);
  if (failure.missedPassage !== null) {
    const passage =
      failure.missedPassage.length > 80 ? `${failure.missedPassage.slice(0, 79)}…` : failure.missedPassage;
    lines.push(`  judged passage not in the block: ${JSON.stringify(passage)}`);
  }
  const included = failure.included.map((entry) => {
    const where =
      entry.origin === "expanded"
        ? `related to ${entry.via ?? "a selected entry"}`
        : `rank ${entry.rank ?? "?"}${entry.score !== null ? `, score ${entry.score.toFixed(2)}` : ""}`;
    return `${entry.id} (${where}${entry.form === "partial" ? ", partial" : ""}${entry.relevant ? ", relevant" : ""})`;
  });
  const shown = included.slice(0, INCLUDED_SHOWN).join("; ");
  const more = included.length > INCLUDED_SHOWN ? `; … ${included.length - INCLUDED_SHOWN} more` : "";
  lines.push(`  included instead: ${included.length > 0 ? shown + more : "nothing (empty block)"}`);
  return lines;
}

/** Expected (judged relevant) ids the knowledge base cannot return, with the queries that expect them. */
export type ExpectedIdCheck = {
  /** Ids no entry has. */
  unknown: { id: string; queries: string[] }[];
  /** Ids of draft or deprecated entries, which retrieval never returns. */
  notRetrievable: { id: string; status: string; queries: string[] }[];
  /** Queries none of whose relevant ids can be retrieved: they score 0 in every configuration. */
  unanswerable: string[];
};

/** Checks every relevant id of the judged queries against the knowledge base's entries and their status. */
export function checkExpectedIds(
  collection: Pick<EvalCollection, "entries" | "queries" | "qrels">,
): ExpectedIdCheck {
  const status = new Map(collection.entries.map((entry) => [entry.id, entry.status]));
  const unknown = new Map<string, string[]>();
  const notRetrievable = new Map<string, { status: string; queries: string[] }>();
  const unanswerable: string[] = [];
  for (const query of collection.queries) {
    const judgments = collection.qrels.get(query.id);
    if (!judgments) continue;
    let answerable = false;
    let relevant = 0;
    for (const [id, grade] of judgments) {
      if (grade <= 0) continue;
      relevant++;
      const entryStatus = status.get(id);
      if (entryStatus === undefined) {
        const queries = unknown.get(id) ?? [];
        queries.push(query.id);
        unknown.set(id, queries);
      } else if (entryStatus !== "active") {
        const found = notRetrievable.get(id) ?? { status: entryStatus, queries: [] };
        found.queries.push(query.id);
        notRetrievable.set(id, found);
      } else {
        answerable = true;
      }
    }
    if (relevant > 0 && !answerable) unanswerable.push(query.id);
  }
  return {
    unknown: [...unknown].map(([id, queries]) => ({ id, queries })),
    notRetrievable: [...notRetrievable].map(([id, found]) => ({ id, ...found })),
    unanswerable,
  };
}

/** Ids listed per warning line; the JSON output has them all. */
const WARNING_IDS_SHOWN = 5;

function listed<T>(items: T[], show: (item: T) => string): string {
  const shown = items.slice(0, WARNING_IDS_SHOWN).map(show).join(", ");
  return items.length > WARNING_IDS_SHOWN ? `${shown}, … ${items.length - WARNING_IDS_SHOWN} more` : shown;
}

/** The warning lines `eval` prints on stderr for {@link ExpectedIdCheck} (none when every expected id is fine). */
export function expectedIdWarnings(check: ExpectedIdCheck): string[] {
  const lines: string[] = [];
  const queriesOf = (queries: string[]) =>
    queries.length > 3 ? `${queries.slice(0, 3).join(", ")}, …` : queries.join(", ");
  if (check.unknown.length > 0) {
    lines.push(
      `${check.unknown.length} expected id${check.unknown.length === 1 ? " is" : "s are"} not in the knowledge base (a typo, or a removed entry): ${listed(check.unknown, (item) => `${item.id} (${queriesOf(item.queries)})`)}`,
    );
  }
  if (check.notRetrievable.length > 0) {
    lines.push(
      `${check.notRetrievable.length} expected id${check.notRetrievable.length === 1 ? " is" : "s are"} draft or deprecated, never retrieved: ${listed(check.notRetrievable, (item) => `${item.id} (${item.status}; ${queriesOf(item.queries)})`)}`,
    );
  }
  if (check.unanswerable.length > 0) {
    lines.push(
      `${check.unanswerable.length} quer${check.unanswerable.length === 1 ? "y has" : "ies have"} no retrievable expected entry and score 0 in every configuration: ${listed(check.unanswerable, (id) => id)}`,
    );
  }
  return lines;
}

function parseDepth(value: string | undefined): number {
  if (value === undefined) return 100;
  if (!/^\d+$/.test(value) || Number(value) < 10 || Number(value) > 10_000) {
    throw new CliUsageError(
      `--depth must be a whole number from 10 to 10000, got "${value}"`,
      "e.g. --depth 100",
    );
  }
  return Number(value);
}

function uniqueNames(configurations: EvalConfiguration[]): EvalConfiguration[] {
  const seen = new Map<string, number>();
  return configurations.map((configuration) => {
    const count = (seen.get(configuration.name) ?? 0) + 1;
    seen.set(configuration.name, count);
    return count === 1 ? configuration : { ...configuration, name: `${configuration.name} (${count})` };
  });
}

function printTables(
  context: CommandContext,
  collection: EvalCollection,
  kb: string,
  report: EvalReport,
  diff: { first: string; second: string; queries: EvalQueryDiff[] } | undefined,
): void {
  const { out } = context;
  const label = (text: string) => out.bold(text.padEnd(16));
  println(context, `${label("Knowledge base")}${kb} · ${report.entries} entries`);
  println(
    context,
    `${label("Queries")}${collection.queriesFile}${collection.qrelsFile ? ` · judgments ${collection.qrelsFile}` : ""} · ${report.queryCount} judged`,
  );
  if (report.missingQueries.length > 0) {
    println(
      context,
      out.yellow(
        `note: ${report.missingQueries.length} judged queries are missing from the query file (counted as 0)`,
      ),
    );
  }
  println(
    context,
    out.dim(
      `ranked to depth ${report.depth}${report.ignoreIdenticalIds ? ", query id removed from its own results (BEIR)" : ""}; linear-gain nDCG, trec_eval conventions`,
    ),
  );
  println(context);
  const nameWidth = Math.min(32, Math.max(13, ...report.configurations.map((c) => c.name.length)));
  const metricHeader = METRIC_NAMES.map((metric) => METRIC_LABELS[metric].padStart(10)).join(" ");
  println(
    context,
    out.bold(
      `${padCell("configuration", nameWidth)} ${metricHeader} ${"p50 ms".padStart(8)} ${"p99 ms".padStart(8)}`,
    ),
  );
  for (const configuration of report.configurations) {
    const values = METRIC_NAMES.map((metric) => configuration.metrics[metric].toFixed(4).padStart(10)).join(
      " ",
    );
    println(
      context,
      `${padCell(configuration.name, nameWidth)} ${values} ${configuration.latency.p50.toFixed(3).padStart(8)} ${configuration.latency.p99.toFixed(3).padStart(8)}`,
    );
  }
  println(context);
  println(
    context,
    out.bold("Confidence calibration") +
      out.dim(" (queries whose top result is relevant / queries in the class; AUC 0.5 = chance)"),
  );
  println(
    context,
    out.bold(
      `${padCell("configuration", nameWidth)} ${CONFIDENCE_CLASSES.map((name) => name.padStart(16)).join(" ")} ${"AUC".padStart(6)}`,
    ),
  );
  for (const configuration of report.configurations) {
    const cells = CONFIDENCE_CLASSES.map((name) => {
      const cell = configuration.calibration[name];
      const text =
        cell.count === 0
          ? "–"
          : `${cell.relevantTop}/${cell.count} ${`(${Math.round((cell.precision ?? 0) * 100)}%)`.padStart(6)}`;
      return text.padStart(16);
    }).join(" ");
    const auc = configuration.discrimination === null ? "–" : configuration.discrimination.toFixed(3);
    println(context, `${padCell(configuration.name, nameWidth)} ${cells} ${auc.padStart(6)}`);
  }
  println(context);
  println(
    context,
    out.bold("Blocks") +
      out.dim(
        ` (what ground() hands the model per turn: entries, tokens, precision = relevant/included, recall = relevant included/min(relevant, ${BLOCK_RECALL_CAP}), hit = block holds a relevant entry)`,
      ),
  );
  println(
    context,
    out.bold(
      `${padCell("configuration", nameWidth)} ${"budget".padStart(7)} ${"entries".padStart(8)} ${"tokens".padStart(8)} ${"precision".padStart(10)} ${"recall".padStart(8)} ${"hit".padStart(8)} ${"passages".padStart(10)}`,
    ),
  );
  for (const configuration of report.configurations) {
    const { block } = configuration;
    const budget = configuration.budget;
    const passages =
      block.passageShare === null
        ? "–"
        : `${Math.round(block.passageShare * block.passageQueries)}/${block.passageQueries}`;
    println(
      context,
      `${padCell(configuration.name, nameWidth)} ${String(budget).padStart(7)} ${block.entries.toFixed(2).padStart(8)} ${block.tokens.toFixed(0).padStart(8)} ${decimals(block.precision, 4).padStart(10)} ${block.recall.toFixed(4).padStart(8)} ${block.hitShare.toFixed(4).padStart(8)} ${passages.padStart(10)}`,
    );
  }
  for (const configuration of report.configurations) {
    const { failures } = configuration;
    println(context);
    println(
      context,
      `${out.bold(`Failing queries: ${configuration.name}`)}${out.dim(` (${failures.length} of ${configuration.queries.length}: the block holds no relevant entry or misses the judged passage)`)}`,
    );
    for (const failure of failures.slice(0, FAILURES_SHOWN)) {
      const [head, ...rest] = failureLines(failure);
      println(context, `  ${head}`);
      for (const line of rest) println(context, out.dim(`  ${line}`));
    }
    if (failures.length > FAILURES_SHOWN) {
      println(
        context,
        out.dim(`  … ${failures.length - FAILURES_SHOWN} more (all of them with --json or --report)`),
      );
    }
  }
  if (diff) {
    println(context);
    const better = diff.queries.filter((query) => query.delta > 1e-12).length;
    const worse = diff.queries.filter((query) => query.delta < -1e-12).length;
    println(
      context,
      `${out.bold(`Per-query differences ${diff.first} → ${diff.second}`)}: ${diff.queries.length} changed, ${out.green(`${better} better`)}, ${out.red(`${worse} worse`)}`,
    );
    if (diff.queries.length > 0) {
      println(
        context,
        out.dim(
          `  ${"Δ nDCG@10".padStart(9)}  ${"before".padStart(6)}  ${"after".padStart(6)}  ${padCell("confidence", 17)}  query`,
        ),
      );
      for (const query of diff.queries.slice(0, DIFF_ROWS_SHOWN)) {
        const delta = `${query.delta >= 0 ? "+" : ""}${query.delta.toFixed(3)}`.padStart(9);
        const colored =
          query.delta > 1e-12 ? out.green(delta) : query.delta < -1e-12 ? out.red(delta) : delta;
        const text = query.text.length > 70 ? `${query.text.slice(0, 69)}…` : query.text;
        println(
          context,
          `  ${colored}  ${query.before.toFixed(3).padStart(6)}  ${query.after.toFixed(3).padStart(6)}  ${padCell(`${query.confidenceBefore} → ${query.confidenceAfter}`, 17)}  ${query.id} ${JSON.stringify(text)}`,
        );
      }
      if (diff.queries.length > DIFF_ROWS_SHOWN) {
        println(
          context,
          out.dim(`  … ${diff.queries.length - DIFF_ROWS_SHOWN} more (all of them with --json or --report)`),
        );
      }
    }
  }
}

export async function runEval(context: CommandContext, flags: EvalFlags): Promise<number> {
  const kb = flags.kb ?? context.io.env.LEXGROUND_KB;
  if (!kb) {
    throw new CliUsageError(
      "no knowledge base given",
      "pass --kb <manifest.json|folder|BEIR folder>, e.g. --kb examples/knowledge-base",
    );
  }
  const depth = parseDepth(flags.depth);
  const configurations: EvalConfiguration[] = [];
  if (flags.default !== false) configurations.push({ name: "default", settings: {} });
  for (const value of flags.preset ?? []) {
    const preset = parsePreset(value)!;
    configurations.push({ name: preset, settings: { preset } });
  }
  for (const [index, value] of (flags.config ?? []).entries()) {
    const { name, settings } = await readConfiguration(context, value, { index, inline: true });
    // The settings eval compares; timeoutMs does not apply to an offline evaluation.
    configurations.push({
      name,
      settings: {
        ...(settings.preset !== undefined ? { preset: settings.preset } : {}),
        ...(settings.retrieval ? { retrieval: settings.retrieval } : {}),
        ...(settings.context ? { context: settings.context } : {}),
        ...(settings.blockedDomains ? { blockedDomains: settings.blockedDomains } : {}),
      },
    });
  }
  if (configurations.length === 0) {
    throw new CliUsageError(
      "nothing to evaluate",
      "give at least one --config or --preset, or drop --no-default",
    );
  }
  if (flags.diff && configurations.length < 2) {
    throw new CliUsageError(
      "--diff needs two configurations",
      "add a --config or --preset to compare with the default",
    );
  }
  const named = uniqueNames(configurations);
  // A judgments file named on the command line that is not there is a usage error, like a missing --config.
  for (const [flag, path] of [
    ["--queries", flags.queries],
    ["--qrels", flags.qrels],
  ] as const) {
    if (path === undefined) continue;
    const info = await stat(resolve(context.io.cwd, path)).catch(() => undefined);
    if (!info?.isFile()) {
      throw new CliUsageError(
        `${path}: ${flag} file not found`,
        flag === "--queries"
          ? 'pass a questions.json ([{"question": "...", "expected": ["entry.id"]}]) or a BEIR queries.jsonl'
          : "pass a BEIR qrels TSV or a TREC qrels file",
        { code: "not-found", file: path },
      );
    }
  }

  let collection: EvalCollection;
  const progress = createProgress(context);
  try {
    progress.update(`loading ${kb}`);
    collection = await loadEvalCollection(kb, {
      cwd: context.io.cwd,
      ...(flags.queries !== undefined ? { queries: flags.queries } : {}),
      ...(flags.qrels !== undefined ? { qrels: flags.qrels } : {}),
      ...(flags.split !== undefined ? { split: flags.split } : {}),
      compile: { env: context.io.env, requireManifestJson: true },
    });
  } catch (error) {
    progress.done();
    if (EvalDataError.isInstance(error)) {
      throw new CliFailure(error.message, error.hint, {
        details: {
          code: "bad-queries",
          file: error.file,
          ...(error.line !== undefined ? { line: error.line } : {}),
        },
      });
    }
    if (EvalKnowledgeBaseError.isInstance(error)) {
      throw new CliFailure(
        error.message,
        "run 'lexground validate' on the knowledge base to see every issue",
        { details: { code: "invalid-knowledge-base" } },
      );
    }
    throw error;
  }
  const expectedIds = checkExpectedIds(collection);
  for (const line of expectedIdWarnings(expectedIds)) {
    context.io.stderr.write(`${context.err.yellow("warning")}: ${line}\n`);
  }

  let report: EvalReport;
  try {
    report = evaluateConfigurations(collection.entries, collection.queries, collection.qrels, named, {
      depth,
      ignoreIdenticalIds: collection.beir && flags.keepIdenticalIds !== true,
      onProgress: ({ configuration, done, total }) =>
        progress.update(`${configuration}: ${done}/${total} queries`),
    });
  } catch (error) {
    if (EvalConfigurationError.isInstance(error)) throw new CliUsageError(error.message);
    throw error;
  } finally {
    progress.done();
  }
  if (report.queryCount === 0) {
    throw new CliFailure("no query has judgments", "check that --queries and --qrels use the same query ids");
  }
  const diff =
    flags.diff && report.configurations.length >= 2
      ? {
          first: report.configurations[0]!.name,
          second: report.configurations[1]!.name,
          queries: diffConfigurations(
            report.configurations[0]!,
            report.configurations[1]!,
            collection.queries,
          ),
        }
      : undefined;

  if (flags.report) {
    const html = renderHtmlReport(report, {
      knowledgeBase: kb,
      queriesFile: collection.queriesFile,
      qrelsFile: collection.qrelsFile,
      generatedAt: new Date().toISOString(),
      ...(diff ? { diff } : {}),
    });
    await writeFile(resolve(context.io.cwd, flags.report), html);
  }
  if (flags.json) {
    println(
      context,
      JSON.stringify(
        {
          knowledgeBase: kb,
          queries: collection.queriesFile,
          qrels: collection.qrelsFile,
          expectedIds,
          ...report,
          ...(diff ? { diff } : {}),
        },
        null,
        2,
      ),
    );
    return 0;
  }
  printTables(context, collection, kb, report, diff);
  if (flags.report) {
    println(context);
    println(context, `${context.out.bold("Report".padEnd(16))}${flags.report}`);
  }
  return 0;
}
