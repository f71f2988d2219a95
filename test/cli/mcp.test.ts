import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { afterEach, describe, expect, it } from "vitest";
import {
  createKnowledgeMcpServer,
  entryIdOfResourceUri,
  entryResourceUri,
  getEntry,
  type KnowledgeEntryDocument,
  renderEntryDocument,
  type SearchKnowledgeResult,
} from "../../src/cli/commands/mcp.js";
import { prepareKnowledgeBase } from "../../src/cli/session.js";
import { readKnowledgeBase } from "../../src/files/compile.js";
import { callMcpOverStdio, connectInMemory } from "../support/mcpClients.js";
import { fixtures, run } from "./helpers.js";

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

async function connect(options: Parameters<typeof createKnowledgeMcpServer>[1] = {}, kb = "kb") {
  const knowledgeBase = await readKnowledgeBase(kb, { cwd: fixtures });
  const prepared = prepareKnowledgeBase(knowledgeBase, {});
  const server = await createKnowledgeMcpServer(prepared, { version: "9.9.9", ...options });
  const { client, close } = await connectInMemory(server);
  closers.push(close);
  return { client, version: knowledgeBase.manifest.contentVersion };
}

describe("lexground mcp: search_knowledge", () => {
  it("lists one read-only tool with query, limit and integrations", async () => {
    const { client } = await connect();
    expect(client.getServerVersion()).toEqual({ name: "lexground", version: "9.9.9" });
    const { tools } = await client.listTools();
    expect(tools.map((tool) => tool.name).sort()).toEqual(["get_entry", "search_knowledge"]);
    const tool = tools.find((candidate) => candidate.name === "search_knowledge");
    expect(tool!.annotations).toMatchObject({ readOnlyHint: true, openWorldHint: false });
    expect(tool!.inputSchema.required).toEqual(["query"]);
    expect(Object.keys(tool!.inputSchema.properties ?? {}).sort()).toEqual([
      "integrations",
      "limit",
      "query",
    ]);
    expect(tool!.outputSchema).toBeDefined();
  });

  it("returns entries, citations, confidence and the context block", async () => {
    const { client, version } = await connect({ integrations: ["integration-a"] });
    const result = await client.callTool({
      name: "search_knowledge",
      arguments: { query: "enable multi step flow", integrations: ["integration-a"], limit: 1 },
    });
    expect(result.isError).toBeFalsy();
    const structured = result.structuredContent as SearchKnowledgeResult;
    expect(structured.confidence).toBe("high");
    expect(structured.entries).toEqual([
      {
        id: "settings.multi-step-flow",
        title: "Multi-Step Flow",
        summary: "Controls whether guided workflow steps are shown to users before submission.",
        kind: "configuration",
        domain: "account-settings",
        version,
        citation: `[KB:settings.multi-step-flow@${version}]`,
        score: expect.any(Number),
        expandedFrom: null,
      },
      expect.objectContaining({
        id: "settings.step-validation",
        score: null,
        expandedFrom: "settings.multi-step-flow",
      }),
    ]);
    expect(structured.citations).toEqual([
      `[KB:settings.multi-step-flow@${version}]`,
      `[KB:settings.step-validation@${version}]`,
    ]);
    const content = result.content as { type: string; text: string }[];
    expect(content[0]!.type).toBe("text");
    expect(content[0]!.text).toBe(structured.context);
    expect(content[0]!.text.startsWith("<knowledge_context>")).toBe(true);
  });

  it("uses the server's default scope when a call names no integrations, and reports no match", async () => {
    const scoped = await connect({ integrations: ["integration-a"] });
    const hit = await scoped.client.callTool({
      name: "search_knowledge",
      arguments: { query: "multi step flow" },
    });
    expect((hit.structuredContent as SearchKnowledgeResult).entries[0]!.id).toBe("settings.multi-step-flow");

    const { client } = await connect();
    const unscoped = await client.callTool({
      name: "search_knowledge",
      arguments: { query: "multi step flow" },
    });
    expect(
      (unscoped.structuredContent as SearchKnowledgeResult).entries.map((entry) => entry.id),
    ).not.toContain("settings.multi-step-flow");
    const none = await client.callTool({ name: "search_knowledge", arguments: { query: "xyzzy quux" } });
    expect(none.structuredContent).toMatchObject({
      confidence: "none",
      entries: [],
      citations: [],
      context: "",
    });
    expect((none.content as { text: string }[])[0]!.text).toBe(
      'No knowledge entry matched "xyzzy quux" (confidence: none).',
    );
  });

  it("lets a call narrow the server's integrations, never widen them", async () => {
    const search = async (client: Client, args: Record<string, unknown>) => {
      const result = await client.callTool({
        name: "search_knowledge",
        arguments: { query: "refund sync", ...args },
      });
      expect(result.isError).toBeFalsy();
      return (result.structuredContent as SearchKnowledgeResult).entries.map((entry) => entry.id).sort();
    };
    const free = ["refunds.general", "refunds.internal"];

    // `lexground mcp --integrations shopify`: staff-console is outside the scope, whatever the call names.
    const shopify = (await connect({ integrations: ["shopify"] }, "scoped")).client;
    expect(await search(shopify, {})).toEqual([...free, "refunds.shopify"].sort());
    expect(await search(shopify, { integrations: ["staff-console"] })).toEqual(free);
    expect(await search(shopify, { integrations: ["staff-console", "shopify"] })).toEqual(
      [...free, "refunds.shopify"].sort(),
    );
    expect(await search(shopify, { integrations: ["SHOPIFY"] })).toEqual([...free, "refunds.shopify"].sort());
    expect(await search(shopify, { integrations: [] })).toEqual(free);

    // A server without integrations enables none for any call.
    const none = (await connect({}, "scoped")).client;
    expect(await search(none, { integrations: ["staff-console", "shopify"] })).toEqual(free);

    // --all-integrations: a call picks among all of them, and only those it names.
    const all = (await connect({ allIntegrations: true }, "scoped")).client;
    expect(await search(all, {})).toEqual([...free, "refunds.shopify", "refunds.staff-console"].sort());
    expect(await search(all, { integrations: ["staff-console"] })).toEqual([
      ...free,
      "refunds.staff-console",
    ]);

    // Blocked domains have no call argument; arguments that look like one are dropped, not obeyed.
    const blocked = (await connect({ integrations: ["shopify"], blockedDomains: ["internal"] }, "scoped"))
      .client;
    expect(
      await search(blocked, {
        integrations: ["staff-console"],
        blockedDomains: [],
        domains: ["internal"],
        allIntegrations: true,
      }),
    ).toEqual(["refunds.general"]);
  });

  it("rejects invalid arguments", async () => {
    const { client } = await connect();
    const result = await client.callTool({ name: "search_knowledge", arguments: { query: "x", limit: 0 } });
    expect(result.isError).toBe(true);
    const text = (result.content as { text: string }[])[0]!.text;
    expect(text).toContain("limit");
  });
});

