/**
 * The evaluation report as one self-contained HTML file: inline CSS and inline SVG plots (metrics per
 * configuration, block figures, confidence calibration per class, latency distribution), tables with the exact
 * figures, the failing queries of each configuration (what the block held instead of the relevant entries, and
 * why), and the per-query differences when asked. No scripts, fonts, images or any other external asset.
 *
 * @module
 */
import type { KnowledgeRetrievalConfidence } from "../types/knowledge.js";
import { BLOCK_RECALL_CAP, type BlockFailure } from "./block.js";
import { METRIC_LABELS, METRIC_NAMES } from "./metrics.js";
import {
  color,
  escapeHtml,
  fixed,
  type Group,
  groupedBars,
  latencyChart,
  legend,
  milliseconds,
} from "./reportCharts.js";
import { CONFIDENCE_CLASSES, type EvalQueryDiff, type EvalReport } from "./run.js";

export { escapeHtml } from "./reportCharts.js";

/** What the report says about where the figures came from. */
export type EvalReportContext = {
  /** The knowledge base as given (path). */
  knowledgeBase: string;
  queriesFile: string;
  qrelsFile: string | null;
  /** The command line that produced the report, shown verbatim. */
  command?: string;
  /** ISO timestamp shown in the footer. */
  generatedAt?: string;
  /** Per-query differences between the first two configurations. */
  diff?: { first: string; second: string; queries: EvalQueryDiff[] };
};

const CLASS_LABELS: Record<KnowledgeRetrievalConfidence, string> = {
  high: "high",
  medium: "medium",
  low: "low",
  none: "none",
};

/** A table; columns listed in `numeric` (default: all but the first) are right-aligned. */
function table(
  header: readonly string[],
  rows: readonly (readonly string[])[],
  numeric: readonly number[] = header.map((_, index) => index).slice(1),
): string {
  const align = (index: number) => (numeric.includes(index) ? ' class="num"' : "");
  const head = header.map((cell, index) => `<th${align(index)}>${cell}</th>`).join("");
  const body = rows
    .map((row) => `<tr>${row.map((cell, index) => `<td${align(index)}>${cell}</td>`).join("")}</tr>`)
    .join("");
  return `<table><thead><tr>${head}</tr></thead><tbody>${body}</tbody></table>`;
}

function swatch(index: number): string {
  return `<svg width="10" height="10" aria-hidden="true"><rect width="10" height="10" fill="${color(index)}"/></svg> `;
}

function failureRow(failure: BlockFailure): string[] {
  const expected = failure.expected
    .map((entry) => `<li><code>${escapeHtml(entry.id)}</code>: ${escapeHtml(entry.reason)}</li>`)
    .join("");
  const more = failure.moreExpected > 0 ? `<li>… and ${failure.moreExpected} more relevant entries</li>` : "";
  const passage =
    failure.missedPassage !== null
      ? `<p class="small">Judged passage not in the block: “${escapeHtml(failure.missedPassage)}”</p>`
      : "";
  const included =
    failure.included.length === 0
      ? "nothing (empty block)"
      : `<ol>${failure.included
          .map((entry) => {
            const where =
              entry.origin === "expanded"
                ? `related to <code>${escapeHtml(entry.via ?? "a selected entry")}</code>`
                : `rank ${entry.rank ?? "?"}${entry.score !== null ? `, score ${entry.score.toFixed(2)}` : ""}`;
            const notes = `${entry.form === "partial" ? ", partial" : ""}${entry.relevant ? ", <b>relevant</b>" : ""}`;
            return `<li><code>${escapeHtml(entry.id)}</code> (${where}${notes})</li>`;
          })
          .join("")}</ol>`;
  return [
    escapeHtml(failure.id),
    `${escapeHtml(failure.text)}${passage}`,
    `<ul>${expected}${more}</ul>`,
    included,
  ];
}

const STYLE = `
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: #1d1d1f; margin: 24px auto; max-width: 920px; padding: 0 16px; }
h1 { font-size: 22px; margin: 0 0 4px; } h2 { font-size: 17px; margin: 28px 0 8px; border-bottom: 1px solid #ddd; padding-bottom: 4px; }
.meta { color: #555; margin: 0 0 2px; } code { background: #f4f4f6; padding: 1px 4px; border-radius: 3px; font-size: 12.5px; }
table { border-collapse: collapse; margin: 8px 0 12px; font-variant-numeric: tabular-nums; }
th, td { padding: 4px 10px; border-bottom: 1px solid #e6e6e6; text-align: left; vertical-align: top; }
th { background: #f7f7f9; font-weight: 600; } td.num, th.num { text-align: right; }
.legend { display: flex; flex-wrap: wrap; gap: 14px; margin: 4px 0 2px; } .legend span { display: inline-flex; align-items: center; gap: 5px; }
svg text { font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; }
.chart-title { font-size: 13px; font-weight: 600; fill: #333; } .axis { font-size: 11px; fill: #666; } .axis-label { font-size: 12px; fill: #333; }
.value { font-size: 10.5px; fill: #333; } .note { font-size: 10px; fill: #777; }
.grid { stroke: #ececec; stroke-width: 1; } .axis-line { stroke: #999; stroke-width: 1; }
td ul, td ol { margin: 0; padding-left: 18px; } details { margin: 6px 0; } summary { cursor: pointer; font-weight: 600; }
.better { color: #007a3d; } .worse { color: #b00020; } .small { color: #666; font-size: 12.5px; }
`;

