/**
 * What `query`, `ask` and `mcp` share: load a knowledge base (with a progress line on a terminal), read the
 * optional configuration file, validate, build the index once, and run one turn's retrieval with everything the
 * engine knows about it (scores per field, boosts, matched phrases, expansion, context, timings).
 *
 * @module
 */
import { open, readFile } from "node:fs/promises";
import { resolve } from "node:path";
import { performance } from "node:perf_hooks";
import { readKnowledgeBase } from "../files/compile.js";
import { CONTENT_WARNING_CODES } from "../files/fileText.js";
import { locateIssues, notesToIssues } from "../files/issues.js";
import type { LoadedKnowledgeBase } from "../files/types.js";
import {
  assembleKnowledgeContext,
  buildIndexSnapshot,
  buildKnowledgeIndexCacheKey,
  DEFAULT_MAX_CONTEXT_TOKENS,
  deserializeIndexSnapshot,
  isKnowledgePresetName,
  KNOWLEDGE_PRESET_NAMES,
  KnowledgeArtifactError,
  loadIndexArtifact,
  MAX_QUERY_CHARS,
  resolveGroundingConfiguration,
  retrieve,
} from "../index.js";
import { KNOWLEDGE_STATUSES } from "../knowledge/defaults.js";
import { resolveArtifactIndexOptions } from "../knowledge/indexCache.js";
import { getCompiledSnapshot } from "../knowledge/knowledgeIndex.js";
import { normalizeSources } from "../knowledge/resolve.js";
import type {
  KnowledgeCandidateCut,
  KnowledgeCitation,
  KnowledgeContextConfig,
  KnowledgeExpansionSkip,
  KnowledgeFieldName,
  KnowledgeIndexSnapshot,
  KnowledgePresetName,
  KnowledgeResolvedRetrieval,
  KnowledgeRetrievalConfidence,
  KnowledgeStatus,
  KnowledgeValidationIssue,
  NormalizedKnowledgeEntry,
} from "../types/knowledge.js";
import { type CliGroundingConfig, readConfigFile } from "./config.js";
import { CliFailure, CliUsageError, KnowledgeBaseInvalidError } from "./errors.js";
import { type CommandContext, createProgress, parseList } from "./io.js";
import { formatIssue } from "./report.js";

export type { CliGroundingConfig } from "./config.js";

/** Checks a `--preset` flag value; an unknown name is a usage error listing the presets. */
export function parsePreset(value: string | undefined): KnowledgePresetName | undefined {
  if (value === undefined) return undefined;
  if (!isKnowledgePresetName(value)) {
    throw new CliUsageError(
      `unknown preset "${value}"`,
      `use one of: ${KNOWLEDGE_PRESET_NAMES.join(", ")} (e.g. --preset recommended)`,
    );
  }
  return value;
}

/** Resolves `--kb` (or `$LEXGROUND_KB`) or explains how to give it. */
export function knowledgeBasePath(context: CommandContext, kb: string | undefined): string {
  const path = kb ?? context.io.env.LEXGROUND_KB;
  if (!path) {
    throw new CliUsageError(
      "no knowledge base given",
      "pass --kb <manifest.json|folder> (or set LEXGROUND_KB), e.g. --kb examples/knowledge-base",
    );
  }
  return path;
}

/** `kb.json` → `kb.lxg`: where `build --index` writes, and where `--kb kb.json` looks for a prebuilt index. */
export function defaultIndexPath(manifestPath: string): string {
  return `${manifestPath.replace(/\.json$/i, "")}.lxg`;
}

