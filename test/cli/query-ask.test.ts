import { writeFile } from "node:fs/promises";
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { Readable } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { answerSources, describeFromKnowledgeBase, OFFLINE_NOTICE } from "../../src/cli/commands/ask.js";
import { countExclusions, populationOf } from "../../src/cli/population.js";
import { showQuestion } from "../../src/cli/question.js";
import { prepareKnowledgeBase } from "../../src/cli/session.js";
import { readKnowledgeBase } from "../../src/files/compile.js";
import { citationMarker } from "../../src/index.js";
import { fixtures, run, withTemporaryDirectory } from "./helpers.js";

describe("lexground query", () => {
  it("shows the ranking, confidence, context size and timing", async () => {
    const result = await run([
      "query",
      "enable multi step flow",
      "--kb",
      "kb",
      "--integrations",
      "integration-a",
    ]);
    expect(result.code).toBe(0);
    expect(result.stderr).toBe("");
    const lines = result.stdout.split("\n");
    expect(lines[0]).toBe('Query      "enable multi step flow"');
    expect(lines[1]).toBe("Scope      integrations: integration-a · blocked domains: none");
    expect(lines[2]).toBe("Confidence high · 2 candidates · 2 selected · 0 expanded");
    expect(lines[3]).toBe("Excluded   1 draft · 1 deprecated");
    expect(lines[6]).toMatch(
      /^ {2}1 +\d+\.\d\d {2}settings\.multi-step-flow {2}exact\+alias\+lexical +Multi-Step Flow$/,
    );
    expect(result.stdout).toMatch(/\nContext {4}\d+ tokens of 4000 · 2 citations · not truncated\n/);
    expect(result.stdout).toMatch(
      /\nTiming {5}load .+ · validate .+ · index .+ · retrieve .+ · assemble .+\n$/,
    );
    // Without --explain the block itself is not printed.
    expect(result.stdout).not.toContain("<knowledge_context>");
  });

  it("--explain adds the per-field breakdown, the matched phrases and the context block", async () => {
    const result = await run([
      "query",
      "enable multi step flow",
      "--kb",
      "kb",
      "--integrations",
      "integration-a",
      "--explain",
    ]);
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(
      /\n {6}exact \+100 · alias \+60 · lexical \d+\.\d\d = title \d+\.\d\d \+ aliases \d+\.\d\d \+ body \d+\.\d\d\n/,
    );
    expect(result.stdout).toContain('      matched phrases: "multi step flow", "enable multi step flow"\n');
    expect(result.stdout).toContain("<knowledge_context>");
    expect(result.stdout).toMatch(/\[KB:settings\.multi-step-flow@[0-9a-f]{12}\]/);
  });

  it("--json carries the score breakdown, expansion, context and timings", async () => {
    const result = await run(["query", "policy types", "--kb", "kb", "--json"]);
    expect(result.code).toBe(0);
    const report = JSON.parse(result.stdout);
    expect(report.confidence).toBe("high");
    expect(report.candidates[0]).toMatchObject({
      rank: 1,
      id: "policies.policy-types",
      exact: true,
      alias: false,
      matchedPhrases: ["policy types"],
      selected: true,
    });
    expect(report.candidates[0].score).toBeCloseTo(report.candidates[0].lexical + 100, 9);
    expect(Object.keys(report.candidates[0].fieldScores)).toEqual(["title", "summary", "body"]);
    expect(report.context.citations).toEqual([
      { id: "policies.policy-types", version: report.knowledgeBase.contentVersion },
    ]);
    expect(report.context.tokens).toBe(Math.ceil(report.context.text.length / 4));
    expect(report.knowledgeBase).toMatchObject({ catalogs: 2, entries: 6, integrations: ["integration-a"] });
    for (const key of ["loadMs", "validateMs", "indexMs", "retrieveMs", "assembleMs"]) {
      expect(report.timing[key]).toBeGreaterThanOrEqual(0);
    }
  });

  it("expands related entries and respects integrations, blocked domains and --limit", async () => {
    const expanded = JSON.parse(
      (
        await run([
          "query",
          "multi step flow",
          "--kb",
          "kb",
          "--integrations",
          "integration-a",
          "--limit",
          "1",
          "--json",
        ])
      ).stdout,
    );
    expect(expanded.primary.map((entry: { id: string }) => entry.id)).toEqual(["settings.multi-step-flow"]);
    expect(expanded.expanded).toEqual([
      expect.objectContaining({ id: "settings.step-validation", via: "settings.multi-step-flow" }),
    ]);

    const unscoped = await run(["query", "multi step flow", "--kb", "kb"]);
    expect(unscoped.stdout).toContain(
      "\nExcluded   1 draft · 1 deprecated · 2 out of scope (2 bound to integrations not enabled)\nnote: no integration is enabled; pass --integrations integration-a or --all-integrations\n",
    );
    expect(unscoped.stdout).not.toContain("settings.multi-step-flow");
    const all = JSON.parse(
      (await run(["query", "multi step flow", "--kb", "kb", "--all-integrations", "--json"])).stdout,
    );
    expect(all.enabledIntegrations).toEqual(["integration-a"]);
    expect(all.primary[0].id).toBe("settings.multi-step-flow");

    const blocked = JSON.parse(
      (await run(["query", "policy types", "--kb", "kb", "--blocked-domains", "access-policies", "--json"]))
        .stdout,
    );
    expect(blocked.primary).toEqual([]);
    expect(blocked.confidence).toBe("none");
  });

  it("--context prints only the block; nothing matched prints a note on stderr", async () => {
    const block = await run(["query", "policy types", "--kb", "kb", "--context"]);
    expect(block.code).toBe(0);
    expect(block.stdout.startsWith("<knowledge_context>\n")).toBe(true);
    expect(block.stdout.endsWith("</knowledge_context>\n")).toBe(true);
    const none = await run(["query", "xyzzy quux", "--kb", "kb", "--context"]);
    expect(none).toEqual({
      code: 0,
      stdout: "",
      stderr: "no context: nothing matched or nothing fit the budget\n",
    });
    const human = await run(["query", "xyzzy quux", "--kb", "kb"]);
    expect(human.stdout).toContain("Confidence none · 0 candidates · 0 selected · 0 expanded");
    expect(human.stdout).toContain("No entry matched.");
  });

  it("reads the question from --file or standard input", async () => {
    await withTemporaryDirectory(async (directory) => {
      const file = join(directory, "question.txt");
      await writeFile(file, "policy types\n");
      const fromFile = await run(["query", "--file", file, "--kb", "kb"]);
      expect(fromFile.code).toBe(0);
      expect(fromFile.stdout.split("\n")[0]).toBe('Query      "policy types"');

      const piped = await run(["query", "--kb", "kb", "--json"], {
        stdin: Readable.from(["policy ", "types\n"]),
      });
      expect(piped.code).toBe(0);
      expect(JSON.parse(piped.stdout).primary[0].id).toBe("policies.policy-types");
      for (const argv of [
        ["query", "-", "--kb", "kb"],
        ["query", "--file", "-", "--kb", "kb"],
      ]) {
        const dash = await run(argv, { stdin: Readable.from(["policy types"]) });
        expect(dash.stdout.split("\n")[0]).toBe('Query      "policy types"');
      }
      // ask takes the question the same way.
      const ask = await run(["ask", "--file", file, "--kb", "kb", "--json"]);
      expect(JSON.parse(ask.stdout)).toMatchObject({ mode: "offline", question: "policy types" });

      // A terminal is never waited on; misuse is a usage error.
      const terminal = Object.assign(Readable.from([]), { isTTY: true });
      expect((await run(["query", "--kb", "kb"], { stdin: terminal })).stderr).toMatch(
        /^error: no question given\n/,
      );
      const both = await run(["query", "policy types", "--file", file, "--kb", "kb"]);
      expect(both.code).toBe(2);
      expect(both.stderr.split("\n")[0]).toBe(
        "error: give the question either as an argument or with --file, not both",
      );
      const missing = await run(["query", "--file", join(directory, "nope.txt"), "--kb", "kb"]);
      expect(missing.code).toBe(2);
      expect(missing.stderr.split("\n")[0]).toMatch(/nope\.txt: question file not found$/);
      const empty = await run(["query", "--kb", "kb"], { stdin: Readable.from(["  \n"]) });
      expect(empty.code).toBe(2);
      expect(empty.stderr.split("\n")[0]).toBe("error: the question is empty");
    });
  });

  it("a 200k-character question from a file is searched, and the header shows its start and length", async () => {
    await withTemporaryDirectory(async (directory) => {
      const question = `policy types ${"x".repeat(199_987)}`;
      expect(question.length).toBe(200_000);
      const file = join(directory, "long.txt");
      await writeFile(file, question);
      const result = await run(["query", "--file", file, "--kb", "kb"]);
      expect(result.code).toBe(0);
      const header = result.stdout.split("\n")[0]!;
      expect(header).toBe(
        `Query      ${JSON.stringify(question.slice(0, 200))}… (200000 characters; the first 32768 are searched)`,
      );
      expect(result.stdout.length).toBeLessThan(2_000);
      expect(result.stdout).toContain("policies.policy-types");
      // --json is for programs: it keeps the whole question.
      const json = await run(["query", "--file", file, "--kb", "kb", "--json"]);
      expect(JSON.parse(json.stdout).query).toBe(question);
    });
    // A surrogate pair at the cut is kept whole.
    const emoji = `${"a".repeat(199)}😀${"b".repeat(300)}`;
    expect(showQuestion(emoji)).toBe(`${JSON.stringify("a".repeat(199))}… (501 characters)`);
    expect(showQuestion("short")).toBe('"short"');
  });

  it("says how many draft, deprecated and out-of-scope entries were excluded", async () => {
    const scoped = await run([
      "query",
      "refund sync",
      "--kb",
      "scoped",
      "--integrations",
      "shopify",
      "--blocked-domains",
      "internal",
    ]);
    expect(scoped.stdout.split("\n")[3]).toBe(
      "Excluded   2 out of scope (1 bound to integrations not enabled, 1 in a blocked domain)",
    );
    const everything = await run(["query", "refund sync", "--kb", "scoped", "--all-integrations"]);
    expect(everything.stdout).not.toContain("Excluded");
    const json = JSON.parse((await run(["query", "policy types", "--kb", "kb", "--json"])).stdout);
    expect(json.excluded).toEqual({ draft: 1, deprecated: 1, blockedDomain: 0, integrations: 2 });

    // Counted once per knowledge base from its scope groups, not per entry per turn.
    const prepared = prepareKnowledgeBase(await readKnowledgeBase("scoped", { cwd: fixtures }), {});
    const population = populationOf(prepared);
    expect(populationOf(prepared)).toBe(population);
    expect(population.statuses).toEqual({ active: 4, draft: 0, deprecated: 0 });
    expect(population.scopeGroups).toHaveLength(4);
    expect(
      countExclusions(population, { enabledIntegrations: ["SHOPIFY"], blockedDomains: ["payments"] }),
    ).toEqual({ draft: 0, deprecated: 0, blockedDomain: 3, integrations: 0 });
  });

  it("reads --config (retrieval and context settings) and rejects bad values with the engine's message", async () => {
    await withTemporaryDirectory(async (directory) => {
      await writeFile(join(directory, "small.json"), JSON.stringify({ context: { maxTokens: 40 } }));
      const tight = JSON.parse(
        (
          await run([
            "query",
            "policy types",
            "--kb",
            "kb",
            "--config",
            join(directory, "small.json"),
            "--json",
          ])
        ).stdout,
      );
      expect(tight.context).toMatchObject({
        text: "",
        tokens: 0,
        maxTokens: 40,
        truncated: true,
        citations: [],
      });

      await writeFile(join(directory, "bad.json"), JSON.stringify({ retrieval: { k1: -1 } }));
      const bad = await run(["query", "x", "--kb", "kb", "--config", join(directory, "bad.json")]);
      expect(bad.code).toBe(2);
      expect(bad.stderr.split("\n")[0]).toBe(
        `error: ${join(directory, "bad.json")}: retrieval.k1 must be a finite number >= 0, got -1`,
      );

      await writeFile(join(directory, "unknown.json"), JSON.stringify({ retreival: {} }));
      const unknown = await run(["query", "x", "--kb", "kb", "--config", join(directory, "unknown.json")]);
      expect(unknown.code).toBe(2);
      expect(unknown.stderr.split("\n")[0]).toBe(
        `error: ${join(directory, "unknown.json")}: unknown config key "retreival" (known: name, preset, retrieval, context, blockedDomains, timeoutMs)`,
      );
    });
  });

  it("bad input: no --kb, a bad --limit, a missing knowledge base, an invalid knowledge base", async () => {
    expect(await run(["query", "x"])).toEqual({
      code: 2,
      stdout: "",
      stderr:
        "error: no knowledge base given\nhint: pass --kb <manifest.json|folder> (or set LEXGROUND_KB), e.g. --kb examples/knowledge-base\n",
    });
    const fromEnvironment = await run(["query", "policy types", "--json"], { env: { LEXGROUND_KB: "kb" } });
    expect(JSON.parse(fromEnvironment.stdout).primary[0].id).toBe("policies.policy-types");
    expect(await run(["query", "x", "--kb", "kb", "--limit", "lots"])).toEqual({
      code: 2,
      stdout: "",
      stderr: 'error: --limit must be a whole number >= 1, got "lots"\nhint: e.g. --limit 5\n',
    });
    expect((await run(["query", "x", "--kb", "missing.json"])).stderr).toBe(
      "error: missing.json: no such file or directory\nhint: check the path; it is resolved against the current directory\n",
    );
    expect(await run(["query", "export", "--kb", "invalid"])).toEqual({
      code: 1,
      stdout: "",
      stderr:
        'error: the knowledge base has 2 validation errors; first: invalid/bad-kind.md:7: kind "recipe" of entry "invalid.bad-kind" is not one of concept, text, configuration, tool, procedure, policy, troubleshooting\n' +
        "hint: run 'lexground validate' on the knowledge base to see every issue\n",
    });
  });

  it("loads a BEIR folder as a knowledge base", async () => {
    const result = JSON.parse((await run(["query", "slipstream lift", "--kb", "beir", "--json"])).stdout);
    expect(result.primary[0].id).toBe("d1");
    expect(result.knowledgeBase.entries).toBe(3);
  });
});

