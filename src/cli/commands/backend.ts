/**
 * `--backend postgres://…` for `build` (publish the knowledge base as a new generation, or reuse the serving one
 * when it holds the same content), `query` (one turn through an engine over the shared index: with `--kb` it
 * publishes that knowledge base first, without it serves what is published) and `ask` (an answer grounded in the
 * shared index, the same way). `lexground/postgres` (and so `pg`)
 * is imported only here, only when the flag is given.
 */
import { KnowledgeGroundingEngine, type KnowledgeSource } from "../../index.js";
import { MissingPeerDependencyError } from "../../peerDependency.js";
import { readConfigFile } from "../config.js";
import { CliFailure, CliUsageError } from "../errors.js";
import { type CommandContext, parseList, println } from "../io.js";
import type { RetrievalFlags } from "../main.js";
import { knowledgeBasePath, openKnowledgeBase, parsePreset } from "../session.js";
import type { AskFlags, AskGrounding } from "./ask.js";

/** Opens the backend named by `--backend` (a `postgres://` or `postgresql://` URL). */
async function openBackend(url: string, schema: string | undefined) {
  if (!/^postgres(ql)?:\/\//.test(url)) {
    throw new CliUsageError(
      `--backend must be a PostgreSQL URL, got ${JSON.stringify(url)}`,
      "for example --backend postgres://user@localhost:5432/app",
    );
  }
  const { createPostgresBackend } = await import("../../postgres/index.js");
  const backend = createPostgresBackend({
    connectionString: url,
    ...(schema !== undefined ? { schema } : {}),
    statementTimeoutMs: 30_000,
    connectionTimeoutMs: 10_000,
  });
  try {
    await backend.connect();
  } catch (error) {
    await backend.close();
    if (MissingPeerDependencyError.isInstance(error)) throw new CliFailure(error.message);
    throw new CliFailure(
      `cannot use the PostgreSQL backend: ${error instanceof Error ? error.message : String(error)}`,
    );
  }
  return backend;
}

/**
 * Publishes sources through an engine (validation, content key, publication) and reports the generation. Returns
 * the engine and the backend (the caller closes the backend).
 */
async function publish(
  url: string,
  schema: string | undefined,
  sources: KnowledgeSource[] | [],
  config: Record<string, unknown>,
) {
  const backend = await openBackend(url, schema);
  const engine = new KnowledgeGroundingEngine({
    ...config,
    enabled: true,
    sources: sources as KnowledgeSource[],
    backend,
    timeoutMs: 60_000,
    logger: null,
  });
  await engine.ready();
  return { backend, engine };
}

/** `build … --backend <url>`: publishes the manifest's sources; prints the generation. */
export async function publishManifest(
  context: CommandContext,
  url: string,
  schema: string | undefined,
  sources: KnowledgeSource[],
  preset: string | undefined,
): Promise<{ generation: number | null; reused: boolean; entryCount: number }> {
  const { backend, engine } = await publish(url, schema, sources, { preset: parsePreset(preset) });
  try {
    const status = engine.getStatus();
    if (!status.ready || status.lastError) {
      throw new CliFailure(`publishing to PostgreSQL failed: ${status.lastError ?? "nothing is serving"}`);
    }
    const reused = (status.notes ?? []).some((note) => note.includes("reused"));
    const generation = status.backend?.generation ?? null;
    context.io.stderr.write(
      `${context.err.green("✔")} ${reused ? "already published" : "published"} to PostgreSQL: generation ${generation}, ${status.entryCount} entries\n`,
    );
    return { generation, reused, entryCount: status.entryCount };
  } finally {
    await backend.close();
  }
}

export type BackendQueryFlags = RetrievalFlags & { backend: string; backendSchema?: string; limit?: string };

/** `query … --backend <url>`: one turn through the shared index. */
export async function runBackendQuery(
  context: CommandContext,
  question: string,
  flags: BackendQueryFlags,
): Promise<number> {
  const fileConfig = flags.config ? await readConfigFile(context, flags.config) : {};
  const preset = parsePreset(flags.preset);
  const config = { ...fileConfig, ...(preset !== undefined ? { preset } : {}) } as Record<string, unknown>;
  let sources: KnowledgeSource[] = [];
  if (flags.kb !== undefined || context.io.env.LEXGROUND_KB) {
    const path = knowledgeBasePath(context, flags.kb);
    sources = (await openKnowledgeBase(context, path, { requireManifestJson: true })).sources;
  }
  const { backend, engine } = await publish(flags.backend, flags.backendSchema, sources, config);
  try {
    const outcome = await engine.ground({
      query: question,
      scope: { enabledIntegrations: parseList(flags.integrations) ?? [] },
    });
    const status = engine.getStatus();
    const report = {
      query: question,
      backend: status.backend,
      confidence: outcome.metadata.confidence ?? "none",
      selectedIds: outcome.metadata.selectedIds,
      expandedIds: outcome.metadata.expandedIds,
      candidates: (outcome.retrieval?.candidates ?? []).map((candidate) => ({
        id: candidate.id,
        score: candidate.score,
        exact: candidate.exact,
        alias: candidate.alias,
        fieldScores: candidate.fieldScores,
      })),
      context: outcome.ephemeralContext?.content ?? "",
      durationMs: outcome.metadata.durationMs,
      ...(outcome.metadata.failureReason ? { failureReason: outcome.metadata.failureReason } : {}),
    };
    if (flags.json) {
      println(context, JSON.stringify(report, null, 2));
    } else {
      println(context, `Query      ${question}`);
      println(
        context,
        `Backend    postgres generation ${report.backend?.generation ?? "none"} (${status.entryCount} entries)`,
      );
      if (report.failureReason) println(context, `Failed     ${report.failureReason}`);
      println(
        context,
        `Confidence ${report.confidence} · ${report.selectedIds.length} selected · ${report.expandedIds.length} expanded · ${report.durationMs.toFixed(1)} ms`,
      );
      report.candidates.forEach((candidate, index) => {
        println(
          context,
          `${String(index + 1).padStart(3)}. ${candidate.id}  ${candidate.score.toFixed(2)}${report.selectedIds.includes(candidate.id) ? "  selected" : ""}`,
        );
      });
      if (report.context) println(context, `\n${report.context}`);
    }
    return report.failureReason && report.failureReason !== "index-not-ready" ? 1 : 0;
  } finally {
    await backend.close();
  }
}