/** Loads a knowledge base with a progress line on a terminal. */
export async function openKnowledgeBase(
  context: CommandContext,
  inputs: string | readonly string[],
  options: {
    locate?: boolean;
    collectFileErrors?: boolean;
    requireManifestJson?: boolean;
    contentVersion?: string;
    generatedAt?: string;
  } = {},
): Promise<LoadedKnowledgeBase> {
  const progress = createProgress(context);
  try {
    return await readKnowledgeBase(inputs, {
      cwd: context.io.cwd,
      env: context.io.env,
      ...(options.locate ? { locate: true } : {}),
      ...(options.collectFileErrors ? { collectFileErrors: true } : {}),
      ...(options.requireManifestJson ? { requireManifestJson: true } : {}),
      ...(options.contentVersion !== undefined ? { contentVersion: options.contentVersion } : {}),
      ...(options.generatedAt !== undefined ? { generatedAt: options.generatedAt } : {}),
      onProgress: ({ phase, done, total }) =>
        progress.update(
          phase === "read"
            ? `reading entry files ${done}/${total ?? "?"}`
            : `reading corpus: ${done} documents`,
        ),
    });
  } finally {
    progress.done();
  }
}

/** A validated, indexed knowledge base ready for turns. */
export type PreparedKnowledgeBase = {
  knowledgeBase: LoadedKnowledgeBase;
  config: CliGroundingConfig;
  entries: NormalizedKnowledgeEntry[];
  snapshot: KnowledgeIndexSnapshot;
  /** The preset in effect (`config.preset`, default `"neurolink"`). */
  preset: KnowledgePresetName;
  /** Retrieval settings: the preset overlaid with `config.retrieval`, then the defaults. */
  resolved: KnowledgeResolvedRetrieval;
  /** Context settings the block is assembled with: the preset overlaid with `config.context`. */
  context: KnowledgeContextConfig;
  warnings: KnowledgeValidationIssue[];
  /** Every integration named by an entry, sorted. */
  integrations: string[];
  timing: { validateMs: number; indexMs: number };
  /** Whether the index was built here or loaded from a prebuilt artifact (beside the manifest, or `--kb kb.lxg`). */
  indexOrigin: "built" | "artifact";
  /** The self-contained artifact the knowledge base was opened from (`--kb kb.lxg`), if so. */
  artifactPath?: string;
  /** Why a prebuilt artifact beside the manifest was not used. */
  indexNote?: string;
};

/** Active entries that share a domain and a set of integrations (lowercased, sorted). */
export type KnowledgeScopeGroup = { domain: string; integrations: string[]; count: number };

/** The knowledge base's entries counted by what decides whether a turn may retrieve them. */
export type KnowledgePopulation = {
  statuses: Record<KnowledgeStatus, number>;
  /** Active entries grouped by (domain, integrations): a scope's exclusions are counted per group, not per entry. */
  scopeGroups: KnowledgeScopeGroup[];
};

/** Counts the entries per status and groups the active ones by scope, once per knowledge base. */
export function countPopulation(entries: readonly NormalizedKnowledgeEntry[]): KnowledgePopulation {
  const statuses: Record<KnowledgeStatus, number> = { active: 0, draft: 0, deprecated: 0 };
  const groups = new Map<string, KnowledgeScopeGroup>();
  for (const entry of entries) {
    statuses[entry.status] += 1;
    if (entry.status !== "active") continue;
    const integrations = [...new Set(entry.integrations.map((name) => name.toLowerCase()))].sort();
    const key = JSON.stringify([entry.domain, integrations]);
    const group = groups.get(key);
    if (group) group.count += 1;
    else groups.set(key, { domain: entry.domain, integrations, count: 1 });
  }
  return { statuses, scopeGroups: [...groups.values()] };
}

const populations = new WeakMap<PreparedKnowledgeBase, KnowledgePopulation>();

/** The population of a prepared knowledge base, counted on first use (a cold start that never asks pays nothing). */
export function populationOf(prepared: PreparedKnowledgeBase): KnowledgePopulation {
  let population = populations.get(prepared);
  if (!population) {
    population = countPopulation(prepared.entries);
    populations.set(prepared, population);
  }
  return population;
}

/** How many entries a turn could never retrieve, and why. */
export type KnowledgeExclusions = {
  draft: number;
  deprecated: number;
  /** Active entries in a blocked domain. */
  blockedDomain: number;
  /** Active entries, outside blocked domains, bound only to integrations the turn does not enable. */
  integrations: number;
};

