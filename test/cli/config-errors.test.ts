/**
 * Issue 13, the CLI: one config file for query, ask, eval and mcp (the README's examples work as written), errors
 * that name the place (JSON line and column, "not a knowledge manifest"), usage errors that exit 2, errors as JSON
 * on stdout with --json, and validate reporting every problem of a folder in one run.
 */
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { CONFIG_FILE_KEYS, parseConfigText } from "../../src/cli/config.js";
import { callMcpOverStdio } from "../support/mcpClients.js";
import { fixtures, run, withTemporaryDirectory } from "./helpers.js";

const repository = join(import.meta.dirname, "..", "..");

/** Runs `lexground mcp` until it has answered `initialize` (or failed); returns the exit code and stderr. */
async function runMcp(argv: string[], cwd: string): Promise<{ code: number; stderr: string }> {
  const { exitCode, stderr } = await callMcpOverStdio(["mcp", ...argv], cwd, []);
  return { code: exitCode, stderr };
}

/** Every ```json block of the README that is a config file (it holds a config key). */
async function readmeConfigBlocks(): Promise<string[]> {
  const readme = await readFile(join(repository, "README.md"), "utf8");
  return [...readme.matchAll(/```json\n([\s\S]*?)```/g)]
    .map((match) => match[1]!)
    .filter((text) => /"(retrieval|preset|context)"/.test(text));
}

