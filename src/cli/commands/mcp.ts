/**
 * `lexground mcp`: serves a knowledge base over the Model Context Protocol on stdio with two read-only tools,
 * `search_knowledge` and `get_entry`, and the entries as resources (`lexground://entries/<id>`). Every one of them
 * sees only what the server's scope allows: active entries, in the server's integrations, outside its blocked
 * domains. The MCP SDK (an optional peer dependency, several megabytes) and zod are imported here only, when the
 * command runs. With `--backend postgres://…` it serves the shared index of a fleet instead (see `mcpKnowledge.ts`).
 */
import type { Readable, Writable } from "node:stream";
import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { importPeerDependency, PEER_DEPENDENCY_RANGES } from "../../peerDependency.js";
import { CliUsageError } from "../errors.js";
import { type CommandContext, parseList } from "../io.js";
import type { RetrievalFlags } from "../main.js";
import { packageVersion } from "../packageVersion.js";
import { type PreparedKnowledgeBase, parseCount, prepareFromFlags } from "../session.js";
import {
  backendMcpKnowledge,
  type McpKnowledge,
  McpKnowledgeError,
  preparedMcpKnowledge,
} from "./mcpKnowledge.js";
import {
  ENTRY_RESOURCE_PREFIX,
  entryIdOfResourceUri,
  entryResourceUri,
  type KnowledgeMcpOptions,
  listEntries,
  MCP_MAX_ID_LENGTH,
  MCP_MAX_LIMIT,
  renderEntryDocument,
} from "./mcpTools.js";

/** The tools' logic and shapes, exported from here as well (where callers import them). */
export * from "./mcpKnowledge.js";
export * from "./mcpTools.js";

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

/** What a tool answers when the knowledge could not be read (the shared index unreachable): an error result. */
function failedCall(error: unknown) {
  if (!(error instanceof McpKnowledgeError)) throw error;
  return { content: [{ type: "text" as const, text: error.message }], isError: true };
}

/**
 * Creates the MCP server (not yet connected to a transport) for a prepared knowledge base, or for any
 * {@link McpKnowledge} (the shared index of `--backend`: `backendMcpKnowledge`).
 */
export async function createKnowledgeMcpServer(
  source: PreparedKnowledgeBase | McpKnowledge,
  options: KnowledgeMcpOptions = {},
): Promise<McpServer> {
  const knowledge = "search" in source ? source : preparedMcpKnowledge(source);
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
      let result: Awaited<ReturnType<McpKnowledge["search"]>>;
      try {
        result = await knowledge.search(query, {
          ...options,
          ...(integrations !== undefined
            ? { integrations: knowledge.narrowIntegrations(options, integrations), allIntegrations: false }
            : {}),
          ...(limit !== undefined ? { defaultLimit: limit } : {}),
        });
      } catch (error) {
        return failedCall(error);
      }
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
      let document: Awaited<ReturnType<McpKnowledge["getEntry"]>>;
      try {
        document = await knowledge.getEntry(id, options);
      } catch (error) {
        return failedCall(error);
      }
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
      // Not listed when the knowledge does not list its entries (a shared index); each still reads by its URI.
      list:
        knowledge.listEntries === undefined
          ? undefined
          : async () => ({
              resources: (await knowledge.listEntries!(options)).map((entry) => ({
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
    async (uri) => {
      const id = entryIdOfResourceUri(uri.href);
      let document: Awaited<ReturnType<McpKnowledge["getEntry"]>> = null;
      try {
        document = id === undefined ? null : await knowledge.getEntry(id, options);
      } catch (error) {
        if (error instanceof McpKnowledgeError) throw new McpError(ErrorCode.InternalError, error.message);
        throw error;
      }
      if (!document) throw new McpError(ErrorCode.InvalidParams, `Resource ${uri.href} not found`);
      return {
        contents: [{ uri: uri.href, mimeType: "text/markdown", text: renderEntryDocument(document) }],
      };
    },
  );
  return server;
}

export type McpFlags = RetrievalFlags & { limit?: string; backend?: string; backendSchema?: string };

/** The knowledge `runMcp` serves, what it says about it on stderr, and how to release it. */
type ServedKnowledge = { knowledge: McpKnowledge; description: string; close(): Promise<void> };

async function servedKnowledge(
  context: CommandContext,
  flags: McpFlags,
  serverOptions: KnowledgeMcpOptions,
): Promise<ServedKnowledge> {
  if (flags.backend !== undefined) {
    const { openServingBackend } = await import("./backend.js");
    const { backend, config } = await openServingBackend(context, { ...flags, backend: flags.backend });
    const status = backend.status();
    return {
      knowledge: backendMcpKnowledge(backend, config),
      description: `the PostgreSQL index (generation ${status.generation}, ${status.entryCount} entries; resources are read by URI, not listed)`,
      close: () => backend.close(),
    };
  }
  const prepared = await prepareFromFlags(context, flags);
  const { manifest } = prepared.knowledgeBase;
  const active = prepared.entries.filter((entry) => entry.status === "active").length;
  const readable = listEntries(prepared, serverOptions).length;
  return {
    knowledge: preparedMcpKnowledge(prepared),
    description: `${prepared.entries.length} entries (${active} active, ${readable} in scope, content version ${manifest.contentVersion})`,
    close: async () => {},
  };
}

export async function runMcp(context: CommandContext, flags: McpFlags): Promise<number> {
  const defaultLimit = parseCount(flags.limit, "--limit");
  if (defaultLimit !== undefined && defaultLimit > MCP_MAX_LIMIT) {
    throw new CliUsageError(`--limit must be at most ${MCP_MAX_LIMIT}`);
  }
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
  const served = await servedKnowledge(context, flags, serverOptions);
  try {
    const stdio = await importPeerDependency(
      MCP_SDK,
      () => import("@modelcontextprotocol/sdk/server/stdio.js"),
    );
    const server = await createKnowledgeMcpServer(served.knowledge, serverOptions);
    const stdin: Readable = context.io.stdin ?? process.stdin;
    // Everything but protocol messages goes to stderr: stdout is the transport.
    const transport = new stdio.StdioServerTransport(stdin, context.io.stdout as unknown as Writable);
    const closed = new Promise<void>((resolve) => {
      transport.onclose = resolve;
    });
    await server.connect(transport);
    context.io.stderr.write(
      `lexground mcp: serving ${served.description} on stdio; tools: search_knowledge, get_entry; resources: ${ENTRY_RESOURCE_PREFIX}<id>\n`,
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
  } finally {
    await served.close();
  }
}