/**
 * Counts what a scope excludes from the precomputed population: one pass over the scope groups (a handful for a
 * typical knowledge base), never over the entries, and never in the engine's retrieval path.
 */
export function countExclusions(
  population: KnowledgePopulation,
  scope: { enabledIntegrations: readonly string[]; blockedDomains: readonly string[] },
): KnowledgeExclusions {
  const enabled = new Set(scope.enabledIntegrations.map((name) => name.toLowerCase()));
  const blocked = new Set(scope.blockedDomains);
  let blockedDomain = 0;
  let integrations = 0;
  for (const group of population.scopeGroups) {
    if (blocked.has(group.domain)) blockedDomain += group.count;
    else if (group.integrations.length > 0 && !group.integrations.some((name) => enabled.has(name)))
      integrations += group.count;
  }
  return {
    draft: population.statuses.draft,
    deprecated: population.statuses.deprecated,
    blockedDomain,
    integrations,
  };
}

/** Validates and indexes; throws {@link KnowledgeBaseInvalidError} when validation finds errors. */
export function prepareKnowledgeBase(
  knowledgeBase: LoadedKnowledgeBase,
  config: CliGroundingConfig,
  indexArtifact?: Uint8Array,
): PreparedKnowledgeBase {
  const validateStart = performance.now();
  const { entries, validation, groups } = normalizeSources(knowledgeBase.sources, {
    manifestVersion: knowledgeBase.manifest.contentVersion,
  });
  const validateMs = performance.now() - validateStart;
  if (!validation.ok) throw new KnowledgeBaseInvalidError(locateIssues(validation.issues, knowledgeBase));
  const effective = resolveGroundingConfiguration(config);
  const resolved = effective.retrieval;
  const indexStart = performance.now();
  const indexOptions = {
    fieldWeights: resolved.fieldWeights,
    ...(resolved.k1 !== undefined ? { k1: resolved.k1 } : {}),
    ...(resolved.b !== undefined ? { b: resolved.b } : {}),
    ...(resolved.analyzer !== undefined ? { analyzer: resolved.analyzer } : {}),
    ...(resolved.scoring !== undefined ? { scoring: resolved.scoring } : {}),
  };
  let snapshot: KnowledgeIndexSnapshot | undefined;
  let indexOrigin: "built" | "artifact" = "built";
  let indexNote: string | undefined;
  if (indexArtifact) {
    try {
      const key = buildKnowledgeIndexCacheKey(groups, indexOptions);
      snapshot = deserializeIndexSnapshot(indexArtifact, key, entries).snapshot;
      indexOrigin = "artifact";
    } catch (caught) {
      indexNote = `prebuilt index not used (${caught instanceof Error ? caught.message : String(caught)})`;
    }
  }
  snapshot ??= buildIndexSnapshot(entries, indexOptions);
  const indexMs = performance.now() - indexStart;
  const integrations = new Set<string>();
  for (const entry of entries) for (const integration of entry.integrations) integrations.add(integration);
  return {
    knowledgeBase,
    config,
    entries,
    snapshot,
    preset: effective.preset,
    resolved,
    context: effective.contextConfig,
    warnings: validation.issues.filter((issue) => issue.level !== "error"),
    integrations: [...integrations].sort(),
    timing: { validateMs, indexMs },
    indexOrigin,
    ...(indexNote !== undefined ? { indexNote } : {}),
  };
}

/** Flags that scope one turn. */
export type TurnScope = {
  integrations?: string | string[];
  allIntegrations?: boolean;
  blockedDomains?: string | string[];
  resultLimit?: number;
};