/** The flags a command serving the shared index takes (`ask`, `mcp`). */
export type ServingBackendFlags = RetrievalFlags & { backend: string; backendSchema?: string };

/**
 * Opens the shared index for a command that serves it: the configuration of `--config`, `--preset` and
 * `--blocked-domains`; with `--kb` (or `LEXGROUND_KB`) the knowledge base is published first (or its publication
 * reused), else what is published serves. Refuses `--all-integrations` (the integrations are the entries', which
 * are not read here) and a schema with nothing published. The caller closes the backend.
 */
export async function openServingBackend(context: CommandContext, flags: ServingBackendFlags) {
  if (flags.allIntegrations) {
    throw new CliUsageError(
      "--all-integrations needs the knowledge base's entries, which --backend does not read",
      "name the integrations with --integrations a,b",
    );
  }
  const fileConfig = flags.config ? await readConfigFile(context, flags.config) : {};
  const preset = parsePreset(flags.preset);
  const blockedDomains = parseList(flags.blockedDomains) ?? fileConfig.blockedDomains;
  const config = {
    ...fileConfig,
    ...(preset !== undefined ? { preset } : {}),
    ...(blockedDomains !== undefined ? { blockedDomains } : {}),
  } as Record<string, unknown>;
  let sources: KnowledgeSource[] = [];
  if (flags.kb !== undefined || context.io.env.LEXGROUND_KB) {
    const path = knowledgeBasePath(context, flags.kb);
    sources = (await openKnowledgeBase(context, path, { requireManifestJson: true })).sources;
  }
  const { backend, engine } = await publish(flags.backend, flags.backendSchema, sources, config);
  if (!engine.getStatus().ready) {
    await backend.close();
    throw new CliFailure(
      "nothing is published to PostgreSQL in this schema",
      "publish a knowledge base first: lexground build <kb> --backend <url>, or pass --kb",
    );
  }
  return { backend, engine, config };
}

/**
 * `ask … --backend <url>`: the answer's knowledge from the shared index. With `--kb` the knowledge base is
 * published first (or its publication reused); the offline answer is one engine turn, and the model's answer goes
 * through a client over the same backend with no sources (a fleet replica's configuration).
 */
export async function backendGrounding(
  context: CommandContext,
  flags: AskFlags & { backend: string },
): Promise<AskGrounding> {
  const { backend, engine, config } = await openServingBackend(context, flags);
  const enabledIntegrations = parseList(flags.integrations) ?? [];
  const turn = async (question: string) => {
    const outcome = await engine.ground({ query: question, scope: { enabledIntegrations } });
    if (outcome.metadata.failureReason && outcome.metadata.failureReason !== "index-not-ready") {
      throw new CliFailure(`grounding in PostgreSQL failed: ${outcome.metadata.failureReason}`);
    }
    return outcome;
  };
  return {
    async offlineTurn(question) {
      const outcome = await turn(question);
      const entries = new Map((outcome.retrieval?.entries ?? []).map((entry) => [entry.id, entry]));
      const describe = (id: string) => {
        const entry = entries.get(id);
        return {
          id,
          title: entry?.title ?? "",
          summary: entry?.summary ?? "",
          version: entry?.version ?? "",
        };
      };
      return {
        confidence: outcome.metadata.confidence ?? "none",
        primary: outcome.metadata.selectedIds.map(describe),
        expanded: outcome.metadata.expandedIds.map((id) => ({ id })),
        candidates: (outcome.retrieval?.candidates ?? []).map(({ id, score }) => ({ id, score })),
        context: { citations: outcome.retrieval?.citations ?? [] },
      };
    },
    knowledgeGrounding: { timeoutMs: 60_000, ...config, sources: [], backend },
    enabledIntegrations,
    // The client's turn names only ids: the same turn on this engine (the same generation, its lists cached by
    // the shared backend) tells their versions and titles.
    async describer(question) {
      const entries = new Map(
        ((await turn(question)).retrieval?.entries ?? []).map((entry) => [entry.id, entry]),
      );
      return (id) => ({ version: entries.get(id)?.version ?? "", title: entries.get(id)?.title ?? "" });
    },
    close: () => backend.close(),
  };
}