/** Renders the report as a complete HTML document. */
export function renderHtmlReport(report: EvalReport, context: EvalReportContext): string {
  const names = report.configurations.map((configuration) => configuration.name);
  const metricGroups: Group[] = METRIC_NAMES.map((metric) => ({
    label: METRIC_LABELS[metric],
    values: report.configurations.map((configuration) => ({ value: configuration.metrics[metric] })),
  }));
  const calibrationGroups: Group[] = CONFIDENCE_CLASSES.map((name) => ({
    label: CLASS_LABELS[name],
    values: report.configurations.map((configuration) => {
      const cell = configuration.calibration[name];
      return { value: cell.precision, note: `n=${cell.count}` };
    }),
  }));
  const metricRows = report.configurations.map((configuration, index) => [
    `${swatch(index)}${escapeHtml(configuration.name)}`,
    ...METRIC_NAMES.map((metric) => fixed(configuration.metrics[metric])),
  ]);
  const calibrationRows = report.configurations.map((configuration, index) => [
    `${swatch(index)}${escapeHtml(configuration.name)}`,
    ...CONFIDENCE_CLASSES.map((name) => {
      const cell = configuration.calibration[name];
      return cell.count === 0
        ? "–"
        : `${cell.relevantTop}/${cell.count} (${Math.round((cell.precision ?? 0) * 100)}%)`;
    }),
    configuration.discrimination === null ? "–" : configuration.discrimination.toFixed(3),
  ]);
  const latencyRows = report.configurations.map((configuration, index) => [
    `${swatch(index)}${escapeHtml(configuration.name)}`,
    milliseconds(configuration.latency.p50),
    milliseconds(configuration.latency.p90),
    milliseconds(configuration.latency.p99),
    milliseconds(configuration.latency.max),
    milliseconds(configuration.turnLatency.p50),
    milliseconds(configuration.turnLatency.p99),
    configuration.indexMs > 0 ? milliseconds(configuration.indexMs) : "shared",
  ]);
  const settingsRows = report.configurations.map((configuration, index) => [
    `${swatch(index)}${escapeHtml(configuration.name)}`,
    `<code>${escapeHtml(JSON.stringify(configuration.settings))}</code>`,
  ]);

  const sections: string[] = [];
  sections.push(`<h1>Retrieval evaluation</h1>`);
  sections.push(
    `<p class="meta">Knowledge base <code>${escapeHtml(context.knowledgeBase)}</code> · ${report.entries} entries</p>`,
  );
  sections.push(
    `<p class="meta">Queries <code>${escapeHtml(context.queriesFile)}</code>${context.qrelsFile ? ` · judgments <code>${escapeHtml(context.qrelsFile)}</code>` : ""} · ${report.queryCount} judged queries${report.missingQueries.length > 0 ? ` (${report.missingQueries.length} missing from the query file, counted as 0)` : ""}</p>`,
  );
  sections.push(
    `<p class="meta">Whole ranking to depth ${report.depth}${report.ignoreIdenticalIds ? ", query id removed from its own results (BEIR convention)" : ""}; nDCG with linear gains, trec_eval conventions.</p>`,
  );
  if (context.command)
    sections.push(`<p class="meta">Command <code>${escapeHtml(context.command)}</code></p>`);

  sections.push(`<h2>Ranking quality per configuration</h2>`);
  sections.push(legend(names));
  sections.push(groupedBars("Mean metric per configuration", metricGroups, names.length));
  sections.push(table(["configuration", ...METRIC_NAMES.map((metric) => METRIC_LABELS[metric])], metricRows));

  sections.push(`<h2>What each turn hands the model</h2>`);
  sections.push(
    `<p class="small">The block <code>ground()</code> renders for each query with the configuration's limits and context budget. Precision: included entries judged relevant ÷ included (over non-empty blocks). Recall: relevant entries included ÷ min(relevant judged, ${BLOCK_RECALL_CAP}). Hit share: queries whose block holds a relevant entry. Passages: queries whose judged passage text reaches the block ÷ queries with one.</p>`,
  );
  sections.push(legend(names));
  sections.push(
    groupedBars(
      "Block precision, recall and hit share per configuration",
      [
        {
          label: "precision",
          values: report.configurations.map((configuration) => ({
            value: configuration.block.precision,
          })),
        },
        {
          label: `recall (cap ${BLOCK_RECALL_CAP})`,
          values: report.configurations.map((configuration) => ({ value: configuration.block.recall })),
        },
        {
          label: "hit share",
          values: report.configurations.map((configuration) => ({ value: configuration.block.hitShare })),
        },
      ],
      names.length,
    ),
  );
  sections.push(
    table(
      [
        "configuration",
        "budget",
        "entries",
        "tokens",
        "precision",
        "recall",
        "hit share",
        "empty blocks",
        "passages",
      ],
      report.configurations.map((configuration, index) => {
        const { block } = configuration;
        return [
          `${swatch(index)}${escapeHtml(configuration.name)}`,
          String(configuration.budget),
          fixed(block.entries, 2),
          fixed(block.tokens, 0),
          block.precision === null ? "–" : fixed(block.precision),
          fixed(block.recall),
          fixed(block.hitShare),
          String(block.emptyBlocks),
          block.passageShare === null
            ? "–"
            : `${Math.round(block.passageShare * block.passageQueries)}/${block.passageQueries}`,
        ];
      }),
    ),
  );
  sections.push(`<h2>Failing queries</h2>`);
  sections.push(
    `<p class="small">Queries whose block holds no relevant entry or misses the judged passage: the relevant entries (best ranked first) and why each is missing, and what the block held instead.</p>`,
  );
  for (const configuration of report.configurations) {
    const { failures } = configuration;
    const rows = failures.map(failureRow);
    sections.push(
      `<details${failures.length > 0 && failures.length <= 25 ? " open" : ""}><summary>${escapeHtml(configuration.name)}: ${failures.length} of ${configuration.queries.length} queries</summary>${
        rows.length > 0
          ? table(
              ["query", "text", "relevant entries and why they are missing", "included instead"],
              rows,
              [],
            )
          : '<p class="small">None.</p>'
      }</details>`,
    );
  }

  sections.push(`<h2>Confidence calibration</h2>`);
  sections.push(
    `<p class="small">For each confidence class: how many queries got it (n) and the share whose top result is judged relevant. A useful class order has high &gt; medium &gt; low. AUC: the chance that a query with a relevant top result got a higher class than one without (0.5 = no better than chance).</p>`,
  );
  sections.push(legend(names));
  sections.push(
    groupedBars(
      "Share of queries whose top result is relevant, per confidence class",
      calibrationGroups,
      names.length,
    ),
  );
  sections.push(
    table(["configuration", ...CONFIDENCE_CLASSES.map((name) => CLASS_LABELS[name]), "AUC"], calibrationRows),
  );

  sections.push(`<h2>Latency</h2>`);
  sections.push(
    `<p class="small">Per query, with the configuration's own limits, after a warm-up. “turn” adds context assembly to retrieve().</p>`,
  );
  sections.push(legend(names));
  sections.push(latencyChart(report));
  sections.push(
    table(
      [
        "configuration",
        "p50 ms",
        "p90 ms",
        "p99 ms",
        "max ms",
        "turn p50 ms",
        "turn p99 ms",
        "index build ms",
      ],
      latencyRows,
    ),
  );

  if (context.diff) {
    const { first, second, queries } = context.diff;
    const better = queries.filter((query) => query.delta > 1e-12).length;
    const worse = queries.filter((query) => query.delta < -1e-12).length;
    sections.push(`<h2>Per-query differences: ${escapeHtml(first)} → ${escapeHtml(second)}</h2>`);
    sections.push(
      `<p class="small">${queries.length} queries changed (nDCG@10, confidence or top result): ${better} better, ${worse} worse.</p>`,
    );
    const rows = queries.map((query) => [
      escapeHtml(query.id),
      `<span class="${query.delta > 0 ? "better" : query.delta < 0 ? "worse" : ""}">${query.delta >= 0 ? "+" : ""}${query.delta.toFixed(3)}</span>`,
      query.before.toFixed(3),
      query.after.toFixed(3),
      `${query.confidenceBefore}&nbsp;→&nbsp;${query.confidenceAfter}`,
      escapeHtml(query.text.length > 120 ? `${query.text.slice(0, 119)}…` : query.text),
    ]);
    sections.push(
      table(["query", "Δ&nbsp;nDCG@10", "before", "after", "confidence", "text"], rows, [1, 2, 3]),
    );
  }

  sections.push(`<h2>Configurations</h2>`);
  sections.push(table(["configuration", "settings (over the defaults)"], settingsRows, []));
  sections.push(
    `<p class="small">Generated by lexground eval${context.generatedAt ? ` at ${escapeHtml(context.generatedAt)}` : ""}.</p>`,
  );
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>lexground retrieval evaluation</title>
<style>${STYLE}</style>
</head>
<body>
${sections.join("\n")}
</body>
</html>
`;
}
