/**
 * `lexground ask`: a grounded answer. With a provider (flag, `LEXGROUND_PROVIDER`, or a provider key in the
 * environment) the question goes through the NeuroLink client with `useKnowledgeGrounding: true` and the answer
 * streams; the client and the AI SDK are imported only then. Without one, the answer is assembled offline from the
 * top entries' summaries with their citations, and says so.
 */
import { citationMarker } from "../../index.js";
import type { KnowledgeGroundingMetadata } from "../../types/knowledge.js";
import { CliFailure } from "../errors.js";
import { type CommandContext, println } from "../io.js";
import type { RetrievalFlags } from "../main.js";
import {
  type PreparedKnowledgeBase,
  prepareFromFlags,
  resolveScope,
  runTurn,
  type TurnReport,
  type TurnScope,
} from "../session.js";

export type AskFlags = RetrievalFlags & {
  provider?: string;
  model?: string;
  system?: string;
  stream?: boolean;
  offline?: boolean;
};

/** Environment variables that configure a provider for the NeuroLink client (any one is enough). */
export const PROVIDER_ENVIRONMENT_VARIABLES = [
  "LEXGROUND_PROVIDER",
  "OPENAI_API_KEY",
  "ANTHROPIC_API_KEY",
  "GOOGLE_GENERATIVE_AI_API_KEY",
  "GOOGLE_AI_API_KEY",
  "GEMINI_API_KEY",
  "OPENAI_COMPATIBLE_BASE_URL",
];

/** Entries quoted by an offline answer, at most. */
export const OFFLINE_ANSWER_ENTRIES = 3;
/** An offline answer quotes an entry only when its score is at least this share of the best score. */
export const OFFLINE_RELATIVE_SCORE = 0.5;

export const DEFAULT_ASK_SYSTEM_PROMPT =
  "You are a precise support assistant. Answer the user's question from the knowledge entries provided, citing " +
  "each fact with its [KB:id@version] marker. If the entries do not answer the question, say so plainly.";

export const OFFLINE_NOTICE =
  "No model provider is configured (set OPENAI_API_KEY, ANTHROPIC_API_KEY, GOOGLE_GENERATIVE_AI_API_KEY or " +
  "OPENAI_COMPATIBLE_BASE_URL, or pass --provider), so this answer is assembled offline from the summaries of " +
  "the best-matching knowledge entries.";

function scopeOf(flags: AskFlags): TurnScope {
  return {
    ...(flags.integrations !== undefined ? { integrations: flags.integrations } : {}),
    ...(flags.allIntegrations ? { allIntegrations: true } : {}),
    ...(flags.blockedDomains !== undefined ? { blockedDomains: flags.blockedDomains } : {}),
  };
}

/** The offline answer: the summaries of the top entries that made it into the context, each with its citation. */
export function offlineAnswer(report: TurnReport): { text: string; citations: string[] } {
  const included = new Set(report.context.citations.map((citation) => citation.id));
  const scores = new Map(report.candidates.map((candidate) => [candidate.id, candidate.score]));
  const best = report.candidates[0]?.score ?? 0;
  // Without a model nothing filters the weak tail, so only entries scoring close to the best one are quoted.
  const top = report.primary
    .filter((entry) => included.has(entry.id) && (scores.get(entry.id) ?? 0) >= best * OFFLINE_RELATIVE_SCORE)
    .slice(0, OFFLINE_ANSWER_ENTRIES);
  if (top.length === 0) {
    return { text: "The knowledge base has no entry that matches this question.", citations: [] };
  }
  const caveat =
    report.confidence === "low"
      ? "The match is weak (confidence: low); these entries may not answer the question.\n"
      : "";
  const lines = top.map(
    (entry, index) =>
      `${index + 1}. ${entry.title}: ${entry.summary} ${citationMarker(entry.id, entry.version)}`,
  );
  return {
    text: `${caveat}${lines.join("\n")}`,
    citations: top.map((entry) => citationMarker(entry.id, entry.version)),
  };
}

function hasProvider(flags: AskFlags, env: CommandContext["io"]["env"]): boolean {
  if (flags.offline) return false;
  if (flags.provider) return true;
  return PROVIDER_ENVIRONMENT_VARIABLES.some((name) => (env[name] ?? "") !== "");
}

function sourcesLine(
  metadata: KnowledgeGroundingMetadata | undefined,
  prepared: PreparedKnowledgeBase,
): string[] {
  if (!metadata) return [];
  const ids = [...metadata.selectedIds, ...metadata.expandedIds];
  return ids.map((id) => {
    const entry = prepared.snapshot.entriesById.get(id);
    return `${citationMarker(id, entry?.version ?? prepared.knowledgeBase.manifest.contentVersion)}${entry ? ` ${entry.title}` : ""}`;
  });
}

