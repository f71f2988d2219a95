import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { compileKnowledgeBase } from "../../src/files/compile.js";
import { serializeManifest } from "../../src/files/manifest.js";
import { fixtures, run, withTemporaryDirectory } from "./helpers.js";

describe("lexground (no command), --help, --version, unknown commands", () => {
  it("prints help with every command and examples", async () => {
    for (const argv of [[], ["--help"], ["help"]]) {
      const result = await run(argv);
      expect(result.code).toBe(0);
      for (const command of ["build", "validate", "query", "ask", "mcp"])
        expect(result.stdout).toContain(command);
      expect(result.stdout).toContain("Examples:");
    }
  });

  it("every command has --help with examples", async () => {
    for (const command of ["build", "validate", "query", "ask", "mcp"]) {
      const result = await run([command, "--help"]);
      expect(result.code).toBe(0);
      expect(result.stdout).toContain(`Usage: lexground ${command}`);
      expect(result.stdout).toContain("Examples:");
      expect(result.stderr).toBe("");
    }
  });

  it("prints the package version", async () => {
    const { version } = JSON.parse(await readFile(join(fixtures, "../../../package.json"), "utf8"));
    const result = await run(["--version"]);
    expect(result).toEqual({ code: 0, stdout: `${version}\n`, stderr: "" });
  });

  it("an unknown command, an unknown flag and a missing argument are usage errors (exit 2) with a hint", async () => {
    expect(await run(["frob"])).toEqual({
      code: 2,
      stdout: "",
      stderr: "error: unknown command 'frob'\nhint: run 'lexground --help' for usage and examples\n",
    });
    const flag = await run(["validate", "kb", "--frobnicate"]);
    expect(flag.code).toBe(2);
    expect(flag.stderr).toBe(
      "error: unknown option '--frobnicate'\nhint: run 'lexground validate --help' for usage and examples\n",
    );
    expect(await run(["build"])).toEqual({
      code: 2,
      stdout: "",
      stderr:
        "error: missing required argument 'inputs'\nhint: run 'lexground build --help' for usage and examples\n",
    });
    // A question may also come from --file or standard input, so its absence is checked by the command.
    expect(await run(["query"])).toEqual({
      code: 2,
      stdout: "",
      stderr:
        'error: no question given\nhint: pass it as an argument, with --file <path>, or on standard input: echo "refund window" | lexground query --kb kb.json\n',
    });
  });
});