describe("lexground mcp: get_entry and entry resources", () => {
  type EntryDocument = KnowledgeEntryDocument;
  const getEntryCall = async (client: Client, id: string) =>
    client.callTool({ name: "get_entry", arguments: { id } });

  it("get_entry returns an entry in the server's scope with its full text and citation", async () => {
    const { client, version } = await connect({ integrations: ["integration-a"] });
    const tool = (await client.listTools()).tools.find((candidate) => candidate.name === "get_entry");
    expect(tool?.annotations).toMatchObject({ readOnlyHint: true, openWorldHint: false });
    expect(tool?.inputSchema.required).toEqual(["id"]);
    const result = await getEntryCall(client, "settings.multi-step-flow");
    expect(result.isError).toBeFalsy();
    const document = result.structuredContent as EntryDocument;
    expect(document).toMatchObject({
      id: "settings.multi-step-flow",
      title: "Multi-Step Flow",
      kind: "configuration",
      integrations: ["integration-a"],
      relatedEntryIds: ["settings.step-validation"],
      parentEntryId: null,
      version,
      citation: `[KB:settings.multi-step-flow@${version}]`,
    });
    expect(document.body.length).toBeGreaterThan(0);
    const text = (result.content as { text: string }[])[0]!.text;
    expect(text.startsWith("# Multi-Step Flow\n")).toBe(true);
    expect(text).toContain(`[KB:settings.multi-step-flow@${version}]`);
    expect(text).toContain(document.body);
  });

  it("get_entry answers an out-of-scope, draft, deprecated or unknown id alike: not found", async () => {
    const { client } = await connect();
    const notFound = async (id: string) => {
      const result = await getEntryCall(client, id);
      expect(result.isError).toBe(true);
      expect(result.structuredContent).toBeUndefined();
      return (result.content as { text: string }[])[0]!.text;
    };
    expect(await notFound("no.such-entry")).toBe('No knowledge entry with id "no.such-entry".');
    // Bound to integration-a, which this server does not enable.
    expect(await notFound("settings.multi-step-flow")).toBe(
      'No knowledge entry with id "settings.multi-step-flow".',
    );
    expect(await notFound("policies.draft-approval")).toContain("No knowledge entry");
    expect(await notFound("settings.legacy-timeout")).toContain("No knowledge entry");
    expect((await getEntryCall(client, "policies.policy-types")).isError).toBeFalsy();

    const scoped = (await connect({ integrations: ["shopify"], blockedDomains: ["internal"] }, "scoped"))
      .client;
    expect((await getEntryCall(scoped, "refunds.shopify")).isError).toBeFalsy();
    expect((await getEntryCall(scoped, "refunds.general")).isError).toBeFalsy();
    expect((await getEntryCall(scoped, "refunds.staff-console")).isError).toBe(true);
    expect((await getEntryCall(scoped, "refunds.internal")).isError).toBe(true);
  });

  it("get_entry leaves related and parent entries the client may not read out of the document", async () => {
    const entry = (id: string, extra: Record<string, unknown> = {}) => ({
      id,
      title: `Entry ${id}`,
      summary: `Summary of ${id}.`,
      domain: "general",
      integrations: [],
      kind: "concept" as const,
      ...extra,
    });
    const knowledgeBase = await readKnowledgeBase({
      schemaVersion: "1",
      contentVersion: "v1",
      generatedAt: "2026-01-01T00:00:00.000Z",
      catalogs: [
        {
          id: "main",
          entries: [
            entry("a.main", {
              relatedEntryIds: ["b.bound", "c.open", "d.blocked", "e.draft"],
              parentEntryId: "d.blocked",
            }),
            entry("b.bound", { integrations: ["crm"] }),
            entry("c.open"),
            entry("d.blocked", { domain: "secret" }),
            entry("e.draft", { status: "draft" }),
          ],
        },
      ],
    });
    const prepared = prepareKnowledgeBase(knowledgeBase, {});
    const document = getEntry(prepared, "a.main", { blockedDomains: ["secret"] });
    expect(document?.relatedEntryIds).toEqual(["c.open"]);
    expect(document?.parentEntryId).toBeNull();
    expect(renderEntryDocument(document!)).toContain("Related: c.open\n");
    const wide = getEntry(prepared, "a.main", { integrations: ["CRM"] });
    expect(wide?.relatedEntryIds).toEqual(["b.bound", "c.open", "d.blocked"]);
    expect(wide?.parentEntryId).toBe("d.blocked");
  });

  it("lists and reads the entries in the server's scope as resources, and nothing else", async () => {
    const scoped = await connect({ integrations: ["shopify"], blockedDomains: ["internal"] }, "scoped");
    const { resources } = await scoped.client.listResources();
    expect(resources.map((resource) => resource.uri).sort()).toEqual([
      "lexground://entries/refunds.general",
      "lexground://entries/refunds.shopify",
    ]);
    expect(resources.find((resource) => resource.name === "refunds.shopify")).toMatchObject({
      title: "Shopify Refund Sync",
      description: "Refund sync for Shopify stores.",
      mimeType: "text/markdown",
    });
    const read = await scoped.client.readResource({ uri: "lexground://entries/refunds.shopify" });
    expect(read.contents).toEqual([
      {
        uri: "lexground://entries/refunds.shopify",
        mimeType: "text/markdown",
        text: expect.stringContaining(`[KB:refunds.shopify@${scoped.version}]`),
      },
    ]);
    for (const hidden of ["refunds.staff-console", "refunds.internal", "no.such-entry"]) {
      await expect(scoped.client.readResource({ uri: `lexground://entries/${hidden}` })).rejects.toThrow(
        /not found/,
      );
    }

    const unscoped = await connect();
    const listed = (await unscoped.client.listResources()).resources.map((resource) => resource.name);
    // Neither the draft, the deprecated entry, nor the two integration-a entries.
    expect(listed.sort()).toEqual(["policies.policy-types", "settings.session-timeout"]);
    for (const hidden of ["policies.draft-approval", "settings.legacy-timeout", "settings.multi-step-flow"]) {
      await expect(unscoped.client.readResource({ uri: `lexground://entries/${hidden}` })).rejects.toThrow(
        /not found/,
      );
    }
  });

  it("encodes ids in resource URIs and decodes them when read", async () => {
    expect(entryResourceUri("a b/c")).toBe("lexground://entries/a%20b%2Fc");
    expect(entryIdOfResourceUri("lexground://entries/a%20b%2Fc")).toBe("a b/c");
    expect(entryIdOfResourceUri("lexground://entries/%E0%A4%A")).toBeUndefined();
    expect(entryIdOfResourceUri("file:///etc/passwd")).toBeUndefined();
  });
});