/** One ranked candidate, with the evidence behind its score. */
export type ExplainedCandidate = {
  rank: number;
  id: string;
  title: string;
  kind: string;
  score: number;
  lexical: number;
  exact: boolean;
  alias: boolean;
  fieldScores: Partial<Record<KnowledgeFieldName, number>>;
  matchedPhrases: string[];
  /** Whether the candidate made it into the primary selection. */
  selected: boolean;
  /** Why an adaptive cut-off removed it from the primary selection (absent otherwise). */
  cut?: KnowledgeCandidateCut;
};

/** Everything one turn produced, as `query --json` prints it. */
export type TurnReport = {
  query: string;
  enabledIntegrations: string[];
  blockedDomains: string[];
  confidence: KnowledgeRetrievalConfidence;
  /** Eligible candidates before the candidate-limit cut. */
  candidateCount: number;
  candidates: ExplainedCandidate[];
  primary: { id: string; title: string; summary: string; version: string }[];
  expanded: { id: string; title: string; summary: string; version: string; via: string | null }[];
  /** Set when an expansion rule stopped relation expansion. */
  expansionSkipped?: KnowledgeExpansionSkip;
  context: {
    text: string;
    tokens: number;
    maxTokens: number;
    truncated: boolean;
    citations: KnowledgeCitation[];
  };
  timing: { retrieveMs: number; assembleMs: number };
};

function asList(value: string | string[] | undefined): string[] | undefined {
  return Array.isArray(value) ? value : parseList(value);
}

/** The integrations and blocked domains a turn runs with: flags first, then the config file, then none. */
export function resolveScope(
  prepared: PreparedKnowledgeBase,
  scope: TurnScope,
): { enabledIntegrations: string[]; blockedDomains: string[] } {
  return {
    enabledIntegrations: scope.allIntegrations ? prepared.integrations : (asList(scope.integrations) ?? []),
    blockedDomains: asList(scope.blockedDomains) ?? prepared.config.blockedDomains ?? [],
  };
}

/** Runs one turn on a prepared knowledge base. */
export function runTurn(prepared: PreparedKnowledgeBase, query: string, scope: TurnScope = {}): TurnReport {
  const { enabledIntegrations, blockedDomains } = resolveScope(prepared, scope);
  const resolved =
    scope.resultLimit !== undefined
      ? { ...prepared.resolved, resultLimit: scope.resultLimit }
      : prepared.resolved;
  const retrieveStart = performance.now();
  const selection = retrieve(
    prepared.snapshot,
    { query, recentTurns: [], enabledIntegrations },
    resolved,
    blockedDomains,
  );
  const retrieveMs = performance.now() - retrieveStart;
  const assembleStart = performance.now();
  const assembled = assembleKnowledgeContext(selection, prepared.context, {
    query,
    analyzer: resolved.analyzer ?? "none",
  });
  const assembleMs = performance.now() - assembleStart;

  const primaryIds = new Set(selection.primary.map((entry) => entry.id));
  const byId = prepared.snapshot.entriesById;
  const candidates = selection.candidates.map((candidate, index) => {
    const entry = byId.get(candidate.id);
    return {
      rank: index + 1,
      id: candidate.id,
      title: entry?.title ?? "",
      kind: entry?.kind ?? "",
      score: candidate.score,
      lexical: candidate.lexical,
      exact: candidate.exact,
      alias: candidate.alias,
      fieldScores: candidate.fieldScores,
      matchedPhrases: candidate.matchedPhrases,
      selected: primaryIds.has(candidate.id),
      ...(candidate.cut ? { cut: candidate.cut } : {}),
    };
  });
  const describe = (entry: NormalizedKnowledgeEntry) => ({
    id: entry.id,
    title: entry.title,
    summary: entry.summary,
    version: entry.version,
  });
  const expanded = selection.expanded.map((entry) => {
    const via = selection.primary.find((primary) =>
      (prepared.snapshot.relationIndex.get(primary.id) ?? []).includes(entry.id),
    );
    return { ...describe(entry), via: via?.id ?? null };
  });
  return {
    query,
    enabledIntegrations,
    blockedDomains,
    confidence: selection.confidence,
    candidateCount: selection.candidateCount,
    candidates,
    primary: selection.primary.map(describe),
    expanded,
    ...(selection.expansionSkipped ? { expansionSkipped: selection.expansionSkipped } : {}),
    context: {
      text: assembled.assembledContext,
      tokens: assembled.contextTokens,
      maxTokens: prepared.context.maxTokens ?? DEFAULT_MAX_CONTEXT_TOKENS,
      truncated: assembled.truncated,
      citations: assembled.citations,
    },
    timing: { retrieveMs, assembleMs },
  };
}

