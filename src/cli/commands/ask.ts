/**
 * `lexground ask`: a grounded answer. With a provider (flag, `LEXGROUND_PROVIDER`, or a provider key in the
 * environment) the question goes through the NeuroLink client with `useKnowledgeGrounding: true` and the answer
 * streams; the client and the AI SDK are imported only then. Without one, the answer is assembled offline from the
 * top entries' summaries with their citations, and says so.
 */
import { citationMarker, parseKnowledgeCitation } from "../../index.js";
import type { ProviderNotConfiguredError, UnknownProviderError } from "../../neurolink/errors.js";
import { MissingPeerDependencyError } from "../../peerDependency.js";
import type { KnowledgeGroundingMetadata } from "../../types/knowledge.js";
import { CliFailure, CliUsageError } from "../errors.js";
import { type CommandContext, println } from "../io.js";
import type { RetrievalFlags } from "../main.js";
import { readQuestion } from "../question.js";
import { type PreparedKnowledgeBase, prepareFromFlags } from "../session.js";
import { resolveScope, runTurn, type TurnReport, type TurnScope } from "../turn.js";

export type AskFlags = RetrievalFlags & {
  provider?: string;
  model?: string;
  system?: string;
  stream?: boolean;
  offline?: boolean;
  file?: string;
  /** A PostgreSQL URL: the answer is grounded in the shared index (see `backend.ts`). */
  backend?: string;
  backendSchema?: string;
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

/** What an offline answer is assembled from: a turn's ranking, its primary entries and the block's citations. */
export type OfflineAnswerInput = Pick<TurnReport, "confidence" | "primary"> & {
  expanded: { id: string }[];
  candidates: { id: string; score: number }[];
  context: { citations: { id: string }[] };
};

/** The offline answer: the summaries of the top entries that made it into the context, each with its citation. */
export function offlineAnswer(report: OfflineAnswerInput): { text: string; citations: string[] } {
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

/** Candidate `[KB:<id>@<version>]` markers in an answer; {@link parseKnowledgeCitation} decodes each. */
const CITATION_MARKER = /\[KB:[^\]\s]*\]/g;

/** The entries a model answer was grounded in, split by whether the answer cites them. */
export type AnswerSources = {
  /** Entries of the context the answer cites (by id), in the order the answer first cites them. */
  cited: { id: string; citation: string; title: string }[];
  /** Entries of the context the answer does not cite, in context order. */
  alsoInContext: { id: string; citation: string; title: string }[];
  /** Markers in the answer that name no entry of the context (a misquoted or invented id). */
  unknown: string[];
};

/**
 * Splits the entries handed to the model into those the answer cites and the rest. A marker counts by its id, so a
 * citation with a wrong version still names its entry.
 */
export function answerSources(
  answer: string,
  metadata: KnowledgeGroundingMetadata | undefined,
  entryOf: EntryDescriber,
): AnswerSources {
  const inContext = metadata ? [...metadata.selectedIds, ...metadata.expandedIds] : [];
  const describe = (id: string) => {
    const entry = entryOf(id);
    return { id, citation: citationMarker(id, entry.version), title: entry.title };
  };
  const contextIds = new Set(inContext);
  const citedIds: string[] = [];
  const unknown: string[] = [];
  for (const match of answer.matchAll(CITATION_MARKER)) {
    const id = parseKnowledgeCitation(match[0])?.id;
    if (id === undefined) continue;
    if (contextIds.has(id)) {
      if (!citedIds.includes(id)) citedIds.push(id);
    } else if (!unknown.includes(match[0])) {
      unknown.push(match[0]);
    }
  }
  return {
    cited: citedIds.map(describe),
    alsoInContext: inContext.filter((id) => !citedIds.includes(id)).map(describe),
    unknown,
  };
}

/** The version and title of an entry of the context, by id (for the sources listed under an answer). */
export type EntryDescriber = (id: string) => { version: string; title: string };

/** Entries described from a knowledge base opened here (an unknown id gets the manifest's content version). */
export function describeFromKnowledgeBase(prepared: PreparedKnowledgeBase): EntryDescriber {
  return (id) => {
    const entry = prepared.snapshot.entriesById.get(id);
    return {
      version: entry?.version ?? prepared.knowledgeBase.manifest.contentVersion,
      title: entry?.title ?? "",
    };
  };
}

/** `[KB:id@v] Title; [KB:other@v] Other` */
function sourceList(sources: AnswerSources["cited"]): string {
  return sources.map((source) => `${source.citation}${source.title ? ` ${source.title}` : ""}`).join("; ");
}

/** Every provider name `--provider` accepts, for the usage message of an unknown one. */
const PROVIDER_HELP =
  "openai, anthropic, google, openai-compatible, or a local server: ollama, lmstudio, vllm (aliases: claude, gemini)";

/**
 * The client's configuration errors in the CLI's terms (flags and environment variables, not call options):
 * an unknown provider or a missing model is a usage error (exit 2); a missing key or address is a failure that
 * names the variable to set.
 */
export function providerErrorForCli(error: unknown): CliUsageError | CliFailure | undefined {
  // By the client's stable error codes: the client (and the AI SDK behind it) is imported only when a model runs.
  const code = error !== null && typeof error === "object" ? (error as { code?: unknown }).code : undefined;
  if (code === "UNKNOWN_PROVIDER") {
    const { provider } = error as UnknownProviderError;
    return new CliUsageError(
      `unknown provider "${provider}"`,
      `pass --provider with one of: ${PROVIDER_HELP}`,
    );
  }
  if (code !== "PROVIDER_NOT_CONFIGURED") return undefined;
  const provider = (error as ProviderNotConfiguredError).provider ?? "";
  const { setting } = error as ProviderNotConfiguredError;
  if (setting === "model" || setting.endsWith("_MODEL")) {
    return new CliUsageError(
      `provider "${provider}" needs a model`,
      `pass --model <name>${setting === "model" ? "" : `, or set ${setting}`} (or LEXGROUND_MODEL)`,
    );
  }
  if (setting === "LEXGROUND_PROVIDER") {
    return new CliUsageError(
      "no model provider is configured",
      "pass --provider <name>, or set LEXGROUND_PROVIDER or a provider key such as OPENAI_API_KEY; --offline answers without a model",
    );
  }
  const { cause } = error as ProviderNotConfiguredError;
  if (MissingPeerDependencyError.isInstance(cause)) {
    // No provider is named when the AI SDK itself (`ai`) is missing: every provider needs it.
    return new CliFailure(
      `${provider ? `provider "${provider}"` : "a model answer"} needs the package ${cause.packageName}, which is not installed`,
      `install it next to lexground: ${cause.installCommand}`,
    );
  }
  if (setting.endsWith("_BASE_URL")) {
    return new CliFailure(
      `provider "${provider}" has no server address`,
      `set ${setting}, e.g. ${setting}=http://127.0.0.1:11434/v1 for Ollama; --offline answers without a model`,
    );
  }
  return new CliFailure(
    `provider "${provider}" has no API key`,
    `set ${setting} in the environment; --offline answers without a model`,
  );
}

/**
 * Where an answer's knowledge comes from: a knowledge base opened here (`--kb`), or the shared PostgreSQL index
 * (`--backend`, in `backend.ts`).
 */
export type AskGrounding = {
  /** One turn for the offline answer. */
  offlineTurn(question: string): Promise<OfflineAnswerInput>;
  /** The client's `knowledgeGrounding` option, `enabled` aside. */
  knowledgeGrounding: Record<string, unknown>;
  enabledIntegrations: string[];
  /** Describes the entries of the question's context, for the sources listed under a model's answer. */
  describer(question: string): Promise<EntryDescriber>;
  close(): Promise<void>;
};

/** An answer grounded in a knowledge base opened here. */
async function localGrounding(context: CommandContext, flags: AskFlags): Promise<AskGrounding> {
  const prepared = await prepareFromFlags(context, flags);
  const scope = scopeOf(flags);
  const { enabledIntegrations, blockedDomains } = resolveScope(prepared, scope);
  const { config } = prepared;
  return {
    offlineTurn: async (question) => runTurn(prepared, question, scope),
    knowledgeGrounding: {
      // A self-contained artifact (--kb kb.lxg) is the knowledge base on its own.
      ...(prepared.artifactPath !== undefined
        ? { indexArtifact: prepared.artifactPath }
        : { sources: prepared.knowledgeBase.sources }),
      blockedDomains,
      ...(config.preset !== undefined ? { preset: config.preset } : {}),
      ...(config.retrieval ? { retrieval: config.retrieval } : {}),
      ...(config.context ? { context: config.context } : {}),
      ...(config.timeoutMs !== undefined ? { timeoutMs: config.timeoutMs } : {}),
    },
    enabledIntegrations,
    describer: async () => describeFromKnowledgeBase(prepared),
    close: async () => {},
  };
}

export async function runAsk(
  context: CommandContext,
  argument: string | undefined,
  flags: AskFlags,
): Promise<number> {
  const question = await readQuestion(context, argument, flags.file);
  const grounding =
    flags.backend !== undefined
      ? await (await import("./backend.js")).backendGrounding(context, { ...flags, backend: flags.backend })
      : await localGrounding(context, flags);
  try {
    return await respond(context, question, flags, grounding);
  } finally {
    await grounding.close();
  }
}

/** The answer: offline, or the model's through the client, with its sources. */
async function respond(
  context: CommandContext,
  question: string,
  flags: AskFlags,
  grounding: AskGrounding,
): Promise<number> {
  const { out } = context;
  if (!hasProvider(flags, context.io.env)) {
    const report = await grounding.offlineTurn(question);
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

  // Only now: the client, which loads the AI SDK and the provider's package at its first call (a missing one is
  // a ProviderNotConfiguredError naming it, translated by providerErrorForCli).
  const { NeuroLink } = await import("../../neurolink/index.js");
  const neurolink = new NeuroLink({
    knowledgeGrounding: { enabled: true, ...grounding.knowledgeGrounding },
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
    knowledgeContext: { enabledIntegrations: grounding.enabledIntegrations },
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
    const translated = providerErrorForCli(error);
    if (translated) throw translated;
    const description = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
    throw new CliFailure(
      `the model call failed: ${description.split("\n")[0]}`,
      "check --provider, --model and the provider's API key variable, or pass --offline to answer from the knowledge base alone",
      { cause: error },
    );
  }
  const sources = answerSources(answer, metadata, await grounding.describer(question));
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
          citations: sources.cited.map((source) => source.citation),
          alsoInContext: sources.alsoInContext.map((source) => source.citation),
          unknownCitations: sources.unknown,
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
  if (sources.cited.length > 0) println(context, out.dim(`Sources: ${sourceList(sources.cited)}`));
  else if (sources.alsoInContext.length > 0) println(context, out.dim("Sources: none cited by the answer"));
  if (sources.alsoInContext.length > 0) {
    println(context, out.dim(`Also in context: ${sourceList(sources.alsoInContext)}`));
  }
  if (sources.unknown.length > 0) {
    println(
      context,
      out.yellow(`Cited but not in the context: ${sources.unknown.join(", ")} (check these claims)`),
    );
  }
  return 0;
}