describe("lexground mcp over stdio (in-process)", () => {
  it("answers initialize and tools/call on stdout, logs on stderr, and exits 0 at end of input", async () => {
    const {
      answers: messages,
      stderr,
      exitCode,
    } = await callMcpOverStdio(["mcp", "--kb", "kb", "--integrations", "integration-a"], fixtures, [
      { name: "search_knowledge", arguments: { query: "enable multi step flow" } },
    ]);
    expect(exitCode).toBe(0);
    expect(messages[0]).toMatchObject({ id: 1, result: { serverInfo: { name: "lexground" } } });
    expect(messages[1]).toMatchObject({ id: 2, result: { structuredContent: { confidence: "high" } } });
    const result = messages[1]!.result!.structuredContent as SearchKnowledgeResult;
    expect(result.entries[0]!.id).toBe("settings.multi-step-flow");
    expect(stderr).toMatch(
      /^lexground mcp: serving 6 entries \(4 active, 4 in scope, content version [0-9a-f]{12}\) on stdio; tools: search_knowledge, get_entry; resources: lexground:\/\/entries\/<id>\n$/,
    );
  });

  it("keeps a call inside --integrations and --blocked-domains over stdio", async () => {
    const { answers, exitCode } = await callMcpOverStdio(
      ["mcp", "--kb", "scoped", "--integrations", "shopify", "--blocked-domains", "internal"],
      fixtures,
      [["staff-console"], ["staff-console", "shopify"]].map((integrations) => ({
        name: "search_knowledge",
        arguments: { query: "refund sync", integrations },
      })),
    );
    expect(exitCode).toBe(0);
    const byId = new Map(
      answers.map((message) => [
        message.id,
        (message.result?.structuredContent as SearchKnowledgeResult | undefined)?.entries.map(
          (entry) => entry.id,
        ),
      ]),
    );
    expect(byId.get(2)).toEqual(["refunds.general"]);
    expect(byId.get(3)?.sort()).toEqual(["refunds.general", "refunds.shopify"]);
  });

  it("--help says a call narrows the server's scope and never widens it", async () => {
    const help = (await run(["mcp", "--help"])).stdout;
    expect(help).toContain("A call's\nintegrations only narrow them");
    expect(help).toContain("No call argument unblocks a domain.");
  });

  it("fails like every command when the knowledge base is missing", async () => {
    expect(await run(["mcp", "--kb", "nowhere"])).toEqual({
      code: 1,
      stdout: "",
      stderr:
        "error: nowhere: no such file or directory\nhint: check the path; it is resolved against the current directory\n",
    });
    expect((await run(["mcp", "--kb", "kb", "--limit", "80"])).stderr).toBe(
      "error: --limit must be at most 50\n",
    );
  });
});
