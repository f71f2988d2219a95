/**
 * Presets through the CLI: `--preset` on query, ask, mcp and eval, `preset` in `--config` files, the precedence
 * between them, and unknown names. Runs on the example knowledge base, where the recommended preset's cut-offs
 * visibly shorten the selection.
 */
import { writeFile } from "node:fs/promises";
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { TurnReport } from "../../src/cli/turn.js";
import { KNOWLEDGE_PRESETS } from "../../src/index.js";
import { callMcpOverStdio } from "../support/mcpClients.js";
import { run, withTemporaryDirectory } from "./helpers.js";

const KB = join(import.meta.dirname, "..", "..", "examples", "knowledge-base");
const QUESTION = "how do I rotate an API key";

/** What `query --json` prints. */
type QueryJson = TurnReport & { preset: string; retrieval: Record<string, unknown> };

async function queryJson(argv: string[]): Promise<QueryJson> {
  const result = await run(["query", QUESTION, "--kb", KB, "--json", ...argv]);
  expect(result.stderr).toBe("");
  expect(result.code).toBe(0);
  return JSON.parse(result.stdout);
}

describe("lexground query --preset", () => {
  it("recommended resolves the preset's settings and cuts the selection; the default is neurolink", async () => {
    const neurolink = await queryJson([]);
    expect(neurolink.preset).toBe("neurolink");
    expect(neurolink.retrieval).toMatchObject({ analyzer: "none", scoring: "sum", resultLimit: 8 });
    expect(neurolink.primary).toHaveLength(8);
    expect(neurolink.candidates.some((candidate) => candidate.cut)).toBe(false);

    const recommended = await queryJson(["--preset", "recommended"]);
    expect(recommended.preset).toBe("recommended");
    expect(recommended.retrieval).toMatchObject({
      analyzer: KNOWLEDGE_PRESETS.recommended.retrieval.analyzer,
      scoring: "bm25f",
      minRelativeScore: KNOWLEDGE_PRESETS.recommended.retrieval.minRelativeScore,
    });
    // The preset's values are tuned by measurement; what holds whatever they are: the answer stays on top and
    // the cut-offs end the list early, marking where.
    const kept = recommended.primary.length;
    expect(recommended.primary[0]!.id).toBe("api.rotate-api-key");
    expect(kept).toBeLessThan(8);
    expect(recommended.candidates[kept]!.selected).toBe(false);
    expect(recommended.candidates[kept]!.cut).toMatchObject({ endedAt: recommended.candidates[kept]!.id });
    expect(recommended.context.tokens).toBeLessThan(neurolink.context.tokens);
  });

  it("--explain names the cut-off that removed each candidate", async () => {
    const result = await run(["query", QUESTION, "--kb", KB, "--preset", "recommended", "--explain"]);
    expect(result.code).toBe(0);
    expect(result.stdout).toContain("Preset     recommended\n");
    expect(result.stdout).toMatch(
      /\n {6}cut by (minRelativeScore|scoreGapRatio): score \d+\.\d\d < \d+\.\d\d\n/,
    );
    expect(result.stdout).toMatch(
      /\n {6}cut by (minRelativeScore|scoreGapRatio): the list ended at [\w.-]+ \(its score < \d+\.\d\d\)\n/,
    );
    expect(result.stdout).toContain(
      "(· = candidate not selected: cut by the rule shown, or beyond the result limit)",
    );
  });

  it("an unknown --preset is a usage error listing the presets", async () => {
    const result = await run(["query", QUESTION, "--kb", KB, "--preset", "fast"]);
    expect(result.code).toBe(2);
    expect(result.stdout).toBe("");
    expect(result.stderr).toBe(
      'error: unknown preset "fast"\nhint: use one of: neurolink, recommended (e.g. --preset recommended)\n',
    );
  });

  it("a --config file may name a preset; its fields override the preset's and --preset replaces its preset", async () => {
    await withTemporaryDirectory(async (directory) => {
      const file = join(directory, "config.json");
      await writeFile(
        file,
        JSON.stringify({
          preset: "recommended",
          retrieval: { minRelativeScore: 0, scoreGapRatio: 0, k1: 1.2 },
        }),
      );
      const fromFile = await queryJson(["--config", file]);
      expect(fromFile.preset).toBe("recommended");
      expect(fromFile.retrieval).toMatchObject({
        analyzer: KNOWLEDGE_PRESETS.recommended.retrieval.analyzer,
        k1: 1.2,
        minRelativeScore: 0,
        scoreGapRatio: 0,
      });
      expect(fromFile.primary.length).toBeGreaterThan(1);

      const replaced = await queryJson(["--config", file, "--preset", "neurolink"]);
      expect(replaced.preset).toBe("neurolink");
      expect(replaced.retrieval).toMatchObject({ analyzer: "none", k1: 1.2, minRelativeScore: 0 });

      await writeFile(file, JSON.stringify({ preset: "fast" }));
      const bad = await run(["query", QUESTION, "--kb", KB, "--config", file]);
      expect(bad.code).toBe(2);
      expect(bad.stderr.split("\n")[0]).toBe(
        `error: ${file}: preset must be one of "neurolink", "recommended", got "fast"`,
      );
    });
  });
});

