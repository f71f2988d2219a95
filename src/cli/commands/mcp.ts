/**
 * `lexground mcp`: serves a knowledge base over the Model Context Protocol on stdio with two read-only tools,
 * `search_knowledge` and `get_entry`, and the entries as resources (`lexground://entries/<id>`). Every one of them
 * sees only what the server's scope allows: active entries, in the server's integrations, outside its blocked
 * domains. The MCP SDK (an optional peer dependency, several megabytes) and zod are imported here only, when the
 * command runs.
 */
import type { Readable, Writable } from "node:stream";
import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { citationMarker, isAuthorized } from "../../index.js";
import type { SearchKnowledgeToolEntry } from "../../integrations/aiSdkTool.js";
import { importPeerDependency, PEER_DEPENDENCY_RANGES } from "../../peerDependency.js";
import type { NormalizedKnowledgeEntry } from "../../types/knowledge.js";
import { CliUsageError } from "../errors.js";
import { type CommandContext, parseList } from "../io.js";
import type { RetrievalFlags } from "../main.js";
import { packageVersion } from "../packageVersion.js";
import { type PreparedKnowledgeBase, parseCount, prepareFromFlags } from "../session.js";
import { resolveScope, runTurn } from "../turn.js";

/** Most entries one `search_knowledge` call may ask for. */
export const MCP_MAX_LIMIT = 50;

/**
 * Server-side scope and defaults of the `search_knowledge` tool. The scope (integrations, blocked domains) is the
 * widest a call can get: a call's `integrations` can only narrow it (see {@link narrowIntegrations}).
 */
export type KnowledgeMcpOptions = {
  /** Integrations the server enables: all of them when a call names none, the most a call can enable. */
  integrations?: string[];
  /** Enable every integration of the knowledge base (the server's scope is then all of them). */
  allIntegrations?: boolean;
  /** Domains never returned, whatever a call asks. */
  blockedDomains?: string[];
  /** Entries returned when a call gives no limit. Default: the retrieval result limit (8). */
  defaultLimit?: number;
  /** Server version reported to clients. */
  version?: string;
};

/** One entry in a `search_knowledge` result: the same shape as the AI SDK tool's entries. */
export type SearchKnowledgeEntry = SearchKnowledgeToolEntry;

/** Structured result of `search_knowledge`. */
export type SearchKnowledgeResult = {
  query: string;
  confidence: "high" | "medium" | "low" | "none";
  entries: SearchKnowledgeEntry[];
  /** Citation markers of the entries included in `context`. */
  citations: string[];
  /** The rendered, citation-carrying block (empty when nothing matched). */
  context: string;
  candidateCount: number;
};

/** Longest id `get_entry` accepts (ids are short; this bounds the lookup key a client can send). */
export const MCP_MAX_ID_LENGTH = 512;

/** URI prefix of the entry resources: `lexground://entries/<percent-encoded id>`. */
export const ENTRY_RESOURCE_PREFIX = "lexground://entries/";

/** One entry as `get_entry` and the entry resources return it. */
export type KnowledgeEntryDocument = {
  id: string;
  title: string;
  summary: string;
  body: string;
  kind: string;
  domain: string;
  integrations: string[];
  aliases: string[];
  keywords: string[];
  /** Related entries the caller may also read (entries outside the server's scope are left out). */
  relatedEntryIds: string[];
  /** The parent entry, when the caller may read it; otherwise null. */
  parentEntryId: string | null;
  version: string;
  /** `[KB:<id>@<version>]`, to be quoted by the model. */
  citation: string;
};

const INSTRUCTIONS =
  "search_knowledge searches this host's reviewed knowledge base lexically (ids, titles, aliases, keywords, text); " +
  "get_entry returns one entry's full text by id (the entries are also resources, lexground://entries/<id>). " +
  "Cite facts with the [KB:id@version] markers they return. Confidence 'low' or 'none' means the answer is " +
  "probably not in the knowledge base.";

/** The MCP SDK, an optional peer dependency of lexground that only this command needs. */
const MCP_SDK = {
  packageName: "@modelcontextprotocol/sdk",
  versionRange: PEER_DEPENDENCY_RANGES["@modelcontextprotocol/sdk"],
  feature: "lexground mcp",
};