export async function runAsk(context: CommandContext, question: string, flags: AskFlags): Promise<number> {
  const prepared = await prepareFromFlags(context, flags);
  const scope = scopeOf(flags);
  const { out } = context;

  if (!hasProvider(flags, context.io.env)) {
    const report = runTurn(prepared, question, scope);
    const answer = offlineAnswer(report);
    if (flags.json) {
      println(
        context,
        JSON.stringify(
          {
            mode: "offline",
            notice: OFFLINE_NOTICE,
            question,
            answer: answer.text,
            citations: answer.citations,
            confidence: report.confidence,
            selectedIds: report.primary.map((entry) => entry.id),
            expandedIds: report.expanded.map((entry) => entry.id),
          },
          null,
          2,
        ),
      );
      return 0;
    }
    println(context, out.dim(`(offline) ${OFFLINE_NOTICE}`));
    println(context);
    println(context, answer.text);
    println(context);
    println(context, out.dim(`Confidence: ${report.confidence}`));
    return 0;
  }

  // Only now: the client pulls in the AI SDK and its providers.
  const { NeuroLink } = await import("../../neurolink/index.js");
  const { enabledIntegrations, blockedDomains } = resolveScope(prepared, scope);
  const { config } = prepared;
  const neurolink = new NeuroLink({
    knowledgeGrounding: {
      enabled: true,
      sources: prepared.knowledgeBase.sources,
      blockedDomains,
      ...(config.preset !== undefined ? { preset: config.preset } : {}),
      ...(config.retrieval ? { retrieval: config.retrieval } : {}),
      ...(config.context ? { context: config.context } : {}),
      ...(config.timeoutMs !== undefined ? { timeoutMs: config.timeoutMs } : {}),
    },
    conversationMemory: { enabled: false },
    env: context.io.env,
    logger: {
      warn: (message: string) => {
        context.io.stderr.write(`${message}\n`);
      },
      error: (message: string) => {
        context.io.stderr.write(`${message}\n`);
      },
    },
  });
  const options = {
    input: { text: question },
    ...(flags.provider ? { provider: flags.provider } : {}),
    ...(flags.model ? { model: flags.model } : {}),
    systemPrompt: flags.system ?? DEFAULT_ASK_SYSTEM_PROMPT,
    useKnowledgeGrounding: true,
    knowledgeContext: { enabledIntegrations },
    conversationMessages: [],
  };

  let answer = "";
  let metadata: KnowledgeGroundingMetadata | undefined;
  let provider = "";
  let model = "";
  try {
    if (flags.stream === false || flags.json) {
      const result = await neurolink.generate(options);
      answer = result.content;
      metadata = result.knowledge;
      provider = result.provider;
      model = result.model;
      if (!flags.json) println(context, answer);
    } else {
      const result = await neurolink.stream(options);
      metadata = result.knowledge;
      for await (const chunk of result.textStream) {
        answer += chunk;
        context.io.stdout.write(chunk);
      }
      const final = await result.result;
      metadata = final.knowledge ?? metadata;
      provider = final.provider;
      model = final.model;
      if (!answer.endsWith("\n")) context.io.stdout.write("\n");
    }
  } catch (error) {
    if (answer !== "" && !answer.endsWith("\n")) context.io.stdout.write("\n");
    const description = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
    throw new CliFailure(
      `the model call failed: ${description.split("\n")[0]}`,
      "check --provider, --model and the provider's API key variable, or pass --offline to answer from the knowledge base alone",
      { cause: error },
    );
  }
  const sources = sourcesLine(metadata, prepared);
  if (flags.json) {
    println(
      context,
      JSON.stringify(
        {
          mode: "model",
          question,
          provider,
          model,
          answer,
          citations: sources.map((line) => line.split(" ")[0]),
          confidence: metadata?.confidence ?? "none",
          knowledge: metadata ?? null,
        },
        null,
        2,
      ),
    );
    return 0;
  }
  println(context);
  println(
    context,
    out.dim(
      `${provider}/${model} · confidence ${metadata?.confidence ?? "none"}${metadata?.failureReason ? ` · grounding failed open: ${metadata.failureReason}` : ""}`,
    ),
  );
  if (sources.length > 0) println(context, out.dim(`Sources: ${sources.join("; ")}`));
  return 0;
}
