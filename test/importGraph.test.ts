/**
 * The rooms of `src/` and which way they may point: the engine (`src/knowledge/`) is the centre and imports only
 * itself and the public types, so every other room (the loader, the CLI, the client, the integrations) can build
 * on it and none can leak into it. Checked on every import, type-only and dynamic ones included.
 */
import { readdirSync } from "node:fs";
import { join, relative } from "node:path";
import { describe, expect, it } from "vitest";
import { importsOf, reachFrom, repositoryRoot } from "./support/importGraph.js";

/** The non-test source files of a folder under the repository root, recursively. */
function sourceFiles(folder: string): string[] {
  return readdirSync(join(repositoryRoot, folder), { recursive: true, encoding: "utf8" })
    .filter((name) => name.endsWith(".ts") && !name.endsWith(".test.ts"))
    .map((name) => join(repositoryRoot, folder, name));
}

const shown = (file: string) => relative(repositoryRoot, file).split("\\").join("/");

describe("import graph", () => {
  it("src/knowledge/ imports only itself and src/types/, and no package", () => {
    const files = sourceFiles("src/knowledge");
    expect(files.length).toBeGreaterThan(10);
    const outside: string[] = [];
    for (const file of files) {
      for (const imported of importsOf(file)) {
        const target = imported.file ? shown(imported.file) : imported.specifier;
        if (!/^src\/(knowledge|types)\//.test(target)) {
          outside.push(`${shown(file)} → ${imported.specifier} (${imported.kind})`);
        }
      }
    }
    expect(outside).toEqual([]);
  });

  it("the walker classifies imports as the build treats them, and resolves relative ones to source files", () => {
    // lexground/ai-sdk/tool: `ai` for types only, the engine helpers at run time.
    const tool = importsOf(join(repositoryRoot, "src/integrations/aiSdkTool.ts"));
    expect(tool).toContainEqual({ specifier: "ai", kind: "type" });
    expect(tool).toContainEqual({
      specifier: "./engine.js",
      kind: "static",
      file: join(repositoryRoot, "src/integrations/engine.ts"),
    });
    // The CLI's main loads its commands with import().
    expect(
      importsOf(join(repositoryRoot, "src/cli/main.ts")).filter((each) => each.kind === "dynamic"),
    ).not.toEqual([]);
    // Following static imports only, the root reaches the engine and nothing of the CLI.
    const root = reachFrom("src/index.ts", ["static"]);
    expect(root.files).toContain("src/knowledge/engine.ts");
    expect([...root.files].filter((file) => file.startsWith("src/cli/"))).toEqual([]);
  });

  it("the root export never loads the Node-only OpenTelemetry lookup, the loader, the client or an integration", () => {
    const { files } = reachFrom("src/index.ts", ["static", "dynamic"]);
    expect(
      [...files].filter((file) => !/^src\/(index\.ts|knowledge\/|types\/|peerDependency\.ts$)/.test(file)),
    ).toEqual([]);
  });
});