describe("lexground ask (offline)", () => {
  it("answers from the top entries' summaries with citations, and says it is offline", async () => {
    const result = await run(["ask", "how long until an idle session is signed out", "--kb", "kb"]);
    expect(result.code).toBe(0);
    expect(result.stderr).toBe("");
    expect(result.stdout).toMatch(
      new RegExp(
        `^\\(offline\\) ${OFFLINE_NOTICE.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}\n\n1\\. Session Timeout: How long an idle session stays signed in\\. \\[KB:settings\\.session-timeout@[0-9a-f]{12}\\]\n\nConfidence: medium\n$`,
      ),
    );
  });

  it("--json, no match, and --offline even when a provider key is set", async () => {
    const json = JSON.parse(
      (
        await run([
          "ask",
          "enable multi step flow",
          "--kb",
          "kb",
          "--integrations",
          "integration-a",
          "--json",
        ])
      ).stdout,
    );
    expect(json).toMatchObject({ mode: "offline", notice: OFFLINE_NOTICE, confidence: "high" });
    expect(json.citations[0]).toMatch(/^\[KB:settings\.multi-step-flow@[0-9a-f]{12}\]$/);
    expect(json.answer.startsWith("1. Multi-Step Flow: Controls whether guided workflow steps")).toBe(true);

    const none = await run(["ask", "xyzzy quux", "--kb", "kb"]);
    expect(none.stdout).toContain("The knowledge base has no entry that matches this question.");
    expect(none.stdout).toContain("Confidence: none");

    const forced = await run(["ask", "policy types", "--kb", "kb", "--offline", "--json"], {
      env: { OPENAI_API_KEY: "sk-not-used" },
    });
    expect(JSON.parse(forced.stdout).mode).toBe("offline");
  });
});