/** Creates the MCP server for a prepared knowledge base (not yet connected to a transport). */
export async function createKnowledgeMcpServer(
  prepared: PreparedKnowledgeBase,
  options: KnowledgeMcpOptions = {},
): Promise<McpServer> {
  const [{ McpServer: Server, ResourceTemplate }, { McpError, ErrorCode }, { z }] = await Promise.all([
    importPeerDependency(MCP_SDK, () => import("@modelcontextprotocol/sdk/server/mcp.js")),
    importPeerDependency(MCP_SDK, () => import("@modelcontextprotocol/sdk/types.js")),
    importPeerDependency(
      { packageName: "zod", versionRange: PEER_DEPENDENCY_RANGES.zod, feature: "lexground mcp" },
      () => import("zod"),
    ),
  ]);
  const server = new Server(
    { name: "lexground", version: options.version ?? "0.0.0" },
    { instructions: INSTRUCTIONS },
  );
  const entrySchema = z.object({
    id: z.string(),
    title: z.string(),
    summary: z.string(),
    kind: z.string(),
    domain: z.string(),
    version: z.string(),
    citation: z.string(),
    score: z.number().nullable(),
    expandedFrom: z.string().nullable(),
  });
  server.registerTool(
    "search_knowledge",
    {
      title: "Search the knowledge base",
      description:
        "Find reviewed knowledge entries (settings, procedures, policies, troubleshooting) relevant to a question. " +
        "Returns the best entries with [KB:id@version] citations, a confidence (high, medium, low, none) and a " +
        "ready-to-use context block.",
      inputSchema: {
        query: z.string().min(1).describe("the question or keywords to search for"),
        limit: z
          .number()
          .int()
          .min(1)
          .max(MCP_MAX_LIMIT)
          .optional()
          .describe(`how many primary entries to return (1-${MCP_MAX_LIMIT})`),
        integrations: z
          .array(z.string())
          .optional()
          .describe(
            "narrows the integrations enabled for this question to these (only those the server enables " +
              "count; others are ignored); entries bound to other integrations are excluded",
          ),
      },
      outputSchema: {
        query: z.string(),
        confidence: z.enum(["high", "medium", "low", "none"]),
        entries: z.array(entrySchema),
        citations: z.array(z.string()),
        context: z.string(),
        candidateCount: z.number(),
      },
      annotations: { readOnlyHint: true, idempotentHint: true, openWorldHint: false },
    },
    async ({ query, limit, integrations }) => {
      const result = searchKnowledge(prepared, query, {
        ...options,
        ...(integrations !== undefined
          ? { integrations: narrowIntegrations(prepared, options, integrations), allIntegrations: false }
          : {}),
        ...(limit !== undefined ? { defaultLimit: limit } : {}),
      });
      const text =
        result.context || `No knowledge entry matched ${JSON.stringify(query)} (confidence: none).`;
      return { content: [{ type: "text" as const, text }], structuredContent: result };
    },
  );
  server.registerTool(
    "get_entry",
    {
      title: "Read one knowledge entry",
      description:
        "Return one reviewed knowledge entry by id (as cited in [KB:id@version] or returned by search_knowledge): " +
        "its full text, related entries and citation.",
      inputSchema: {
        id: z.string().min(1).max(MCP_MAX_ID_LENGTH).describe("the entry id, e.g. billing.refund-window"),
      },
      outputSchema: {
        id: z.string(),
        title: z.string(),
        summary: z.string(),
        body: z.string(),
        kind: z.string(),
        domain: z.string(),
        integrations: z.array(z.string()),
        aliases: z.array(z.string()),
        keywords: z.array(z.string()),
        relatedEntryIds: z.array(z.string()),
        parentEntryId: z.string().nullable(),
        version: z.string(),
        citation: z.string(),
      },
      annotations: { readOnlyHint: true, idempotentHint: true, openWorldHint: false },
    },
    async ({ id }) => {
      const document = getEntry(prepared, id, options);
      if (!document) {
        // The same answer for an unknown id and an entry outside the scope: a client learns nothing it may not read.
        return {
          content: [{ type: "text" as const, text: `No knowledge entry with id ${JSON.stringify(id)}.` }],
          isError: true,
        };
      }
      return {
        content: [{ type: "text" as const, text: renderEntryDocument(document) }],
        structuredContent: document,
      };
    },
  );
  server.registerResource(
    "entry",
    new ResourceTemplate(`${ENTRY_RESOURCE_PREFIX}{id}`, {
      list: () => ({
        resources: listEntries(prepared, options).map((entry) => ({
          uri: entryResourceUri(entry.id),
          name: entry.id,
          title: entry.title,
          description: entry.summary,
          mimeType: "text/markdown",
        })),
      }),
    }),
    {
      title: "Knowledge entry",
      description: "One reviewed knowledge entry: title, summary, body and its [KB:id@version] citation.",
      mimeType: "text/markdown",
    },
    (uri) => {
      const id = entryIdOfResourceUri(uri.href);
      const document = id === undefined ? null : getEntry(prepared, id, options);
      if (!document) throw new McpError(ErrorCode.InvalidParams, `Resource ${uri.href} not found`);
      return {
        contents: [{ uri: uri.href, mimeType: "text/markdown", text: renderEntryDocument(document) }],
      };
    },
  );
  return server;
}