describe("config files", () => {
  it("one file serves query, ask, eval and mcp, name included", async () => {
    await withTemporaryDirectory(async (directory) => {
      const file = join(directory, "shared.json");
      await writeFile(
        file,
        JSON.stringify({
          name: "short blocks",
          preset: "recommended",
          retrieval: { resultLimit: 1 },
          context: { maxTokens: 2000 },
          blockedDomains: ["access-policies"],
          timeoutMs: 500,
        }),
      );
      const query = await run(["query", "settings", "--kb", "kb", "--config", file, "--json"]);
      expect(query.stderr).toBe("");
      expect(query.code).toBe(0);
      const report = JSON.parse(query.stdout);
      expect(report.preset).toBe("recommended");
      expect(report.retrieval.resultLimit).toBe(1);
      expect(report.blockedDomains).toEqual(["access-policies"]);

      const ask = await run(["ask", "policy types", "--kb", "kb", "--config", file, "--offline", "--json"]);
      expect(ask.code).toBe(0);
      // The config's blocked domain holds the only policy entry.
      expect(JSON.parse(ask.stdout).selectedIds).not.toContain("policies.policy-types");

      const evaluation = await run(["eval", "--kb", "kb", "--config", file, "--json"]);
      expect(evaluation.code).toBe(0);
      expect(
        JSON.parse(evaluation.stdout).configurations.map(
          (configuration: { name: string }) => configuration.name,
        ),
      ).toEqual(["default", "short blocks"]);

      const help = (await run(["query", "--help"])).stdout.replace(/\s+/g, " ");
      expect(help).toContain("one format for query, ask, mcp and eval");
      const mcp = await runMcp(["--kb", "kb", "--config", file], fixtures);
      expect(mcp.code).toBe(0);
      expect(mcp.stderr).toMatch(/^lexground mcp: serving 6 entries \(4 active, 1 in scope,/);
    });
  });

  it("the README's config files work as written with every command", async () => {
    const blocks = await readmeConfigBlocks();
    expect(blocks.length).toBeGreaterThanOrEqual(2);
    await withTemporaryDirectory(async (directory) => {
      for (const [index, text] of blocks.entries()) {
        const file = join(directory, `readme-${index}.json`);
        await writeFile(file, text);
        expect(() => parseConfigText(text, file)).not.toThrow();
        for (const argv of [
          ["query", "policy types", "--kb", "kb", "--config", file],
          ["ask", "policy types", "--kb", "kb", "--config", file, "--offline"],
          ["eval", "--kb", "kb", "--config", file],
        ]) {
          const result = await run(argv);
          expect({ argv, code: result.code, stderr: result.stderr }).toEqual({ argv, code: 0, stderr: "" });
        }
        expect((await runMcp(["--kb", "kb", "--config", file], fixtures)).code).toBe(0);
      }
    });
  });

  it("a file that is not a config says what is wrong, and where a misplaced option goes (exit 2)", async () => {
    await withTemporaryDirectory(async (directory) => {
      const cases: [unknown, string][] = [
        [{ analyzer: "english" }, '"analyzer" is a retrieval option: write it inside "retrieval"'],
        [{ maxTokens: 100 }, '"maxTokens" is a context option: write it inside "context"'],
        [{ sources: [] }, '"sources" does not belong in a config file'],
        [{ retreival: {} }, `unknown config key "retreival" (known: ${CONFIG_FILE_KEYS.join(", ")})`],
        [[1], "a config file must be a JSON object"],
        [{ name: "" }, '"name" must be a non-empty string'],
      ];
      for (const [value, message] of cases) {
        const file = join(directory, "config.json");
        await writeFile(file, JSON.stringify(value));
        const result = await run(["query", "x", "--kb", "kb", "--config", file]);
        expect(result.code).toBe(2);
        expect(result.stderr.split("\n")[0]).toBe(`error: ${file}: ${message}`);
      }
      const misplaced = await run(["query", "x", "--kb", "kb", "--config", '{"k1": 1}']);
      expect(misplaced.code).toBe(2);
    });
  });
});

describe("errors name the place and exit 2 for usage", () => {
  it("malformed JSON names line and column and never suggests YAML for a .json file", async () => {
    await withTemporaryDirectory(async (directory) => {
      await writeFile(join(directory, "config.json"), '{\n  "retrieval": {\n    "resultLimit": 5,\n  }\n}\n');
      const config = await run(["query", "x", "--kb", join(fixtures, "kb"), "--config", "config.json"], {
        cwd: directory,
      });
      expect(config.code).toBe(2);
      expect(config.stderr).toBe(
        "error: config.json:4:3: malformed JSON: Expected double-quoted property name\nhint: fix the JSON syntax there: a missing comma or quote, a trailing comma, a comment, an unquoted key\n",
      );
      const inline = await run(["eval", "--kb", join(fixtures, "kb"), "--config", '{"name": "x",}'], {
        cwd: directory,
      });
      expect(inline.code).toBe(2);
      expect(inline.stderr.split("\n")[0]).toBe(
        "error: --config #1:1:14: malformed JSON: Expected double-quoted property name",
      );

      await mkdir(join(directory, "entries"));
      await writeFile(join(directory, "entries", "entry.json"), '{\n  "id": "a.b",\n  "title": "A" "B"\n}\n');
      const build = await run(["build", "entries"], { cwd: directory });
      expect(build.code).toBe(1);
      expect(build.stderr).toBe(
        "error: entries/entry.json:3:16: malformed JSON: Expected ',' or '}' after property value\nhint: fix the JSON syntax there: a missing comma or quote, a trailing comma, a comment, an unquoted key\n",
      );
      for (const result of [config, inline, build]) expect(result.stderr).not.toMatch(/YAML/);
    });
  });

  it("--kb pointing at JSON that is not a manifest says 'not a knowledge manifest'", async () => {
    await withTemporaryDirectory(async (directory) => {
      await writeFile(join(directory, "entry.json"), JSON.stringify({ id: "a.b", title: "A B" }));
      await writeFile(join(directory, "list.json"), JSON.stringify([{ id: "a.b" }]));
      await writeFile(
        join(directory, "questions.json"),
        JSON.stringify([{ question: "q", expected: ["a"] }]),
      );
      for (const [file, why] of [
        ["entry.json", 'no "catalogs" key (it looks like an entry file)'],
        ["list.json", "a JSON array (a list of entries?), not an object"],
        ["questions.json", "a JSON array (a list of entries?), not an object"],
      ]) {
        for (const argv of [["query", "a"], ["ask", "a"], ["eval"]]) {
          const result = await run([...argv, "--kb", file!], { cwd: directory });
          expect(result.code).toBe(1);
          expect(result.stderr.split("\n")[0]).toBe(`error: ${file}: not a knowledge manifest: ${why}`);
        }
      }
      // An entry file is still a build input.
      expect((await run(["build", "entry.json"], { cwd: directory })).code).not.toBe(2);
    });
  });

  it("usage errors exit 2: a missing --config, --queries or --qrels file, an unknown --provider", async () => {
    const missingConfig = await run(["query", "x", "--kb", "kb", "--config", "nope.json"]);
    expect(missingConfig.code).toBe(2);
    expect(missingConfig.stderr.split("\n")[0]).toBe("error: nope.json: config file not found");
    const missingQueries = await run(["eval", "--kb", "kb", "--queries", "nope.json"]);
    expect(missingQueries.code).toBe(2);
    expect(missingQueries.stderr.split("\n")[0]).toBe("error: nope.json: --queries file not found");
    const missingQrels = await run(["eval", "--kb", "beir", "--qrels", "nope.tsv"]);
    expect(missingQrels.code).toBe(2);
    expect(missingQrels.stderr.split("\n")[0]).toBe("error: nope.tsv: --qrels file not found");
    const provider = await run(["ask", "x", "--kb", "kb", "--provider", "nope"]);
    expect(provider.code).toBe(2);
  });

  it("with --json, errors are JSON on stdout as well", async () => {
    const config = await run(["query", "x", "--kb", "kb", "--config", "nope.json", "--json"]);
    expect(config.code).toBe(2);
    expect(config.stderr).toContain("error: nope.json: config file not found");
    expect(JSON.parse(config.stdout)).toEqual({
      error: {
        code: "not-found",
        message: "nope.json: config file not found",
        hint: expect.any(String),
        file: "nope.json",
        exitCode: 2,
      },
    });
    const missingKb = JSON.parse((await run(["query", "x", "--kb", "nowhere", "--json"])).stdout);
    expect(missingKb.error).toMatchObject({ code: "not-found", file: "nowhere", exitCode: 1 });
    const invalid = JSON.parse((await run(["query", "x", "--kb", "invalid", "--json"])).stdout);
    expect(invalid.error.code).toBe("invalid-knowledge-base");
    expect(invalid.error.issues.length).toBeGreaterThan(0);
    const queries = JSON.parse(
      (await run(["eval", "--kb", "kb", "--queries", "nope.json", "--json"])).stdout,
    );
    expect(queries.error).toMatchObject({ code: "not-found", exitCode: 2 });
    const unknownFlag = await run(["validate", "kb", "--frobnicate", "--json"]);
    expect(unknownFlag.code).toBe(2);
    expect(JSON.parse(unknownFlag.stdout).error).toMatchObject({
      code: "usage",
      message: "unknown option '--frobnicate'",
      exitCode: 2,
    });
    await withTemporaryDirectory(async (directory) => {
      await writeFile(join(directory, "broken.json"), '{\n  "catalogs": [\n');
      const validate = await run(["validate", "broken.json", "--json"], { cwd: directory });
      expect(validate.code).toBe(1);
      expect(JSON.parse(validate.stdout).error).toMatchObject({
        code: "json-syntax",
        file: "broken.json",
        line: 3,
        column: 1,
        exitCode: 1,
      });
    });
    // Without --json nothing is printed on stdout, and an argument after -- is not a flag.
    expect((await run(["query", "x", "--kb", "nowhere"])).stdout).toBe("");
  });
});

describe("validate reports every problem in one run", () => {
  it("malformed YAML, a stray Markdown file, malformed JSON and a bad catalog.yaml are issues among the others", async () => {
    await withTemporaryDirectory(async (directory) => {
      const kb = join(directory, "kb");
      await mkdir(join(kb, "billing"), { recursive: true });
      await mkdir(join(kb, "support"), { recursive: true });
      const entry = (id: string, extra = "") =>
        `---\nid: ${id}\ntitle: ${id.replace(".", " ")} entry\nsummary: About ${id}.\ndomain: d\nintegrations: []\n${extra}---\nBody.\n`;
      await writeFile(join(kb, "billing", "catalog.yaml"), "id: billing\n");
      await writeFile(join(kb, "billing", "good.md"), entry("billing.good"));
      await writeFile(join(kb, "billing", "broken.md"), entry("billing.broken", "keywords: a: b\n"));
      await writeFile(join(kb, "billing", "notes.md"), "# Notes\n\nNo front matter.\n");
      await writeFile(join(kb, "billing", "list.json"), '[\n  {"id": "billing.json",}\n]\n');
      await writeFile(
        join(kb, "billing", "untitled.md"),
        "---\nid: billing.untitled\nsummary: s\ndomain: d\nintegrations: []\n---\n",
      );
      await writeFile(join(kb, "support", "catalog.yaml"), "id: [support\n");
      await writeFile(join(kb, "support", "reachable.md"), entry("support.reachable"));

      const result = await run(["validate", "kb"], { cwd: directory });
      expect(result.code).toBe(1);
      expect(result.stderr).toBe("");
      const errors = result.stdout.split("\n").filter((line) => line.includes(": error: "));
      expect(errors.map((line) => line.replace(/: error: .*\[/, " [").replace(/\].*$/, "]"))).toEqual([
        "kb/billing/broken.md:7 [yaml-syntax]",
        "kb/billing/list.json:2:25 [json-syntax]",
        "kb/billing/notes.md:1 [missing-front-matter]",
        "kb/billing/untitled.md:2 [missing-title]",
        "kb/support/catalog.yaml:2 [yaml-syntax]",
      ]);
      // The hint of a file that could not be compiled follows it.
      expect(result.stdout).toContain(
        "kb/billing/notes.md:1: error: no YAML front matter (the file must start with ---) [missing-front-matter]\n  hint: start the file",
      );
      // The support folder's entries are still read (as a catalog named after the folder), and counted.
      expect(result.stdout).toMatch(/✖ 5 errors, \d+ warnings?: 3 entries in 2 catalogs\n$/);

      const json = JSON.parse((await run(["validate", "kb", "--json"], { cwd: directory })).stdout);
      expect(json.errorCount).toBe(5);
      expect(json.issues.find((issue: { code: string }) => issue.code === "json-syntax")).toMatchObject({
        level: "error",
        file: "kb/billing/list.json",
        line: 2,
        column: 25,
        hint: expect.stringContaining("fix the JSON syntax"),
      });
    });
  });

  it("a folder whose every file is broken still lists them all", async () => {
    await withTemporaryDirectory(async (directory) => {
      await writeFile(join(directory, "a.md"), "no front matter\n");
      await writeFile(join(directory, "b.yaml"), "id: [x\n");
      const result = await run(["validate", "."], { cwd: directory });
      expect(result.code).toBe(1);
      expect(result.stdout).toContain("a.md:1: error: no YAML front matter");
      expect(result.stdout).toContain("b.yaml:2: error: malformed YAML");
      expect(result.stdout).toMatch(/✖ 2 errors, 0 warnings: 0 entries in 1 catalog\n$/);
    });
  });
});

describe("eval checks its questions", () => {
  it("warns loudly about expected ids that do not exist or are never retrieved", async () => {
    await withTemporaryDirectory(async (directory) => {
      await writeFile(
        join(directory, "questions.json"),
        JSON.stringify([
          { question: "policy types", expected: ["policies.policy-types"] },
          { question: "approval policy", expected: ["policies.draft-approval", "policies.typo"] },
          { question: "legacy timeout", expected: ["settings.legacy-timeout"] },
          { question: "session timeout", expected: ["settings.session-timeout", "policies.typo"] },
        ]),
      );
      const result = await run(["eval", "--kb", join(fixtures, "kb"), "--queries", "questions.json"], {
        cwd: directory,
      });
      expect(result.code).toBe(0);
      expect(result.stderr).toBe(
        "warning: 1 expected id is not in the knowledge base (a typo, or a removed entry): policies.typo (q2, q4)\n" +
          "warning: 2 expected ids are draft or deprecated, never retrieved: policies.draft-approval (draft; q2), settings.legacy-timeout (deprecated; q3)\n" +
          "warning: 2 queries have no retrievable expected entry and score 0 in every configuration: q2, q3\n",
      );
      const json = JSON.parse(
        (
          await run(["eval", "--kb", join(fixtures, "kb"), "--queries", "questions.json", "--json"], {
            cwd: directory,
          })
        ).stdout,
      );
      expect(json.expectedIds).toEqual({
        unknown: [{ id: "policies.typo", queries: ["q2", "q4"] }],
        notRetrievable: [
          { id: "policies.draft-approval", status: "draft", queries: ["q2"] },
          { id: "settings.legacy-timeout", status: "deprecated", queries: ["q3"] },
        ],
        unanswerable: ["q2", "q3"],
      });
    });
    // Nothing to say about a clean questions file.
    expect((await run(["eval", "--kb", "kb"])).stderr).toBe("");
  });

  it("a questions file given as a single object is reported as such, not as a BEIR file", async () => {
    await withTemporaryDirectory(async (directory) => {
      await writeFile(
        join(directory, "one.json"),
        JSON.stringify({ question: "policy types", expected: ["policies.policy-types"] }, null, 2),
      );
      await writeFile(join(directory, "wrapped.json"), JSON.stringify({ questions: [] }));
      await writeFile(join(directory, "broken.json"), '[\n  {"question": "x", "expected": ["a"]}\n  {}\n]');
      const single = await run(["eval", "--kb", join(fixtures, "kb"), "--queries", "one.json"], {
        cwd: directory,
      });
      expect(single.code).toBe(1);
      expect(single.stderr).toBe(
        'error: one.json: is a single question object; a question file is a JSON array of questions\nhint: wrap it in [ ]: [{"question": "...", "expected": ["entry.id"]}]\n',
      );
      const wrapped = await run(["eval", "--kb", join(fixtures, "kb"), "--queries", "wrapped.json"], {
        cwd: directory,
      });
      expect(wrapped.stderr.split("\n")[0]).toBe(
        "error: wrapped.json: is a JSON object (keys: questions); a question file is a JSON array of questions",
      );
      const broken = await run(["eval", "--kb", join(fixtures, "kb"), "--queries", "broken.json"], {
        cwd: directory,
      });
      expect(broken.stderr.split("\n")[0]).toBe(
        "error: broken.json:3: malformed JSON at column 3: Expected ',' or ']' after array element",
      );
      // A one-line BEIR queries file is still BEIR.
      await writeFile(join(directory, "queries.jsonl"), '{"_id": "q1", "text": "policy types"}\n');
      await writeFile(join(directory, "qrels.tsv"), "q1\tpolicies.policy-types\t1\n");
      const beir = await run(
        ["eval", "--kb", join(fixtures, "kb"), "--queries", "queries.jsonl", "--qrels", "qrels.tsv"],
        { cwd: directory },
      );
      expect(beir.code).toBe(0);
    });
  });
});
