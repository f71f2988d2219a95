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
import { CONFIDENCE_CLASSES, type EvalQueryDiff, type EvalReport } from "./run.js";

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

/** Distinguishable colors (Okabe-Ito, then Tableau), cycled per configuration beyond twelve. */
const PALETTE = [
  "#0072B2",
  "#E69F00",
  "#009E73",
  "#CC79A7",
  "#56B4E9",
  "#D55E00",
  "#F0E442",
  "#000000",
  "#8C564B",
  "#7F7F7F",
  "#17BECF",
  "#BCBD22",
];

const CLASS_LABELS: Record<KnowledgeRetrievalConfidence, string> = {
  high: "high",
  medium: "medium",
  low: "low",
  none: "none",
};

/** Escapes text for HTML element content and attribute values. */
export function escapeHtml(text: string): string {
  return text
    .replace(/&/g, "&amp;")
    .replace(/</g, "&lt;")
    .replace(/>/g, "&gt;")
    .replace(/"/g, "&quot;")
    .replace(/'/g, "&#39;");
}

function color(index: number): string {
  return PALETTE[index % PALETTE.length]!;
}

function fixed(value: number, digits = 4): string {
  return Number.isFinite(value) ? value.toFixed(digits) : "–";
}

function milliseconds(value: number): string {
  if (!Number.isFinite(value)) return "–";
  return value < 1 ? value.toFixed(3) : value < 100 ? value.toFixed(2) : value.toFixed(0);
}

function legend(names: readonly string[]): string {
  return `<div class="legend">${names
    .map(
      (name, index) =>
        `<span><svg width="12" height="12" aria-hidden="true"><rect width="12" height="12" fill="${color(index)}"/></svg> ${escapeHtml(name)}</span>`,
    )
    .join("")}</div>`;
}

type Group = { label: string; values: { value: number | null; note?: string }[] };

/** A grouped vertical bar chart on a 0..1 axis. */
function groupedBars(title: string, groups: readonly Group[], seriesCount: number): string {
  const width = 880;
  const left = 48;
  const right = 12;
  const plotWidth = width - left - right;
  const groupWidth = plotWidth / Math.max(1, groups.length);
  const barWidth = Math.min(56, (groupWidth * 0.8) / Math.max(1, seriesCount));
  // Narrow bars get vertical labels, so many configurations never print over each other.
  const narrow = barWidth < 34;
  const hasNotes = groups.some((group) => group.values.some((entry) => entry.note));
  const top = narrow ? 68 : 44;
  const noteSpace = hasNotes ? (narrow ? 44 : 16) : 0;
  const bottom = 32 + noteSpace;
  const plotHeight = 224;
  const height = top + plotHeight + bottom;
  const base = top + plotHeight;
  const parts: string[] = [];
  parts.push(`<text x="${left}" y="18" class="chart-title">${escapeHtml(title)}</text>`);
  for (let tick = 0; tick <= 5; tick++) {
    const value = tick / 5;
    const y = base - value * plotHeight;
    parts.push(`<line x1="${left}" x2="${width - right}" y1="${y}" y2="${y}" class="grid"/>`);
    parts.push(
      `<text x="${left - 6}" y="${y + 4}" class="axis" text-anchor="end">${value.toFixed(1)}</text>`,
    );
  }
  const label = (x: number, y: number, text: string, className: string, anchor: "start" | "end") =>
    narrow
      ? `<text x="${x + 3.5}" y="${y}" class="${className}" text-anchor="${anchor}" transform="rotate(-90 ${x + 3.5} ${y})">${escapeHtml(text)}</text>`
      : `<text x="${x}" y="${y}" class="${className}" text-anchor="middle">${escapeHtml(text)}</text>`;
  groups.forEach((group, groupIndex) => {
    const groupLeft = left + groupIndex * groupWidth + (groupWidth - barWidth * seriesCount) / 2;
    group.values.forEach(({ value, note }, seriesIndex) => {
      const center = groupLeft + seriesIndex * barWidth + barWidth / 2;
      if (note) parts.push(label(center, base + (narrow ? 6 : 30), note, "note", "end"));
      if (value === null) {
        parts.push(label(center, base - 4, "n/a", "value", "start"));
        return;
      }
      const barHeight = Math.max(0, Math.min(1, value)) * plotHeight;
      const y = base - barHeight;
      parts.push(
        `<rect x="${center - barWidth / 2 + 1}" y="${y}" width="${barWidth - 2}" height="${barHeight}" fill="${color(seriesIndex)}"><title>${escapeHtml(`${group.label}: ${value.toFixed(4)}${note ? ` (${note})` : ""}`)}</title></rect>`,
      );
      parts.push(label(center, y - 4, value.toFixed(3), "value", "start"));
    });
    parts.push(
      `<text x="${left + groupIndex * groupWidth + groupWidth / 2}" y="${base + noteSpace + (narrow && hasNotes ? 4 : 0) + 16}" class="axis-label" text-anchor="middle">${escapeHtml(group.label)}</text>`,
    );
  });
  parts.push(`<line x1="${left}" x2="${width - right}" y1="${base}" y2="${base}" class="axis-line"/>`);
  return `<svg viewBox="0 0 ${width} ${height}" width="${width}" height="${height}" role="img" aria-label="${escapeHtml(title)}">${parts.join("")}</svg>`;
}

/** Latency distribution: the empirical CDF of each configuration on a logarithmic time axis. */
function latencyChart(report: EvalReport): string {
  const width = 880;
  const height = 300;
  const left = 48;
  const right = 36;
  const top = 36;
  const bottom = 40;
  const plotWidth = width - left - right;
  const plotHeight = height - top - bottom;
  const samples = report.configurations.map((configuration) =>
    configuration.queries.map((query) => query.retrieveMs).sort((a, b) => a - b),
  );
  const all = samples.flat().filter((value) => value > 0);
  const title = "Latency distribution of retrieve() (share of queries answered within t, log scale)";
  if (all.length === 0) {
    return `<svg viewBox="0 0 ${width} 60" width="${width}" height="60" role="img" aria-label="latency"><text x="${left}" y="30" class="chart-title">No latency samples</text></svg>`;
  }
  const minimum = Math.min(...all);
  const maximum = Math.max(...all);
  let low = 10 ** Math.floor(Math.log10(minimum));
  let high = 10 ** Math.ceil(Math.log10(maximum));
  if (high <= low) high = low * 10;
  if (!(low > 0)) low = 0.001;
  const xOf = (value: number) =>
    left +
    ((Math.log10(Math.max(value, low)) - Math.log10(low)) / (Math.log10(high) - Math.log10(low))) * plotWidth;
  const yOf = (share: number) => top + plotHeight - share * plotHeight;
  const parts: string[] = [`<text x="${left}" y="18" class="chart-title">${escapeHtml(title)}</text>`];
  for (let decade = low; decade <= high * 1.0001; decade *= 10) {
    const x = xOf(decade);
    parts.push(`<line x1="${x}" x2="${x}" y1="${top}" y2="${top + plotHeight}" class="grid"/>`);
    parts.push(
      `<text x="${x}" y="${top + plotHeight + 16}" class="axis" text-anchor="middle">${milliseconds(decade)} ms</text>`,
    );
  }
  for (let tick = 0; tick <= 4; tick++) {
    const share = tick / 4;
    const y = yOf(share);
    parts.push(`<line x1="${left}" x2="${width - right}" y1="${y}" y2="${y}" class="grid"/>`);
    parts.push(
      `<text x="${left - 6}" y="${y + 4}" class="axis" text-anchor="end">${Math.round(share * 100)}%</text>`,
    );
  }
  samples.forEach((sorted, index) => {
    if (sorted.length === 0) return;
    const points: string[] = [`${xOf(sorted[0]!).toFixed(1)},${yOf(0).toFixed(1)}`];
    sorted.forEach((value, rank) => {
      const x = xOf(value).toFixed(1);
      points.push(
        `${x},${yOf(rank / sorted.length).toFixed(1)}`,
        `${x},${yOf((rank + 1) / sorted.length).toFixed(1)}`,
      );
    });
    parts.push(
      `<polyline points="${points.join(" ")}" fill="none" stroke="${color(index)}" stroke-width="2"/>`,
    );
    const configuration = report.configurations[index]!;
    for (const [label, value] of [
      ["p50", configuration.latency.p50],
      ["p99", configuration.latency.p99],
    ] as const) {
      const share = label === "p50" ? 0.5 : 0.99;
      parts.push(
        `<circle cx="${xOf(value).toFixed(1)}" cy="${yOf(share).toFixed(1)}" r="3.5" fill="${color(index)}"><title>${escapeHtml(`${configuration.name} ${label}: ${milliseconds(value)} ms`)}</title></circle>`,
      );
    }
  });
  parts.push(
    `<line x1="${left}" x2="${width - right}" y1="${top + plotHeight}" y2="${top + plotHeight}" class="axis-line"/>`,
  );
  return `<svg viewBox="0 0 ${width} ${height}" width="${width}" height="${height}" role="img" aria-label="${escapeHtml(title)}">${parts.join("")}</svg>`;
}

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