/** The resource URI of an entry. */
export function entryResourceUri(id: string): string {
  return `${ENTRY_RESOURCE_PREFIX}${encodeURIComponent(id)}`;
}

/** The entry id of a resource URI, or undefined when the URI is not an entry resource. */
export function entryIdOfResourceUri(uri: string): string | undefined {
  if (!uri.startsWith(ENTRY_RESOURCE_PREFIX)) return undefined;
  try {
    return decodeURIComponent(uri.slice(ENTRY_RESOURCE_PREFIX.length));
  } catch {
    return undefined;
  }
}

/** The scope every tool call and resource read of the server runs in (before a call narrows it). */
function serverScope(
  prepared: PreparedKnowledgeBase,
  options: KnowledgeMcpOptions,
): { enabledIntegrations: string[]; blockedDomains: string[] } {
  return resolveScope(prepared, {
    ...(options.integrations !== undefined ? { integrations: options.integrations } : {}),
    ...(options.allIntegrations ? { allIntegrations: true } : {}),
    ...(options.blockedDomains !== undefined ? { blockedDomains: options.blockedDomains } : {}),
  });
}

/** The entries a client of the server may read, in knowledge-base order (the resource list). */
export function listEntries(
  prepared: PreparedKnowledgeBase,
  options: KnowledgeMcpOptions = {},
): NormalizedKnowledgeEntry[] {
  const { enabledIntegrations, blockedDomains } = serverScope(prepared, options);
  return prepared.entries.filter((entry) => isAuthorized(entry, enabledIntegrations, blockedDomains));
}

/**
 * Runs `get_entry` without a server: the entry with this id when a search in the server's scope could return it
 * (active, in the server's integrations, outside its blocked domains), otherwise null, whether the id is unknown
 * or out of scope.
 */
export function getEntry(
  prepared: PreparedKnowledgeBase,
  id: string,
  options: KnowledgeMcpOptions = {},
): KnowledgeEntryDocument | null {
  const { enabledIntegrations, blockedDomains } = serverScope(prepared, options);
  const readable = (entryId: string | undefined): boolean => {
    if (entryId === undefined) return false;
    const entry = prepared.snapshot.entriesById.get(entryId);
    return entry !== undefined && isAuthorized(entry, enabledIntegrations, blockedDomains);
  };
  if (!readable(id)) return null;
  const entry = prepared.snapshot.entriesById.get(id)!;
  return {
    id: entry.id,
    title: entry.title,
    summary: entry.summary,
    body: entry.body,
    kind: entry.kind,
    domain: entry.domain,
    integrations: [...entry.integrations],
    aliases: [...entry.aliases],
    keywords: [...entry.keywords],
    relatedEntryIds: entry.relatedEntryIds.filter((related) => readable(related)),
    parentEntryId: readable(entry.parentEntryId) ? entry.parentEntryId! : null,
    version: entry.version,
    citation: citationMarker(entry.id, entry.version),
  };
}

/** An entry as Markdown: what `get_entry` and a resource read give a model to read. */
export function renderEntryDocument(document: KnowledgeEntryDocument): string {
  const lines = [`# ${document.title}`, "", `${document.citation} · ${document.kind} · ${document.domain}`];
  if (document.integrations.length > 0) lines.push(`Integrations: ${document.integrations.join(", ")}`);
  lines.push("", document.summary);
  if (document.body !== "") lines.push("", document.body);
  const related = [
    ...(document.parentEntryId !== null ? [`parent ${document.parentEntryId}`] : []),
    ...document.relatedEntryIds,
  ];
  if (related.length > 0) lines.push("", `Related: ${related.join(", ")}`);
  return `${lines.join("\n")}\n`;
}

/**
 * The integrations a call that names `requested` runs with: those of `requested` that the server's scope enables
 * (`options.integrations`, or every integration of the knowledge base with `options.allIntegrations`), compared
 * case-insensitively as retrieval does. A call can narrow the server's scope, never widen it: a server started
 * without integrations gives every call integration-free entries only, and a requested integration outside the
 * scope is dropped (so a call naming only such integrations gets integration-free entries only).
 */
