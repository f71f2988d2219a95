/**
 * `lexground mcp` over the PostgreSQL backend (`--backend`): its tools and resources answer what they answer over
 * the same knowledge base in memory (search results, entries, scope, not-found alike), resources are read by URI
 * but not listed, a search the index cannot answer is an error result, and the command serves over stdio.
 */
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { afterEach, expect, it } from "vitest";
import {
  backendMcpKnowledge,
  createKnowledgeMcpServer,
  type KnowledgeMcpOptions,
  type McpKnowledge,
} from "../../src/cli/commands/mcp.js";
import { type PreparedKnowledgeBase, prepareKnowledgeBase } from "../../src/cli/session.js";
import { readKnowledgeBase } from "../../src/files/compile.js";
import { KnowledgeGroundingEngine } from "../../src/index.js";
import type { PostgresBackend } from "../../src/postgres/index.js";
import { fixtures, run } from "../cli/helpers.js";
import { callMcpOverStdio, connectInMemory } from "../support/mcpClients.js";
import { startPostgresSuite } from "../support/postgresSuite.js";

const suite = await startPostgresSuite("MCP over the PostgreSQL backend tests");
const { url, describePostgres } = suite;

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

async function connect(source: PreparedKnowledgeBase | McpKnowledge, options: KnowledgeMcpOptions) {
  const server = await createKnowledgeMcpServer(source, { version: "1.0.0", ...options });
  const { client, close } = await connectInMemory(server);
  closers.push(close);
  return client;
}

/** Reads and publishes a knowledge base in `schema`; returns it prepared in memory and the backend. */
async function published(kb: string, cwd: string, schema: string) {
  const knowledgeBase = await readKnowledgeBase(kb, { cwd });
  const prepared = prepareKnowledgeBase(knowledgeBase, {});
  const backend = suite.backend({ schema });
  const writer = new KnowledgeGroundingEngine({
    enabled: true,
    sources: knowledgeBase.sources,
    backend,
    timeoutMs: 60_000,
    logger: null,
  });
  await writer.ready();
  expect(writer.getStatus()).toMatchObject({ ready: true, entryCount: prepared.entries.length });
  return { prepared, backend };
}

/** Queries that reach every entry: each title, its first alias, a word of its summary, and one that matches nothing. */
function queriesOf(prepared: PreparedKnowledgeBase): string[] {
  const queries = new Set<string>(["zebra quantum nothing-matches-this"]);
  for (const entry of prepared.entries) {
    queries.add(entry.title);
    if (entry.aliases[0]) queries.add(entry.aliases[0]);
    queries.add(entry.summary.split(/\s+/).slice(0, 3).join(" "));
  }
  return [...queries];
}

/** A tool call's answer, comparable across servers. */
async function call(client: Client, name: string, args: Record<string, unknown>) {
  const result = await client.callTool({ name, arguments: args });
  return { isError: result.isError ?? false, content: result.content, structured: result.structuredContent };
}

async function readResource(client: Client, id: string) {
  try {
    return await client.readResource({ uri: `lexground://entries/${encodeURIComponent(id)}` });
  } catch (error) {
    return { error: (error as Error).message };
  }
}

async function sameAnswers(
  prepared: PreparedKnowledgeBase,
  backend: PostgresBackend,
  options: KnowledgeMcpOptions,
) {
  const local = await connect(prepared, options);
  const shared = await connect(backendMcpKnowledge(backend, { timeoutMs: 60_000 }), options);
  const integrations = [undefined, prepared.integrations.slice(0, 1), ["not-an-integration"]];
  let compared = 0;
  // Each query with one of the limits and one of the call scopes, in turn (all nine pairs over the queries).
  for (const [index, query] of queriesOf(prepared).entries()) {
    const limit = [undefined, 1, 3][index % 3];
    const narrowed = integrations[Math.floor(index / 3) % 3];
    const args = {
      query,
      ...(limit !== undefined ? { limit } : {}),
      ...(narrowed !== undefined ? { integrations: narrowed } : {}),
    };
    const expected = await call(local, "search_knowledge", args);
    expect(expected.isError).toBe(false);
    expect(await call(shared, "search_knowledge", args), JSON.stringify(args)).toEqual(expected);
    compared++;
  }
  for (const id of [...prepared.entries.map((entry) => entry.id), "no.such-entry", ""]) {
    if (id !== "")
      expect(await call(shared, "get_entry", { id })).toEqual(await call(local, "get_entry", { id }));
    expect(await readResource(shared, id)).toEqual(await readResource(local, id));
  }
  return compared;
}

