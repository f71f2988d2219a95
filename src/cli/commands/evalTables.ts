import { BLOCK_RECALL_CAP, type BlockFailure } from "../../eval/block.js";
import type { EvalCollection } from "../../eval/collection.js";
import { METRIC_LABELS, METRIC_NAMES } from "../../eval/metrics.js";
import { CONFIDENCE_CLASSES, type EvalQueryDiff, type EvalReport } from "../../eval/run.js";
import { type CommandContext, padCell, println } from "../io.js";

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

export function printTables(
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
