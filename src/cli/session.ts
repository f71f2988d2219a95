/**
 * What `query`, `ask` and `mcp` share: load a knowledge base (with a progress line on a terminal), read the
 * optional configuration file, validate, build the index once, and run one turn's retrieval with everything the
 * engine knows about it (scores per field, boosts, matched phrases, expansion, context, timings).
 *
 * @module
 */
import { readFile } from "node:fs/promises";
import { resolve } from "node:path";
import { performance } from "node:perf_hooks";
import { CONTENT_WARNING_CODES } from "../files/fileText.js";
import { locateIssues, notesToIssues } from "../files/issues.js";
import type { LoadedKnowledgeBase } from "../files/types.js";
import {
  buildIndexSnapshot,
  buildKnowledgeIndexCacheKey,
  deserializeIndexSnapshot,
  isKnowledgePresetName,
  KNOWLEDGE_PRESET_NAMES,
  KnowledgeArtifactError,
  type KnowledgeIndexArtifactHeader,
  loadIndexArtifact,
  resolveGroundingConfiguration,
} from "../index.js";
import { resolveArtifactIndexOptions } from "../knowledge/indexCache.js";
import { normalizeSources } from "../knowledge/resolve.js";
import type {
  KnowledgeContextConfig,
  KnowledgeIndexSnapshot,
  KnowledgePresetName,
  KnowledgeResolvedRetrieval,
  KnowledgeValidationIssue,
  NormalizedKnowledgeEntry,
} from "../types/knowledge.js";
import { type CliGroundingConfig, readConfigFile } from "./config.js";
import { CliFailure, CliUsageError, KnowledgeBaseInvalidError } from "./errors.js";
import { type CommandContext, createProgress } from "./io.js";
import { formatIssue } from "./report.js";

export type { CliGroundingConfig } from "./config.js";

import { artifactPopulation, setPopulation } from "./population.js";

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
    // Imported here: the file loader brings the YAML parser (tens of milliseconds at a cold start), which a
    // knowledge base given as an index artifact never needs.
    const { readKnowledgeBase } = await import("../files/compile.js");
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
  // The artifact lists its integrations in its header (written since they were added there): a query's hint and
  // --all-integrations then decode no entry. Older artifacts: collected from the entries on first use.
  let integrations: string[] | undefined = integrationNamesOf(header);
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
  if (population) setPopulation(prepared as PreparedKnowledgeBase, population);
  return prepared as PreparedKnowledgeBase;
}

/** The header's list of integration names when it has a well-formed one. */
function integrationNamesOf(header: KnowledgeIndexArtifactHeader): string[] | undefined {
  const names: unknown = header.integrationNames;
  return Array.isArray(names) && names.every((name) => typeof name === "string") ? [...names] : undefined;
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
