/**
 * Optional peers stay optional: the packages each entry point loads at run time, found by transpiling every module
 * it reaches (type-only imports vanish, as they do in the build) and collecting the bare specifiers left.
 */
import { readFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";
import { describe, expect, it } from "vitest";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "../..");

const SPECIFIER = /(?:\bfrom\s*|\bimport\s*\(?\s*)["']([^"']+)["']/g;

const transpiled = new Map<string, string>();
function transpile(file: string): string {
  let output = transpiled.get(file);
  if (output === undefined) {
    output = ts.transpileModule(readFileSync(file, "utf8"), {
      compilerOptions: {
        module: ts.ModuleKind.ESNext,
        target: ts.ScriptTarget.ES2022,
        verbatimModuleSyntax: true,
        removeComments: true,
      },
    }).outputText;
    transpiled.set(file, output);
  }
  return output;
}

/** Packages (bare specifiers) loaded at run time by `entry` and every relative module it reaches. */
function runtimePackages(entry: string): Set<string> {
  const packages = new Set<string>();
  const seen = new Set<string>();
  const pending = [resolve(root, entry)];
  while (pending.length > 0) {
    const file = pending.pop()!;
    if (seen.has(file)) continue;
    seen.add(file);
    const output = transpile(file);
    for (const match of output.matchAll(SPECIFIER)) {
      const specifier = match[1]!;
      if (specifier.startsWith(".")) pending.push(resolve(dirname(file), specifier.replace(/\.js$/, ".ts")));
      else packages.add(specifier);
    }
  }
  return packages;
}

function frameworks(packages: Set<string>): string[] {
  return [...packages].filter((name) => !name.startsWith("node:")).sort();
}

describe("run-time imports of the entry points", () => {
  it("the collector sees run-time imports and ignores type-only ones", () => {
    expect(frameworks(runtimePackages("src/integrations/aiSdkTool.ts"))).toEqual(["ai", "zod"]);
  });

  it("lexground (the root) loads no AI SDK and no LangChain", () => {
    expect(frameworks(runtimePackages("src/index.ts"))).toEqual([]);
  });

  it("lexground/ai-sdk loads neither ai nor @ai-sdk/provider (types only)", () => {
    expect(frameworks(runtimePackages("src/integrations/aiSdk.ts"))).toEqual([]);
  });

  it("lexground/langchain loads only @langchain/core", () => {
    const packages = frameworks(runtimePackages("src/integrations/langchain.ts"));
    expect(packages.length).toBeGreaterThan(0);
    expect(packages.every((name) => name.startsWith("@langchain/core/"))).toBe(true);
  });
});
