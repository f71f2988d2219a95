/**
 * The CLI must stay light: `main` statically reaches only the engine and small CLI libraries; commands are
 * imported when they run; only `ask` reaches the AI SDK (through the client) and only `mcp` the MCP SDK. This walks
 * the static (value) import graph of the sources (test/support/importGraph.ts); `import type` is never followed,
 * and dynamic `import()` only where a test says so.
 */
import { describe, expect, it } from "vitest";
import { packageOf, reachFrom } from "../support/importGraph.js";

/** What `entry` (under src/) loads when it is imported: files relative to src/, packages (`node:` for built-ins). */
function staticGraph(entry: string): { files: Set<string>; packages: Set<string> } {
  const { files, packages } = reachFrom(`src/${entry}`, ["static"]);
  return {
    files: new Set([...files].map((file) => file.replace(/^src\//, ""))),
    packages: new Set(
      [...packages].map((specifier) => (specifier.startsWith("node:") ? "node:" : packageOf(specifier))),
    ),
  };
}

/** Everything `entry` may load at run time, its `import()`s included. */
function runtimeGraph(entry: string): { files: Set<string>; packages: Set<string> } {
  const { files, packages } = reachFrom(`src/${entry}`, ["static", "dynamic"]);
  return {
    files: new Set([...files].map((file) => file.replace(/^src\//, ""))),
    packages: new Set([...packages].map(packageOf)),
  };
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
      expect([...packages].sort()).toEqual(
        command === "build" ? ["node:", "picocolors", "yaml"] : ["node:", "picocolors"],
      );
    }
  });

  it("query, ask and mcp load the file loader (and YAML) only for a knowledge base that is not an artifact", () => {
    for (const command of ["query", "ask", "mcp"]) {
      expect(staticGraph(`cli/commands/${command}.ts`).packages.has("yaml"), command).toBe(false);
      expect(runtimeGraph(`cli/commands/${command}.ts`).files.has("files/compile.ts"), command).toBe(true);
    }
  });

  it("ask and mcp import their heavy dependencies only dynamically", () => {
    const ask = staticGraph("cli/commands/ask.ts");
    expect([...ask.files].filter((file) => file.startsWith("neurolink/"))).toEqual([]);
    expect([...ask.packages].sort()).toEqual(["node:", "picocolors"]);
    const mcp = staticGraph("cli/commands/mcp.ts");
    expect([...mcp.packages].sort()).toEqual(["node:", "picocolors"]);
    // What they load when they run: the client for ask, the MCP SDK for mcp.
    expect(runtimeGraph("cli/commands/ask.ts").files).toContain("neurolink/index.ts");
    expect(runtimeGraph("cli/commands/mcp.ts").packages).toContain("@modelcontextprotocol/sdk");
  });
});