describePostgres("lexground mcp over the PostgreSQL backend", () => {
  it("search_knowledge, get_entry and entry resources answer as over the same knowledge base in memory", async () => {
    const examples = await published("examples/knowledge-base", process.cwd(), "mcp_examples");
    const fixture = await published("kb", fixtures, "mcp_fixture");
    const scoped = await published("scoped", fixtures, "mcp_scoped");
    let compared = 0;
    compared += await sameAnswers(examples.prepared, examples.backend, {});
    compared += await sameAnswers(examples.prepared, examples.backend, {
      integrations: examples.prepared.integrations,
    });
    compared += await sameAnswers(fixture.prepared, fixture.backend, { integrations: ["integration-a"] });
    compared += await sameAnswers(scoped.prepared, scoped.backend, {
      integrations: ["shopify"],
      blockedDomains: ["internal"],
      defaultLimit: 2,
    });
    // Expansion and scope were exercised: some answers carry expanded entries, some calls were narrowed to nothing.
    const withExpansion = await call(
      await connect(backendMcpKnowledge(examples.backend, {}), {}),
      "search_knowledge",
      { query: examples.prepared.entries.find((entry) => entry.relatedEntryIds.length > 0)!.title },
    );
    expect(
      (withExpansion.structured as { entries: { expandedFrom: string | null }[] }).entries.some(
        (entry) => entry.expandedFrom !== null,
      ),
    ).toBe(true);
    expect(compared).toBeGreaterThan(50);
  }, 120_000);

  it("lists no resources (a shared index may hold millions), and a search with nothing published is an error result", async () => {
    const { backend } = await published("kb", fixtures, "mcp_listing");
    const shared = await connect(backendMcpKnowledge(backend, {}), { integrations: ["integration-a"] });
    expect((await shared.listResources()).resources).toEqual([]);
    expect(
      (await shared.listResourceTemplates()).resourceTemplates.map((template) => template.uriTemplate),
    ).toEqual(["lexground://entries/{id}"]);

    const empty = await connect(backendMcpKnowledge(suite.backend({ schema: "mcp_nothing" }), {}), {});
    for (const [name, args] of [
      ["search_knowledge", { query: "instant payouts" }],
      ["get_entry", { id: "payouts.instant" }],
    ] as const) {
      const result = await call(empty, name, args);
      expect(result.isError).toBe(true);
      expect(JSON.stringify(result.content)).toMatch(/nothing is published in the shared index yet/);
    }
    expect(await readResource(empty, "payouts.instant")).toEqual({
      error: expect.stringMatching(/nothing is published in the shared index yet/),
    });
  }, 60_000);

  it("the CLI: mcp --backend serves over stdio what mcp --kb serves; --all-integrations is refused", async () => {
    const schema = ["--backend", url, "--backend-schema", "mcp_cli"];
    const refused = await run(["mcp", ...schema, "--all-integrations"]);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toMatch(/--all-integrations needs the knowledge base's entries/);
    const nothing = await run(["mcp", ...schema]);
    expect(nothing.code).toBe(1);
    expect(nothing.stderr).toMatch(/nothing is published to PostgreSQL/);

    const serve = async (knowledge: string[]) => {
      const { answers, stderr, exitCode } = await callMcpOverStdio(
        ["mcp", ...knowledge, "--integrations", "integration-a"],
        fixtures,
        [
          { name: "search_knowledge", arguments: { query: "enable multi step flow" } },
          { name: "get_entry", arguments: { id: "settings.multi-step-flow" } },
        ],
      );
      expect(exitCode, stderr).toBe(0);
      return { answers: answers.filter((answer) => answer.id !== 1), stderr };
    };
    // With --kb the knowledge base is published first; then a reader (no --kb) serves what is published.
    const publishing = await serve(["--kb", "kb", ...schema]);
    const local = await serve(["--kb", "kb"]);
    const reader = await serve(schema);
    expect(local.answers).toHaveLength(2);
    expect(publishing.answers).toEqual(local.answers);
    expect(reader.answers).toEqual(local.answers);
    expect(reader.stderr).toMatch(
      /lexground mcp: serving the PostgreSQL index \(generation \d+, 6 entries; resources are read by URI, not listed\) on stdio/,
    );
  }, 90_000);
});