/** Whether `--kb` names a self-contained index artifact (`kb.lxg`) rather than a manifest or a folder. */
export function isArtifactPath(path: string): boolean {
  return /\.lxg$/i.test(path);
}

/**
 * Opens a self-contained index artifact (`--kb kb.lxg`): nothing to read, validate or index; the entries are
 * decoded from the artifact when first used (a single query decodes the entries it shows; `entries` decodes them
 * all on first access). The artifact must have been built with the index settings of `config` (its preset and
 * retrieval settings), otherwise this fails with a hint to rebuild it.
 */
export async function prepareFromArtifact(
  context: CommandContext,
  path: string,
  config: CliGroundingConfig,
): Promise<PreparedKnowledgeBase> {
  const effective = resolveGroundingConfiguration(config);
  const resolved = effective.retrieval;
  const indexStart = performance.now();
  let loaded: Awaited<ReturnType<typeof loadIndexArtifact>>;
  try {
    loaded = await loadIndexArtifact(resolve(context.io.cwd, path), {
      options: resolveArtifactIndexOptions({
        fieldWeights: resolved.fieldWeights,
        k1: resolved.k1,
        b: resolved.b,
        analyzer: resolved.analyzer,
        scoring: resolved.scoring,
      }),
    });
  } catch (caught) {
    const message = caught instanceof Error ? caught.message : String(caught);
    const code = caught instanceof KnowledgeArtifactError ? caught.code : "unreadable";
    throw new CliFailure(
      `cannot use ${path}: ${message}`,
      code === "options-mismatch"
        ? "build the artifact with the same preset (lexground build <input> -o kb.json --index --preset <name>), or pass the manifest instead"
        : "rebuild it with lexground build <input> -o kb.json --index, or pass the manifest or folder instead",
      { cause: caught, details: { code: `artifact-${code}`, file: path } },
    );
  }
  const { snapshot, header } = loaded;
  const indexMs = performance.now() - indexStart;
  // A manifest gives every catalog its content version; sources of other versions are listed together.
  const contentVersion = [...new Set(header.sources.map((source) => source.version))].join("+") || "0";
  const knowledgeBase: LoadedKnowledgeBase = {
    manifest: {
      schemaVersion: "1",
      contentVersion,
      generatedAt: "",
      catalogs: header.sources.map((source) => ({ id: source.id, entries: [] })),
    },
    sources: [],
    sourceMap: { catalogs: [] },
    notes: [],
    origin: "artifact",
  };
  let entries: NormalizedKnowledgeEntry[] | undefined;
  let integrations: string[] | undefined;
  const prepared = {
    knowledgeBase,
    config,
    snapshot,
    preset: effective.preset,
    resolved,
    context: effective.contextConfig,
    warnings: [],
    timing: { validateMs: 0, indexMs },
    indexOrigin: "artifact",
    artifactPath: resolve(context.io.cwd, path),
  } as Omit<PreparedKnowledgeBase, "entries" | "integrations">;
  // Decoded on first use only: a single query never needs every entry.
  Object.defineProperties(prepared, {
    entries: {
      enumerable: true,
      get: () => {
        entries ??= [...snapshot.entriesById.values()];
        return entries;
      },
    },
    integrations: {
      enumerable: true,
      get: () => {
        if (!integrations) {
          const names = new Set<string>();
          for (const entry of (prepared as PreparedKnowledgeBase).entries)
            for (const integration of entry.integrations) names.add(integration);
          integrations = [...names].sort();
        }
        return integrations;
      },
    },
  });
  const population = artifactPopulation(snapshot, header.statusCounts);
  if (population) populations.set(prepared as PreparedKnowledgeBase, population);
  return prepared as PreparedKnowledgeBase;
}