describe("lexground ask --preset", () => {
  it("offline: answers from the preset's selection", async () => {
    const result = await run(["ask", QUESTION, "--kb", KB, "--preset", "recommended", "--offline", "--json"]);
    expect(result.code).toBe(0);
    const answer = JSON.parse(result.stdout) as { selectedIds: string[] };
    expect(answer.selectedIds[0]).toBe("api.rotate-api-key");
    expect(answer.selectedIds.length).toBeLessThan(8);
  });

  describe("through the NeuroLink client", () => {
    let server: Server;
    let baseURL: string;
    const systems: string[] = [];

    async function readBody(request: IncomingMessage): Promise<string> {
      let text = "";
      for await (const chunk of request) text += chunk;
      return text;
    }

    beforeAll(async () => {
      server = createServer(async (request, response) => {
        const body = JSON.parse(await readBody(request)) as {
          model: string;
          messages: { role: string; content: unknown }[];
        };
        const system = body.messages.find((message) => message.role === "system");
        systems.push(typeof system?.content === "string" ? system.content : JSON.stringify(system?.content));
        response.writeHead(200, { "content-type": "application/json" });
        response.end(
          JSON.stringify({
            id: "chat",
            object: "chat.completion",
            created: 0,
            model: body.model,
            choices: [{ index: 0, message: { role: "assistant", content: "ok" }, finish_reason: "stop" }],
            usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
          }),
        );
      });
      await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
      baseURL = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
    });

    afterAll(async () => {
      await new Promise<void>((resolve) => server.close(() => resolve()));
    });

    it("the client grounds with the preset", async () => {
      const ask = async (extra: string[]) => {
        const result = await run(
          [
            "ask",
            QUESTION,
            "--kb",
            KB,
            "--provider",
            "openai-compatible",
            "--model",
            "m",
            "--json",
            ...extra,
          ],
          { env: { OPENAI_COMPATIBLE_BASE_URL: baseURL } },
        );
        expect(result.code).toBe(0);
        return JSON.parse(result.stdout) as {
          knowledge: { selectedIds: string[]; expandedIds: string[]; contextTokens: number };
        };
      };
      const neurolink = await ask([]);
      const recommended = await ask(["--preset", "recommended"]);
      expect(neurolink.knowledge.selectedIds).toHaveLength(8);
      expect(recommended.knowledge.selectedIds[0]).toBe("api.rotate-api-key");
      expect(recommended.knowledge.selectedIds.length).toBeLessThan(8);
      expect(recommended.knowledge.contextTokens).toBeLessThan(neurolink.knowledge.contextTokens);
      // The prompt cites exactly what the preset selected.
      const block = systems.at(-1)!.slice(systems.at(-1)!.indexOf("<knowledge_context>"));
      const cited = [...block.matchAll(/\[KB:([^@\]]+)@/g)].map((match) => match[1]);
      expect(cited).toEqual([...recommended.knowledge.selectedIds, ...recommended.knowledge.expandedIds]);
    });
  });
});

describe("lexground mcp --preset", () => {
  it("search_knowledge selects with the preset", async () => {
    const { answers, exitCode } = await callMcpOverStdio(["mcp", "--kb", KB, "--preset", "recommended"], KB, [
      { name: "search_knowledge", arguments: { query: QUESTION } },
    ]);
    expect(exitCode).toBe(0);
    const entries = answers[1]!.result!.structuredContent!.entries as {
      id: string;
      expandedFrom: string | null;
    }[];
    const primary = entries.filter((entry) => entry.expandedFrom === null).map((entry) => entry.id);
    expect(primary[0]).toBe("api.rotate-api-key");
    expect(primary.length).toBeLessThan(8);
  });
});

describe("lexground eval --preset", () => {
  it("adds each preset as a configuration after the default; presets in --config files apply too", async () => {
    const result = await run([
      "eval",
      "--kb",
      KB,
      "--preset",
      "recommended",
      "--config",
      '{"name": "recommended, k1 1.2", "preset": "recommended", "retrieval": {"k1": 1.2}}',
      "--json",
    ]);
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    const report = JSON.parse(result.stdout) as {
      configurations: { name: string; settings: object; resolved: Record<string, unknown> }[];
    };
    expect(report.configurations.map((configuration) => configuration.name)).toEqual([
      "default",
      "recommended",
      "recommended, k1 1.2",
    ]);
    expect(report.configurations[0]!.resolved).toMatchObject({ analyzer: "none" });
    expect(report.configurations[1]!.settings).toEqual({ preset: "recommended" });
    expect(report.configurations[1]!.resolved).toMatchObject({
      analyzer: KNOWLEDGE_PRESETS.recommended.retrieval.analyzer,
      k1: KNOWLEDGE_PRESETS.recommended.retrieval.k1,
    });
    expect(report.configurations[2]!.resolved).toMatchObject({
      analyzer: KNOWLEDGE_PRESETS.recommended.retrieval.analyzer,
      k1: 1.2,
    });

    const unknown = await run(["eval", "--kb", KB, "--preset", "fast"]);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('unknown preset "fast"');
  });
});
