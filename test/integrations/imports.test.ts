/**
 * Optional peers stay optional: the packages each entry point loads at run time, found by walking the import
 * graph of the sources (type-only imports vanish, as they do in the build) and collecting the bare specifiers.
 */
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { importsOf, reachFrom, repositoryRoot as root } from "../support/importGraph.js";

/**
 * Packages (bare specifiers) loaded at run time by `entry` and every relative module it reaches; with
 * `staticOnly`, only those loaded when the entry is imported (dynamic `import()`s are neither collected nor followed).
 */
function runtimePackages(entry: string, staticOnly = false): Set<string> {
  return reachFrom(entry, staticOnly ? ["static"] : ["static", "dynamic"]).packages;
}

function frameworks(packages: Set<string>): string[] {
  return [...packages].filter((name) => !name.startsWith("node:")).sort();
}

describe("run-time imports of the entry points", () => {
  it("the collector sees run-time imports and ignores type-only ones", () => {
    // The MCP command imports its SDK and zod at run time; the tool module imports `ai` for its types only.
    expect(frameworks(runtimePackages("src/cli/commands/mcp.ts"))).toEqual(
      expect.arrayContaining(["@modelcontextprotocol/sdk/server/mcp.js", "zod"]),
    );
    expect(importsOf(resolve(root, "src/integrations/aiSdkTool.ts"))).toContainEqual({
      specifier: "ai",
      kind: "type",
    });
  });

  it("lexground/ai-sdk/tool loads neither ai nor zod (a Standard Schema stands in for zod, types only)", () => {
    expect(frameworks(runtimePackages("src/integrations/aiSdkTool.ts"))).toEqual([]);
  });

  it("lexground (the root) loads no AI SDK and no LangChain", () => {
    expect(frameworks(runtimePackages("src/index.ts"))).toEqual([]);
  });

  it("lexground (the root) imports no node: built-in, so it runs in browsers and edge runtimes unchanged", () => {
    expect([...runtimePackages("src/index.ts")].filter((name) => name.startsWith("node:"))).toEqual([]);
    // Bare built-in names too ("crypto", "fs"): nothing at all is imported by the root.
    expect([...runtimePackages("src/index.ts")]).toEqual([]);
  });

  it("lexground/ai-sdk loads neither ai nor @ai-sdk/provider (types only)", () => {
    expect(frameworks(runtimePackages("src/integrations/aiSdk.ts"))).toEqual([]);
  });

  it("lexground/langchain loads only @langchain/core", () => {
    const packages = frameworks(runtimePackages("src/integrations/langchain.ts"));
    expect(packages.length).toBeGreaterThan(0);
    expect(packages.every((name) => name.startsWith("@langchain/core/"))).toBe(true);
  });

  it("lexground/files loads only yaml", () => {
    expect(frameworks(runtimePackages("src/files/index.ts"))).toEqual(["yaml"]);
  });

  it("lexground/neurolink loads nothing when imported; ai, providers and redis load on first use", () => {
    expect(frameworks(runtimePackages("src/neurolink/index.ts", true))).toEqual([]);
    expect(frameworks(runtimePackages("src/neurolink/index.ts"))).toEqual([
      "@ai-sdk/anthropic",
      "@ai-sdk/google",
      "@ai-sdk/openai",
      "@ai-sdk/openai-compatible",
      "ai",
      "redis",
    ]);
  });

  it("lexground/langchain imports @langchain/core only through its typed loader", () => {
    expect(frameworks(runtimePackages("src/integrations/langchain.ts", true))).toEqual([]);
  });

  it("every package an entry point or the CLI loads is a dependency or a peer of the package", () => {
    const manifest = JSON.parse(readFileSync(resolve(root, "package.json"), "utf8")) as {
      exports: Record<string, string | Record<string, string>>;
      bin: Record<string, string>;
      dependencies: Record<string, string>;
      peerDependencies: Record<string, string>;
    };
    const entries = [
      ...Object.values(manifest.exports).flatMap((target) =>
        typeof target === "object"
          ? Object.entries(target)
              // Node's entry of the root export is written by the build from the default one (the same imports).
              .filter(([condition, path]) => condition !== "node-addons" && path.endsWith(".js"))
              .map(([, path]) => path)
          : [],
      ),
      ...Object.values(manifest.bin),
    ].map((target) => target.replace("./dist/", "src/").replace(/\.js$/, ".ts"));
    const declared = new Set([
      ...Object.keys(manifest.dependencies),
      ...Object.keys(manifest.peerDependencies),
    ]);
    // The CLI's commands are imported lazily from main; follow them too.
    const packages = new Set(entries.flatMap((entry) => [...runtimePackages(entry)]));
    const undeclared = frameworks(packages)
      .map((specifier) =>
        specifier
          .split("/")
          .slice(0, specifier.startsWith("@") ? 2 : 1)
          .join("/"),
      )
      .filter((name) => !declared.has(name));
    expect(undeclared).toEqual([]);
  });
});