/**
 * The population of a loaded artifact from its scope lists (which entries are active, in which domain, bound to
 * which integrations) and its status counts, without decoding any entry.
 */
function artifactPopulation(
  snapshot: KnowledgeIndexSnapshot,
  statusCounts: Record<KnowledgeStatus, number> | undefined,
): KnowledgePopulation | undefined {
  const compiled = getCompiledSnapshot(snapshot);
  if (!compiled || typeof statusCounts !== "object" || statusCounts === null) return undefined;
  if (!KNOWLEDGE_STATUSES.every((status) => Number.isSafeInteger(statusCounts[status]))) return undefined;
  const count = snapshot.entryCount;
  const domainOf: string[] = new Array(count);
  for (const [domain, docs] of compiled.byDomain) for (const doc of docs) domainOf[doc] = domain;
  const integrationsOf: string[][] = new Array(count);
  for (const [integration, docs] of compiled.activeByIntegration) {
    for (const doc of docs) {
      const list = integrationsOf[doc];
      if (list) list.push(integration);
      else integrationsOf[doc] = [integration];
    }
  }
  const groups = new Map<string, KnowledgeScopeGroup>();
  for (let doc = 0; doc < count; doc++) {
    const bound = integrationsOf[doc];
    if (compiled.universalMask[doc] !== 1 && !bound) continue;
    const integrations = bound ? [...bound].sort() : [];
    const key = JSON.stringify([domainOf[doc], integrations]);
    const group = groups.get(key);
    if (group) group.count += 1;
    else groups.set(key, { domain: domainOf[doc]!, integrations, count: 1 });
  }
  return { statuses: { ...statusCounts }, scopeGroups: [...groups.values()] };
}

/** Loads, configures, validates and indexes in one step, as `query`, `ask` and `mcp` do. */
export async function prepareFromFlags(
  context: CommandContext,
  flags: { kb?: string; config?: string; preset?: string },
): Promise<PreparedKnowledgeBase> {
  const preset = parsePreset(flags.preset);
  const path = knowledgeBasePath(context, flags.kb);
  const fileConfig = flags.config ? await readConfigFile(context, flags.config) : {};
  // --preset replaces the file's preset; the file's explicit retrieval and context fields still override it.
  const config: CliGroundingConfig = preset !== undefined ? { ...fileConfig, preset } : fileConfig;
  if (isArtifactPath(path)) return prepareFromArtifact(context, path, config);
  // --kb takes a manifest .json, not an entry file (build one, or pass the folder).
  const knowledgeBase = await openKnowledgeBase(context, path, { requireManifestJson: true });
  // The run continues, but a file whose text is damaged (invalid UTF-8, binary) is named on stderr.
  for (const issue of notesToIssues(knowledgeBase.notes)) {
    if (CONTENT_WARNING_CODES.has(issue.code))
      context.io.stderr.write(`${formatIssue(issue, context.err)}\n`);
  }
  const progress = createProgress(context);
  progress.update(
    `indexing ${knowledgeBase.manifest.catalogs.reduce((sum, c) => sum + c.entries.length, 0)} entries`,
  );
  // A prebuilt index beside a manifest (kb.json → kb.lxg) is used when it matches; see `build --index`.
  let artifact: Uint8Array | undefined;
  if (/\.json$/i.test(path)) {
    artifact = await readFile(resolve(context.io.cwd, defaultIndexPath(path))).catch(() => undefined);
  }
  try {
    return prepareKnowledgeBase(knowledgeBase, config, artifact);
  } finally {
    progress.done();
  }
}

