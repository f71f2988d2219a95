/** `lexground query`: what one turn would select, and why. */
import { performance } from "node:perf_hooks";
import type { KnowledgeFieldName } from "../../types/knowledge.js";
import { type CommandContext, formatMs, padCell, println } from "../io.js";
import type { RetrievalFlags } from "../main.js";
import { countExclusions, type KnowledgeExclusions, populationOf } from "../population.js";
import { readQuestion, showQuestion } from "../question.js";
import { type PreparedKnowledgeBase, parseCount, prepareFromFlags } from "../session.js";
import { type ExplainedCandidate, runTurn, type TurnReport } from "../turn.js";

export type QueryFlags = RetrievalFlags & {
  /** A PostgreSQL URL: the turn runs on the shared index (see `backend.ts`). */
  backend?: string;
  backendSchema?: string;
  explain?: boolean;
  context?: boolean;
  limit?: string;
  file?: string;
};

const FIELD_ORDER: KnowledgeFieldName[] = ["title", "aliases", "keywords", "summary", "body"];

function score(value: number): string {
  return value.toFixed(2);
}

function matchLabel(candidate: ExplainedCandidate): string {
  const parts = [
    candidate.exact ? "exact" : "",
    candidate.alias ? "alias" : "",
    candidate.lexical > 0 ? "lexical" : "",
  ];
  return parts.filter(Boolean).join("+") || "-";
}

/**
 * Why an adaptive cut-off removed a candidate: `cut by scoreGapRatio: list ended at <id> (score 3.10 < 4.80)`, or
 * for the candidate that ended the list itself, `cut by minRelativeScore: score 3.10 < 5.00`.
 */
export function explainCut(candidate: ExplainedCandidate): string | null {
  const { cut } = candidate;
  if (!cut) return null;
  if (cut.endedAt === candidate.id) {
    return `cut by ${cut.rule}: score ${score(candidate.score)} < ${score(cut.threshold)}`;
  }
  return `cut by ${cut.rule}: the list ended at ${cut.endedAt} (its score < ${score(cut.threshold)})`;
}

/** `exact +100 · alias +60 · lexical 11.23 = title 4.10 + aliases 5.20 + body 1.93` */
export function explainScore(candidate: ExplainedCandidate, prepared: PreparedKnowledgeBase): string {
  const parts: string[] = [];
  if (candidate.exact) parts.push(`exact +${prepared.resolved.exactBoost}`);
  if (candidate.alias) parts.push(`alias +${prepared.resolved.aliasBoost}`);
  const fields = FIELD_ORDER.filter((field) => candidate.fieldScores[field] !== undefined).map(
    (field) => `${field} ${score(candidate.fieldScores[field]!)}`,
  );
  parts.push(`lexical ${score(candidate.lexical)}${fields.length ? ` = ${fields.join(" + ")}` : ""}`);
  return parts.join(" · ");
}

/**
 * `1 draft · 1 deprecated · 3 out of scope (2 bound to integrations not enabled, 1 in a blocked domain)`, or null
 * when nothing is excluded.
 */
export function describeExclusions(excluded: KnowledgeExclusions): string | null {
  const parts: string[] = [];
  if (excluded.draft > 0) parts.push(`${excluded.draft} draft`);
  if (excluded.deprecated > 0) parts.push(`${excluded.deprecated} deprecated`);
  const outOfScope = excluded.integrations + excluded.blockedDomain;
  if (outOfScope > 0) {
    const reasons = [
      excluded.integrations > 0 ? `${excluded.integrations} bound to integrations not enabled` : "",
      excluded.blockedDomain > 0 ? `${excluded.blockedDomain} in a blocked domain` : "",
    ].filter(Boolean);
    parts.push(`${outOfScope} out of scope (${reasons.join(", ")})`);
  }
  return parts.length > 0 ? parts.join(" · ") : null;
}

