/**
 * The report's inline SVG: colors per configuration, the legend, grouped bar charts on a 0..1 axis and the
 * latency distribution, with the text helpers they share with the page (escaping, number formats).
 */
import type { EvalReport } from "./reportTypes.js";

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

/** Escapes text for HTML element content and attribute values. */
export function escapeHtml(text: string): string {
  return text
    .replace(/&/g, "&amp;")
    .replace(/</g, "&lt;")
    .replace(/>/g, "&gt;")
    .replace(/"/g, "&quot;")
    .replace(/'/g, "&#39;");
}

/** The color of the configuration at `index` in the report. */
export function color(index: number): string {
  return PALETTE[index % PALETTE.length]!;
}

/** A figure with `digits` decimals, "–" when not finite. */
export function fixed(value: number, digits = 4): string {
  return Number.isFinite(value) ? value.toFixed(digits) : "–";
}

/** A duration in milliseconds with decimals by magnitude, "–" when not finite. */
export function milliseconds(value: number): string {
  if (!Number.isFinite(value)) return "–";
  return value < 1 ? value.toFixed(3) : value < 100 ? value.toFixed(2) : value.toFixed(0);
}

/** The legend of the configurations' colors. */
export function legend(names: readonly string[]): string {
  return `<div class="legend">${names
    .map(
      (name, index) =>
        `<span><svg width="12" height="12" aria-hidden="true"><rect width="12" height="12" fill="${color(index)}"/></svg> ${escapeHtml(name)}</span>`,
    )
    .join("")}</div>`;
}

/** One group of bars: its label, and one value (with an optional note) per configuration. */
export type Group = { label: string; values: { value: number | null; note?: string }[] };

/** A grouped vertical bar chart on a 0..1 axis. */
export function groupedBars(title: string, groups: readonly Group[], seriesCount: number): string {
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
export function latencyChart(report: EvalReport): string {
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