/** Parses a positive integer flag such as `--limit`. */
export function parseCount(value: string | undefined, flag: string): number | undefined {
  if (value === undefined) return undefined;
  if (!/^\d+$/.test(value) || Number(value) < 1) {
    throw new CliUsageError(`${flag} must be a whole number >= 1, got "${value}"`, `e.g. ${flag} 5`);
  }
  return Number(value);
}

/** Largest question read from a file or standard input (the engine searches its first {@link MAX_QUERY_CHARS}). */
export const MAX_QUESTION_BYTES = 16 * 1024 * 1024;

async function readBoundedStream(stream: AsyncIterable<unknown>, source: string): Promise<string> {
  const chunks: Buffer[] = [];
  let bytes = 0;
  for await (const chunk of stream) {
    const buffer = typeof chunk === "string" ? Buffer.from(chunk) : Buffer.from(chunk as Uint8Array);
    bytes += buffer.length;
    if (bytes > MAX_QUESTION_BYTES) {
      throw new CliUsageError(
        `the question from ${source} is larger than ${MAX_QUESTION_BYTES / 1024 / 1024} MiB`,
        `only the first ${MAX_QUERY_CHARS} characters are searched; pass a shorter question`,
      );
    }
    chunks.push(buffer);
  }
  return Buffer.concat(chunks).toString("utf8");
}

/**
 * The question of `query` or `ask`: the argument, or the contents of `--file` (`-` for standard input), or standard
 * input when there is no argument and it is not a terminal. A long question belongs in a file or a pipe: the
 * operating system refuses a command line of a few hundred kilobytes ("Argument list too long").
 */
export async function readQuestion(
  context: CommandContext,
  argument: string | undefined,
  file: string | undefined,
): Promise<string> {
  if (argument !== undefined && file !== undefined) {
    throw new CliUsageError(
      "give the question either as an argument or with --file, not both",
      'e.g. lexground query --file question.txt --kb kb.json, or lexground query "refund window" --kb kb.json',
    );
  }
  const stdin = context.io.stdin;
  let text: string;
  if (file !== undefined && file !== "-") {
    let handle: Awaited<ReturnType<typeof open>>;
    try {
      handle = await open(resolve(context.io.cwd, file), "r");
    } catch {
      throw new CliUsageError(`${file}: question file not found`, "pass a text file holding the question");
    }
    try {
      text = await readBoundedStream(handle.createReadStream({ autoClose: false }), file);
    } finally {
      await handle.close();
    }
  } else if (file === "-" || argument === "-" || (argument === undefined && stdin && stdin.isTTY !== true)) {
    if (!stdin) throw new CliUsageError("no standard input to read the question from");
    text = await readBoundedStream(stdin, "standard input");
  } else if (argument !== undefined) {
    text = argument;
  } else {
    throw new CliUsageError(
      "no question given",
      'pass it as an argument, with --file <path>, or on standard input: echo "refund window" | lexground query --kb kb.json',
    );
  }
  const question = text.trim();
  if (question === "") {
    throw new CliUsageError(
      "the question is empty",
      'pass it as an argument, with --file <path>, or on standard input: echo "refund window" | lexground query --kb kb.json',
    );
  }
  return question;
}

/** Longest part of a question shown in a header; the rest is elided with its length. */
export const QUESTION_SHOWN_CHARS = 200;

/**
 * The question as a header shows it: quoted, and for a long one its first {@link QUESTION_SHOWN_CHARS} characters,
 * an ellipsis and the length (and how much of it is searched).
 */
export function showQuestion(question: string): string {
  if (question.length <= QUESTION_SHOWN_CHARS) return JSON.stringify(question);
  let end = QUESTION_SHOWN_CHARS;
  // Never cut a surrogate pair in half.
  const last = question.charCodeAt(end - 1);
  if (last >= 0xd800 && last <= 0xdbff) end -= 1;
  const searched = question.length > MAX_QUERY_CHARS ? `; the first ${MAX_QUERY_CHARS} are searched` : "";
  return `${JSON.stringify(question.slice(0, end))}… (${question.length} characters${searched})`;
}