export function narrowIntegrations(
  prepared: PreparedKnowledgeBase,
  options: Pick<KnowledgeMcpOptions, "integrations" | "allIntegrations">,
  requested: readonly string[],
): string[] {
  const serverScope = options.allIntegrations ? prepared.integrations : (options.integrations ?? []);
  const enabled = new Set(serverScope.map((integration) => integration.toLowerCase()));
  return requested.filter((integration) => enabled.has(integration.toLowerCase()));
}

/** Runs `search_knowledge` without a server (the tool handler's logic). */
export function searchKnowledge(
  prepared: PreparedKnowledgeBase,
  query: string,
  options: KnowledgeMcpOptions = {},
): SearchKnowledgeResult {
  const report = runTurn(prepared, query, {
    ...(options.integrations !== undefined ? { integrations: options.integrations } : {}),
    ...(options.allIntegrations ? { allIntegrations: true } : {}),
    ...(options.blockedDomains !== undefined ? { blockedDomains: options.blockedDomains } : {}),
    ...(options.defaultLimit !== undefined ? { resultLimit: options.defaultLimit } : {}),
  });
  const scores = new Map(report.candidates.map((candidate) => [candidate.id, candidate.score]));
  const describe = (id: string, expandedFrom: string | null): SearchKnowledgeEntry => {
    const entry = prepared.snapshot.entriesById.get(id)!;
    return {
      id,
      title: entry.title,
      summary: entry.summary,
      kind: entry.kind,
      domain: entry.domain,
      version: entry.version,
      citation: citationMarker(id, entry.version),
      score: expandedFrom === null ? (scores.get(id) ?? null) : null,
      expandedFrom,
    };
  };
  return {
    query,
    confidence: report.confidence,
    entries: [
      ...report.primary.map((entry) => describe(entry.id, null)),
      ...report.expanded.map((entry) => describe(entry.id, entry.via ?? "")),
    ],
    citations: report.context.citations.map((citation) => citationMarker(citation.id, citation.version)),
    context: report.context.text,
    candidateCount: report.candidateCount,
  };
}

export type McpFlags = RetrievalFlags & { limit?: string };

export async function runMcp(context: CommandContext, flags: McpFlags): Promise<number> {
  const defaultLimit = parseCount(flags.limit, "--limit");
  if (defaultLimit !== undefined && defaultLimit > MCP_MAX_LIMIT) {
    throw new CliUsageError(`--limit must be at most ${MCP_MAX_LIMIT}`);
  }
  const prepared = await prepareFromFlags(context, flags);
  const stdio = await importPeerDependency(
    MCP_SDK,
    () => import("@modelcontextprotocol/sdk/server/stdio.js"),
  );
  const version = packageVersion();
  const integrations = parseList(flags.integrations);
  const blockedDomains = parseList(flags.blockedDomains);
  const serverOptions: KnowledgeMcpOptions = {
    ...(integrations !== undefined ? { integrations } : {}),
    ...(flags.allIntegrations ? { allIntegrations: true } : {}),
    ...(blockedDomains !== undefined ? { blockedDomains } : {}),
    ...(defaultLimit !== undefined ? { defaultLimit } : {}),
    version,
  };
  const server = await createKnowledgeMcpServer(prepared, serverOptions);
  const stdin: Readable = context.io.stdin ?? process.stdin;
  // Everything but protocol messages goes to stderr: stdout is the transport.
  const transport = new stdio.StdioServerTransport(stdin, context.io.stdout as unknown as Writable);
  const closed = new Promise<void>((resolve) => {
    transport.onclose = resolve;
  });
  await server.connect(transport);
  const { manifest } = prepared.knowledgeBase;
  const active = prepared.entries.filter((entry) => entry.status === "active").length;
  const readable = listEntries(prepared, serverOptions).length;
  context.io.stderr.write(
    `lexground mcp: serving ${prepared.entries.length} entries (${active} active, ${readable} in scope, content version ${manifest.contentVersion}) on stdio; tools: search_knowledge, get_entry; resources: ${ENTRY_RESOURCE_PREFIX}<id>\n`,
  );
  const endOfInput = () => {
    void server.close();
  };
  stdin.once("end", endOfInput);
  stdin.once("close", endOfInput);
  await closed;
  stdin.off("end", endOfInput);
  stdin.off("close", endOfInput);
  return 0;
}