function printHuman(
  context: CommandContext,
  report: TurnReport,
  prepared: PreparedKnowledgeBase,
  excluded: KnowledgeExclusions,
  explain: boolean,
  loadMs: number,
): void {
  const { out } = context;
  const label = (text: string) => out.bold(text.padEnd(11));
  println(context, `${label("Query")}${showQuestion(report.query)}`);
  if (prepared.preset !== "neurolink") println(context, `${label("Preset")}${prepared.preset}`);
  println(
    context,
    `${label("Scope")}integrations: ${report.enabledIntegrations.join(", ") || "none"} · blocked domains: ${report.blockedDomains.join(", ") || "none"}`,
  );
  const confidenceColor =
    report.confidence === "high"
      ? out.green
      : report.confidence === "medium"
        ? out.cyan
        : report.confidence === "low"
          ? out.yellow
          : out.red;
  println(
    context,
    `${label("Confidence")}${confidenceColor(report.confidence)} · ${report.candidateCount} candidate${report.candidateCount === 1 ? "" : "s"}${report.candidateCount > report.candidates.length ? ` (top ${report.candidates.length} kept)` : ""} · ${report.primary.length} selected · ${report.expanded.length} expanded`,
  );
  const exclusions = describeExclusions(excluded);
  if (exclusions) println(context, `${label("Excluded")}${exclusions}`);
  if (excluded.integrations > 0 && report.enabledIntegrations.length === 0) {
    println(
      context,
      out.dim(
        `note: no integration is enabled; pass --integrations ${prepared.integrations.slice(0, 3).join(",")} or --all-integrations`,
      ),
    );
  }
  println(context);
  const shown = explain ? report.candidates : report.candidates.filter((candidate) => candidate.selected);
  if (shown.length === 0) {
    println(context, "No entry matched.");
  } else {
    const idWidth = Math.min(40, Math.max(5, ...shown.map((candidate) => candidate.id.length)));
    println(
      context,
      out.dim(
        ` ${"#".padStart(2)}  ${"score".padStart(8)}  ${padCell("entry", idWidth)}  ${padCell("match", 19)}  title`,
      ),
    );
    for (const candidate of shown) {
      const marker = candidate.selected ? " " : out.dim("·");
      println(
        context,
        `${marker}${String(candidate.rank).padStart(2)}  ${score(candidate.score).padStart(8)}  ${padCell(candidate.id, idWidth)}  ${padCell(matchLabel(candidate), 19)}  ${candidate.title}`,
      );
      if (explain) {
        println(context, out.dim(`      ${explainScore(candidate, prepared)}`));
        const cut = explainCut(candidate);
        if (cut) println(context, out.dim(`      ${cut}`));
        if (candidate.matchedPhrases.length > 0) {
          println(
            context,
            out.dim(
              `      matched phrases: ${candidate.matchedPhrases.map((phrase) => JSON.stringify(phrase)).join(", ")}`,
            ),
          );
        }
      }
    }
    if (explain && report.candidates.some((candidate) => !candidate.selected)) {
      println(
        context,
        out.dim(
          report.candidates.some((candidate) => candidate.cut)
            ? "    (· = candidate not selected: cut by the rule shown, or beyond the result limit)"
            : "    (· = candidate not selected: beyond the result limit)",
        ),
      );
    }
  }
  if (report.expansionSkipped === "expansionMinConfidence") {
    println(context);
    println(
      context,
      out.dim(
        `Expansion skipped: confidence ${report.confidence} is below retrieval.expansionMinConfidence (${prepared.resolved.expansionMinConfidence})`,
      ),
    );
  }
  if (report.expanded.length > 0) {
    println(context);
    println(context, out.bold("Expanded"));
    for (const entry of report.expanded) {
      println(
        context,
        ` +  ${entry.id}  ${out.dim(entry.via ? `(related to ${entry.via})` : "")}  ${entry.title}`,
      );
    }
  }
  println(context);
  const { context: block } = report;
  println(
    context,
    `${label("Context")}${block.tokens} tokens of ${block.maxTokens} · ${block.citations.length} citation${block.citations.length === 1 ? "" : "s"} · ${block.truncated ? out.yellow("truncated") : "not truncated"}`,
  );
  println(
    context,
    `${label("Timing")}load ${formatMs(loadMs)} · validate ${formatMs(prepared.timing.validateMs)} · index ${formatMs(prepared.timing.indexMs)}${prepared.indexOrigin === "artifact" ? " (prebuilt)" : ""} · retrieve ${formatMs(report.timing.retrieveMs)} · assemble ${formatMs(report.timing.assembleMs)}`,
  );
  if (explain && block.text) {
    println(context);
    println(context, block.text);
  }
}

export async function runQuery(
  context: CommandContext,
  argument: string | undefined,
  flags: QueryFlags,
): Promise<number> {
  const resultLimit = parseCount(flags.limit, "--limit");
  const question = await readQuestion(context, argument, flags.file);
  if (flags.backend !== undefined) {
    const { runBackendQuery } = await import("./backend.js");
    return runBackendQuery(context, question, { ...flags, backend: flags.backend });
  }
  const loadStart = performance.now();
  const prepared = await prepareFromFlags(context, flags);
  const loadMs = performance.now() - loadStart - prepared.timing.validateMs - prepared.timing.indexMs;
  const report = runTurn(prepared, question, {
    ...(flags.integrations !== undefined ? { integrations: flags.integrations } : {}),
    ...(flags.allIntegrations ? { allIntegrations: true } : {}),
    ...(flags.blockedDomains !== undefined ? { blockedDomains: flags.blockedDomains } : {}),
    ...(resultLimit !== undefined ? { resultLimit } : {}),
  });
  // Counted once for this run from the knowledge base's population, not by retrieval.
  const excluded = countExclusions(populationOf(prepared), report);
  if (flags.json) {
    const { manifest } = prepared.knowledgeBase;
    println(
      context,
      JSON.stringify(
        {
          ...report,
          excluded,
          knowledgeBase: {
            contentVersion: manifest.contentVersion,
            catalogs: manifest.catalogs.length,
            entries: prepared.snapshot.entryCount,
            integrations: prepared.integrations,
            index: prepared.indexOrigin,
            ...(prepared.indexNote !== undefined ? { indexNote: prepared.indexNote } : {}),
          },
          preset: prepared.preset,
          retrieval: { ...prepared.resolved, ...(resultLimit !== undefined ? { resultLimit } : {}) },
          timing: { loadMs, ...prepared.timing, ...report.timing },
        },
        null,
        2,
      ),
    );
    return 0;
  }
  if (flags.context) {
    if (report.context.text) println(context, report.context.text);
    else context.io.stderr.write("no context: nothing matched or nothing fit the budget\n");
    return 0;
  }
  printHuman(context, report, prepared, excluded, flags.explain === true, loadMs);
  return 0;
}