describe("lexground build", () => {
  it("writes the manifest and reports what it built", async () => {
    await withTemporaryDirectory(async (directory) => {
      const output = join(directory, "out", "manifest.json");
      const result = await run(["build", "kb", "-o", output]);
      const expected = (
        await compileKnowledgeBase(["kb"], { cwd: fixtures, env: { SOURCE_DATE_EPOCH: "1767225600" } })
      ).manifest;
      expect(result.code).toBe(0);
      expect(result.stderr).toBe("");
      expect(result.stdout).toBe(
        `✔ wrote ${output}: 2 catalogs, 6 entries, content version ${expected.contentVersion}, generated at 2026-01-01T00:00:00.000Z\n`,
      );
      expect(await readFile(output, "utf8")).toBe(serializeManifest(expected));
    });
  });

  it("shows a progress line and colors only on a terminal", async () => {
    await withTemporaryDirectory(async (directory) => {
      const output = join(directory, "m.json");
      const terminal = await run(["build", "kb", "-o", output], { tty: true, env: { NO_COLOR: undefined } });
      expect(terminal.code).toBe(0);
      const clearLine = "\r\u001b[2K";
      expect(terminal.stderr.startsWith(clearLine)).toBe(true);
      expect(terminal.stderr).toMatch(/reading entry files \d+\/5/);
      expect(terminal.stderr.endsWith(clearLine)).toBe(true);
      expect(terminal.stdout).toContain("\x1b[32m✔\x1b[39m");
      const piped = await run(["build", "kb", "-o", output]);
      expect(piped.stderr).toBe("");
      expect(piped.stdout).not.toContain("\x1b[");
    });
  });

  it("is deterministic: two builds of the same input are byte-identical", async () => {
    await withTemporaryDirectory(async (directory) => {
      const first = join(directory, "first.json");
      const second = join(directory, "second.json");
      expect((await run(["build", "kb", "-o", first])).code).toBe(0);
      expect((await run(["build", "kb/settings", "kb/policies", "-o", second])).code).toBe(0);
      const firstBytes = await readFile(first);
      expect((await readFile(second)).equals(firstBytes)).toBe(true);
    });
  });

  it("prints the manifest on stdout without -o (summary on stderr), and --json summarizes", async () => {
    const piped = await run(["build", "kb", "--content-version", "2026-07-14.1"]);
    expect(piped.code).toBe(0);
    const manifest = JSON.parse(piped.stdout);
    expect(manifest.contentVersion).toBe("2026-07-14.1");
    expect(piped.stderr).toContain("✔ built manifest: 2 catalogs, 6 entries, content version 2026-07-14.1");

    await withTemporaryDirectory(async (directory) => {
      const result = await run(["build", "kb", "-o", join(directory, "m.json"), "--json"]);
      expect(result.code).toBe(0);
      const summary = JSON.parse(result.stdout);
      expect(summary).toMatchObject({
        ok: true,
        written: true,
        entryCount: 6,
        errorCount: 0,
        catalogs: [
          { id: "access-policies", entries: 2 },
          { id: "account-settings", entries: 4 },
        ],
      });
    });
    const noOutput = await run(["build", "kb", "--json"]);
    expect(noOutput).toMatchObject({
      code: 2,
      stderr:
        "error: --json needs --output\nhint: without -o the manifest itself is printed to standard output\n",
    });
    // With --json the error is also JSON on stdout.
    expect(JSON.parse(noOutput.stdout)).toEqual({
      error: {
        code: "usage",
        message: "--json needs --output",
        hint: "without -o the manifest itself is printed to standard output",
        exitCode: 2,
      },
    });
  });

  it("refuses to write a manifest with validation errors, naming each at file:line", async () => {
    await withTemporaryDirectory(async (directory) => {
      const output = join(directory, "bad.json");
      const result = await run(["build", "invalid", "-o", output]);
      expect(result.code).toBe(1);
      expect(result.stdout).toBe("");
      expect(result.stderr).toBe(
        [
          'invalid/bad-kind.md:7: error: kind "recipe" of entry "invalid.bad-kind" is not one of concept, text, configuration, tool, procedure, policy, troubleshooting [bad-kind] (entry invalid.bad-kind, field kind)',
          'invalid/missing-title.md:2: error: entry "invalid.missing-title" has no title [missing-title] (entry invalid.missing-title, field title)',
          "error: not written: 2 validation errors in invalid",
          "hint: fix the errors above (or pass --force to write anyway); 'lexground validate' lists warnings too",
          "",
        ].join("\n"),
      );
      await expect(readFile(output)).rejects.toThrow(/ENOENT/);
      const forced = await run(["build", "invalid", "-o", output, "--force"]);
      expect(forced.code).toBe(0);
      expect(JSON.parse(await readFile(output, "utf8")).catalogs[0].entries).toHaveLength(5);
    });
  });

  it("malformed YAML, missing front matter and missing paths fail with one line and a hint", async () => {
    expect(await run(["build", "bad-yaml"])).toEqual({
      code: 1,
      stdout: "",
      stderr:
        "error: bad-yaml/broken.md:4: malformed YAML: Nested mappings are not allowed in compact mappings\n" +
        "hint: fix the YAML syntax (indentation, quoting, unique keys); quote values that contain ': ' or start with '['\n",
    });
    expect(await run(["build", "no-front-matter"])).toEqual({
      code: 1,
      stdout: "",
      stderr:
        "error: no-front-matter/plain.md:1: no YAML front matter (the file must start with ---)\n" +
        "hint: start the file with a '---' line, the entry's fields (id, title, summary, domain, integrations), and a closing '---' line\n",
    });
    expect(await run(["build", "nowhere", "-o", "x.json"])).toEqual({
      code: 1,
      stdout: "",
      stderr:
        "error: nowhere: no such file or directory\nhint: check the path; it is resolved against the current directory\n",
    });
    const version = await run(["build", "kb", "--content-version", "a b"]);
    expect(version.code).toBe(1);
    expect(version.stderr).toBe(
      `error: content version "a b" must be non-empty without spaces, '[', ']' or '@'\nhint: citations are rendered as [KB:id@version]; use e.g. 2026-07-14.1\n`,
    );
  });
});

