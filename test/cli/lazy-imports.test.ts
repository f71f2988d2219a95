/**
 * The CLI must stay light: `main` statically reaches only the engine and small CLI libraries; commands are
 * imported when they run; only `ask` reaches the AI SDK (through the client) and only `mcp` the MCP SDK. This walks
 * the static (value) import graph of the sources; `import type` and dynamic `import()` are not followed.
 */
import { readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { describe, expect, it } from "vitest";

const source = resolve(import.meta.dirname, "../../src");
const STATIC_IMPORT = /^\s*(?:import|export)\s+(?!type\s)(?:[^;]*?\s+from\s+)?"([^"]+)"/gms;

function staticGraph(entry: string): { files: Set<string>; packages: Set<string> } {
  const files = new Set<string>();
  const packages = new Set<string>();
  const pending = [resolve(source, entry)];
  while (pending.length > 0) {
    const file = pending.pop()!;
    if (files.has(file)) continue;
    files.add(file);
    const text = readFileSync(file, "utf8");
    for (const match of text.matchAll(STATIC_IMPORT)) {
      const specifier = match[1]!;
      if (specifier.startsWith(".")) pending.push(resolve(dirname(file), specifier.replace(/\.js$/, ".ts")));
      else
        packages.add(
          specifier.startsWith("node:")
            ? "node:"
            : specifier
                .split("/")
                .slice(0, specifier.startsWith("@") ? 2 : 1)
                .join("/"),
        );
    }
  }
  return { files: new Set([...files].map((file) => relative(source, file).split("\\").join("/"))), packages };
}

describe("CLI import graph", () => {
  it("main and bin reach no command implementation and only small libraries", () => {
    for (const entry of ["cli/main.ts", "cli/bin.ts"]) {
      const { files, packages } = staticGraph(entry);
      expect([...files].filter((file) => file.startsWith("cli/commands/"))).toEqual([]);
      expect([...files].filter((file) => file.startsWith("neurolink/"))).toEqual([]);
      expect([...packages].sort()).toEqual(["commander", "node:", "picocolors"]);
    }
  });

  it("build, validate and query reach neither the AI SDK, the client, MCP nor zod", () => {
    for (const command of ["build", "validate", "query"]) {
      const { files, packages } = staticGraph(`cli/commands/${command}.ts`);
      expect([...files].filter((file) => file.startsWith("neurolink/"))).toEqual([]);
      expect([...packages].sort()).toEqual(["node:", "picocolors", "yaml"]);
    }
  });

  it("ask and mcp import their heavy dependencies only dynamically", () => {
    const ask = staticGraph("cli/commands/ask.ts");
    expect([...ask.files].filter((file) => file.startsWith("neurolink/"))).toEqual([]);
    expect([...ask.packages].sort()).toEqual(["node:", "picocolors", "yaml"]);
    const mcp = staticGraph("cli/commands/mcp.ts");
    expect([...mcp.packages].sort()).toEqual(["node:", "picocolors", "yaml"]);
    const askText = readFileSync(join(source, "cli/commands/ask.ts"), "utf8");
    expect(askText).toContain('import("../../neurolink/index.js")');
    const mcpText = readFileSync(join(source, "cli/commands/mcp.ts"), "utf8");
    expect(mcpText).toContain('import("@modelcontextprotocol/sdk/server/mcp.js")');
  });
});