/** A minimal OpenAI-compatible chat server on 127.0.0.1 that records requests. */
describe("lexground ask (through the NeuroLink client)", () => {
  let server: Server;
  let baseURL: string;
  const requests: { body: { stream?: boolean; messages: { role: string; content: unknown }[] } }[] = [];

  async function readBody(request: IncomingMessage): Promise<string> {
    let text = "";
    for await (const chunk of request) text += chunk;
    return text;
  }

  beforeAll(async () => {
    server = createServer(async (request, response) => {
      const body = JSON.parse(await readBody(request));
      requests.push({ body });
      const answer = ["The multi-step flow ", "shows guided steps ", "[KB:settings.multi-step-flow@v1]."];
      if (body.stream) {
        response.writeHead(200, { "content-type": "text/event-stream" });
        for (const [index, piece] of answer.entries()) {
          const chunk = {
            id: "chat-1",
            object: "chat.completion.chunk",
            created: 0,
            model: body.model,
            choices: [
              {
                index: 0,
                delta: index === 0 ? { role: "assistant", content: piece } : { content: piece },
                finish_reason: null,
              },
            ],
          };
          response.write(`data: ${JSON.stringify(chunk)}\n\n`);
        }
        const last = {
          id: "chat-1",
          object: "chat.completion.chunk",
          created: 0,
          model: body.model,
          choices: [{ index: 0, delta: {}, finish_reason: "stop" }],
          usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 },
        };
        response.end(`data: ${JSON.stringify(last)}\n\ndata: [DONE]\n\n`);
        return;
      }
      response.writeHead(200, { "content-type": "application/json" });
      response.end(
        JSON.stringify({
          id: "chat-2",
          object: "chat.completion",
          created: 0,
          model: body.model,
          choices: [
            { index: 0, message: { role: "assistant", content: answer.join("") }, finish_reason: "stop" },
          ],
          usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 },
        }),
      );
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    baseURL = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
  });

  afterAll(async () => {
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  function systemText(index: number): string {
    const system = requests[index]!.body.messages.find((message) => message.role === "system");
    return typeof system?.content === "string" ? system.content : JSON.stringify(system?.content ?? "");
  }

  it("streams a grounded answer and lists the sources; the prompt carries the knowledge block", async () => {
    const before = requests.length;
    const result = await run(
      [
        "ask",
        "enable multi step flow",
        "--kb",
        "kb",
        "--integrations",
        "integration-a",
        "--provider",
        "openai-compatible",
        "--model",
        "test-model",
      ],
      { env: { OPENAI_COMPATIBLE_BASE_URL: baseURL } },
    );
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    const lines = result.stdout.split("\n");
    expect(lines[0]).toBe("The multi-step flow shows guided steps [KB:settings.multi-step-flow@v1].");
    expect(lines[2]).toBe("openai-compatible/test-model · confidence high");
    // The answer cites the multi-step flow; the expanded step-validation entry was in the context, uncited.
    expect(lines[3]).toMatch(/^Sources: \[KB:settings\.multi-step-flow@[0-9a-f]{12}\] Multi-Step Flow$/);
    expect(lines[4]).toMatch(
      /^Also in context: \[KB:settings\.step-validation@[0-9a-f]{12}\] Step Validation$/,
    );
    expect(lines[5]).toBe("");
    expect(requests.length).toBe(before + 1);
    expect(requests[before]!.body.stream).toBe(true);
    const system = systemText(before);
    expect(system).toContain("You are a precise support assistant.");
    expect(system).toContain("<knowledge_context>");
    expect(system).toMatch(/\[KB:settings\.multi-step-flow@[0-9a-f]{12}\]/);
  });

  it("--json uses generate and reports the grounding metadata", async () => {
    const result = await run(
      [
        "ask",
        "policy types",
        "--kb",
        "kb",
        "--provider",
        "openai-compatible",
        "--model",
        "test-model",
        "--json",
      ],
      { env: { OPENAI_COMPATIBLE_BASE_URL: baseURL } },
    );
    expect(result.code).toBe(0);
    const answer = JSON.parse(result.stdout);
    expect(answer).toMatchObject({
      mode: "model",
      provider: "openai-compatible",
      model: "test-model",
      answer: "The multi-step flow shows guided steps [KB:settings.multi-step-flow@v1].",
      confidence: "high",
    });
    expect(answer.knowledge.selectedIds).toEqual(["policies.policy-types"]);
    // The mock answer cites an entry that was not in this turn's context, and not the one that was.
    expect(answer.citations).toEqual([]);
    expect(answer.alsoInContext).toEqual([
      expect.stringMatching(/^\[KB:policies\.policy-types@[0-9a-f]{12}\]$/),
    ]);
    expect(answer.unknownCitations).toEqual(["[KB:settings.multi-step-flow@v1]"]);
    expect(requests.at(-1)!.body.stream).toBeFalsy();
  });

  it("Sources lists what the answer cites, then the rest as also in context", async () => {
    const result = await run(
      ["ask", "policy types", "--kb", "kb", "--provider", "openai-compatible", "--model", "test-model"],
      { env: { OPENAI_COMPATIBLE_BASE_URL: baseURL } },
    );
    expect(result.code).toBe(0);
    const tail = result.stdout.split("\n").slice(2);
    expect(tail[0]).toBe("openai-compatible/test-model · confidence high");
    expect(tail[1]).toBe("Sources: none cited by the answer");
    expect(tail[2]).toMatch(/^Also in context: \[KB:policies\.policy-types@[0-9a-f]{12}\] Policy Types$/);
    expect(tail[3]).toBe(
      "Cited but not in the context: [KB:settings.multi-step-flow@v1] (check these claims)",
    );
  });

  it("Sources reads cited ids through the marker encoding (an id with a space, a bracket)", async () => {
    const entry = (id: string) => ({
      id,
      title: `Title of ${id}`,
      summary: "Summary.",
      domain: "d",
      integrations: [],
    });
    const prepared = prepareKnowledgeBase(
      await readKnowledgeBase({
        schemaVersion: "1",
        contentVersion: "v1",
        generatedAt: "2026-01-01T00:00:00.000Z",
        catalogs: [{ id: "c", entries: [entry("payments settings"), entry("a[1]"), entry("plain.id")] }],
      }),
      {},
    );
    const metadata = {
      retrievalMode: "lexical" as const,
      selectedIds: ["payments settings", "a[1]", "plain.id"],
      expandedIds: [],
      candidateCount: 3,
      contextTokens: 10,
      truncated: false,
      durationMs: 1,
    };
    const spaced = citationMarker("payments settings", "v1");
    expect(spaced).toBe("[KB:payments%20settings@v1]");
    const sources = answerSources(
      `Yes ${spaced}, and ${citationMarker("a[1]", "v1")}; not [KB:missing.id@v1].`,
      metadata,
      describeFromKnowledgeBase(prepared),
    );
    expect(sources.cited.map((source) => source.id)).toEqual(["payments settings", "a[1]"]);
    expect(sources.alsoInContext.map((source) => source.id)).toEqual(["plain.id"]);
    expect(sources.unknown).toEqual(["[KB:missing.id@v1]"]);
  });

  it("provider errors speak CLI: flags and variables, usage errors exit 2", async () => {
    const apiWords = /`model`|`provider`|providers\[|providers\.|LanguageModel/;
    const unknown = await run(["ask", "policy types", "--kb", "kb", "--provider", "nope"]);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toBe(
      'error: unknown provider "nope"\nhint: pass --provider with one of: openai, anthropic, google, openai-compatible, or a local server: ollama, lmstudio, vllm (aliases: claude, gemini)\n',
    );
    const noModel = await run(["ask", "policy types", "--kb", "kb", "--provider", "openai-compatible"], {
      env: { OPENAI_COMPATIBLE_BASE_URL: baseURL },
    });
    expect(noModel.code).toBe(2);
    expect(noModel.stderr).toBe(
      'error: provider "openai-compatible" needs a model\nhint: pass --model <name>, or set OPENAI_COMPATIBLE_MODEL (or LEXGROUND_MODEL)\n',
    );
    const noAddress = await run([
      "ask",
      "policy types",
      "--kb",
      "kb",
      "--provider",
      "openai-compatible",
      "--model",
      "m",
    ]);
    expect(noAddress.code).toBe(1);
    expect(noAddress.stderr.split("\n")[0]).toBe('error: provider "openai-compatible" has no server address');
    for (const result of [unknown, noModel, noAddress]) expect(result.stderr).not.toMatch(apiWords);
  });

  it("a provider failure is one error line with a non-zero exit", async () => {
    const result = await run(
      ["ask", "policy types", "--kb", "kb", "--provider", "openai-compatible", "--model", "m"],
      {
        env: { OPENAI_COMPATIBLE_BASE_URL: "http://127.0.0.1:9/v1" },
      },
    );
    expect(result.code).toBe(1);
    expect(result.stdout).toBe("");
    expect(result.stderr).toMatch(
      /^error: the model call failed: .+\nhint: check --provider, --model and the provider's API key variable, or pass --offline to answer from the knowledge base alone\n$/,
    );
    const unconfigured = await run(["ask", "policy types", "--kb", "kb", "--provider", "openai"]);
    expect(unconfigured.code).toBe(1);
    expect(unconfigured.stderr).toBe(
      'error: provider "openai" has no API key\nhint: set OPENAI_API_KEY in the environment; --offline answers without a model\n',
    );
  });
});