describe("lexground validate", () => {
  it("passes a clean knowledge base (exit 0)", async () => {
    const result = await run(["validate", "kb"]);
    expect(result).toEqual({
      code: 0,
      stdout:
        "kb/questions.json: info: not inside a catalog folder; ignored [ignored-file]\n✔ no issues: 6 entries in 2 catalogs\n",
      stderr: "",
    });
  });

  it("reports errors and author warnings with file:line, entry and field, and exits 1", async () => {
    const result = await run(["validate", "invalid"]);
    expect(result.code).toBe(1);
    expect(result.stderr).toBe("");
    expect(result.stdout.split("\n")).toEqual([
      'invalid/bad-kind.md:7: error: kind "recipe" of entry "invalid.bad-kind" is not one of concept, text, configuration, tool, procedure, policy, troubleshooting [bad-kind] (entry invalid.bad-kind, field kind)',
      'invalid/bad-kind.md:8: warning: entry "invalid.bad-kind" relates to missing entry "invalid.nowhere" [broken-relation] (entry invalid.bad-kind, field relatedEntryIds)',
      'invalid/lints.yaml:2: warning: title "Export" is one word: every query containing "export" matches it exactly (+exact boost, high confidence); use a more specific title [one-word-title] (entry invalid.export, field title)',
      'invalid/lints.yaml:7: warning: title "Export Data" is also the title of invalid.export-copy: a query containing it gives both the exact boost [title-collision] (entry invalid.export-data, field title)',
      'invalid/lints.yaml:11: warning: alias "export" is the title of invalid.export: a query containing it ranks invalid.export higher (exact boost beats alias boost) [alias-shadowed] (entry invalid.export-data, field aliases)',
      'invalid/missing-title.md:2: error: entry "invalid.missing-title" has no title [missing-title] (entry invalid.missing-title, field title)',
      "✖ 2 errors, 4 warnings: 5 entries in 1 catalog",
      "",
    ]);
  });

  it("--json gives every issue with its location; --strict fails on warnings", async () => {
    const result = await run(["validate", "invalid", "--json"]);
    expect(result.code).toBe(1);
    const report = JSON.parse(result.stdout);
    expect(report).toMatchObject({ ok: false, errorCount: 2, warningCount: 4, entryCount: 5 });
    expect(report.issues[0]).toEqual({
      level: "error",
      code: "bad-kind",
      message:
        'kind "recipe" of entry "invalid.bad-kind" is not one of concept, text, configuration, tool, procedure, policy, troubleshooting',
      entryId: "invalid.bad-kind",
      sourceId: "invalid",
      path: "sources[0].entries[0].kind",
      field: "kind",
      file: "invalid/bad-kind.md",
      line: 7,
    });
    const flat = await run(["validate", "flat"]);
    expect(flat.code).toBe(0);
    expect(flat.stdout).toContain('flat/alpha.md:2: warning: id "alpha" is one word');
    expect((await run(["validate", "flat", "--strict"])).code).toBe(1);
  });

  it("locates issues inside a manifest file by line", async () => {
    await withTemporaryDirectory(async (directory) => {
      const manifest = {
        schemaVersion: "1",
        contentVersion: "v1",
        generatedAt: "2026-01-01T00:00:00.000Z",
        catalogs: [
          {
            id: "c",
            entries: [
              { id: "c.ok", title: "Fine Entry", summary: "Fine.", domain: "d", integrations: [] },
              { id: "c.bad", title: 42, summary: "Bad title type.", domain: "d", integrations: [] },
            ],
          },
        ],
      };
      await writeFile(join(directory, "manifest.json"), JSON.stringify(manifest, null, 2));
      const result = await run(["validate", "manifest.json", "--json"], { cwd: directory });
      expect(result.code).toBe(1);
      const issues = JSON.parse(result.stdout).issues;
      expect(issues).toHaveLength(1);
      expect(issues[0]).toMatchObject({
        level: "error",
        file: "manifest.json",
        line: 18,
        entryId: "c.bad",
        field: "title",
        path: "sources[0].entries[1].title",
      });
    });
  });

  it("a malformed JSON manifest and malformed YAML are one-line errors", async () => {
    await withTemporaryDirectory(async (directory) => {
      await writeFile(join(directory, "broken.json"), '{\n  "catalogs": [\n');
      const result = await run(["validate", "broken.json"], { cwd: directory });
      expect(result.code).toBe(1);
      // Line and column of the end of the text, and no suggestion to write a .json file as YAML.
      expect(result.stderr).toBe(
        "error: broken.json:3:1: malformed JSON: Unexpected end of JSON input\nhint: fix the JSON syntax there: a missing comma or quote, a trailing comma, a comment, an unquoted key\n",
      );
    });
    // In a folder, a file that cannot be compiled is reported like any other issue (see the issue 13 tests).
    const yaml = await run(["validate", "bad-yaml"]);
    expect(yaml.code).toBe(1);
    expect(yaml.stdout.split("\n")[0]).toBe(
      "bad-yaml/broken.md:4: error: malformed YAML: Nested mappings are not allowed in compact mappings [yaml-syntax]",
    );
  });
});
