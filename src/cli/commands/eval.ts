/**
 * `lexground eval`: runs every judged query through retrieval for one or more configurations side by side and
 * reports nDCG@10, Recall@10, Recall@100, MRR@10, latency, confidence calibration and the block figures (entries,
 * tokens, precision, recall, hit share and passages of the block `ground()` would hand the model) with the failing
 * queries, as a table, JSON or an HTML report; `--diff` lists the per-query differences between the first two
 * configurations.
 */
import { stat, writeFile } from "node:fs/promises";
import { resolve } from "node:path";
import { type EvalCollection, EvalKnowledgeBaseError, loadEvalCollection } from "../../eval/collection.js";
import { EvalDataError } from "../../eval/data.js";
import { renderHtmlReport } from "../../eval/report.js";
import {
  diffConfigurations,
  type EvalConfiguration,
  EvalConfigurationError,
  type EvalReport,
  evaluateConfigurations,
} from "../../eval/run.js";
import { readConfiguration } from "../config.js";
import { CliFailure, CliUsageError } from "../errors.js";
import { type CommandContext, createProgress, println } from "../io.js";
import { parsePreset } from "../session.js";
import { checkExpectedIds, expectedIdWarnings } from "./evalChecks.js";
import { printTables } from "./evalTables.js";

export { checkExpectedIds, type ExpectedIdCheck, expectedIdWarnings } from "./evalChecks.js";
export { failureLines } from "./evalTables.js";

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
