/**
 * The package a user installs (issue 13, "done when"): what `npm pack` ships, and the tarball installed into an
 * empty project running the engine from the root export, the file loader, the CLI's build and query,
 * `require("lexground")` from CommonJS, typed errors for missing optional peers, the AI SDK entry points without
 * `ai`, and the installed root export bundled for the browser and run in headless Chromium.
 */
import { execFile } from "node:child_process";
import { readdirSync, readFileSync, realpathSync, statSync } from "node:fs";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";
import type { Plugin } from "vite";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  BROWSER_PAGE,
  bundleForBrowser,
  expectPageMatchesNode,
  runPageInChromium,
} from "../browser/bundle.js";
import { chromiumAvailable } from "../support/chromium.js";
import { type InstalledPackage, installPackedPackage, repositoryRoot } from "./packed.js";

const execute = promisify(execFile);
const npx = process.platform === "win32" ? "npx.cmd" : "npx";

let installed: InstalledPackage;

beforeAll(async () => {
  installed = await installPackedPackage();
}, 600_000);

afterAll(async () => {
  await installed?.remove();
});

const ENTRY = (id: string, title: string, body: string) =>
  `---\nid: ${id}\ntitle: ${title}\nsummary: ${title}.\ndomain: docs\nintegrations: []\n---\n${body}\n`;

describe.sequential("the packed package", () => {
  it("ships the built package, its types, README and LICENSE, and nothing else", () => {
    const paths = installed.files.map((file) => file.path).sort();
    for (const required of [
      "LICENSE",
      "README.md",
      "package.json",
      "dist/index.js",
      "dist/index.d.ts",
      "dist/files/index.js",
      "dist/files/index.d.ts",
      "dist/cli/bin.js",
      "dist/neurolink/index.js",
      "dist/integrations/langchain.js",
      "dist/integrations/langchainRetriever.js",
      "dist/knowledge/rootChunk.node.js",
      "dist/knowledge/rootChunk.script.js",
      "dist/knowledge/rootChunk.cache",
    ]) {
      expect(paths, required).toContain(required);
    }
    const unexpected = paths.filter(
      (path) =>
        !["LICENSE", "README.md", "package.json"].includes(path) &&
        (!path.startsWith("dist/") ||
          /\.test\.|^dist\/eval\/(scripts|results)\/|^dist\/eval\/stemmers\./.test(path) ||
          (!/\.(js|d\.ts|js\.map)$/.test(path) && path !== "dist/knowledge/rootChunk.cache")),
    );
    expect(unexpected).toEqual([]);
  });

  it("ships the CLI executable, with a node shebang, as npm ci also builds it in the repository", () => {
    const bin = installed.files.find((file) => file.path === "dist/cli/bin.js");
    expect((bin?.mode ?? 0) & 0o111, "executable bits in the tarball").toBe(0o111);
    const installedBin = join(installed.project, "node_modules/lexground/dist/cli/bin.js");
    expect(readFileSync(installedBin, "utf8")).toMatch(/^#!\/usr\/bin\/env node\n/);
    // The repository's own build (what `npm ci` runs through prepare, packed above) is executable too, so
    // `npx lexground` works in a fresh clone.
    expect(statSync(join(repositoryRoot, "dist/cli/bin.js")).mode & 0o111).toBe(0o111);
  });

  it("ships source maps that carry their sources", () => {
    const maps = installed.files.filter((file) => file.path.endsWith(".js.map"));
    expect(maps.length).toBeGreaterThan(10);
    const incomplete = maps.filter(({ path }) => {
      const map = JSON.parse(
        readFileSync(join(installed.project, "node_modules/lexground", path), "utf8"),
      ) as { sources: string[]; sourcesContent?: (string | null)[] };
      return (
        map.sourcesContent?.length !== map.sources.length ||
        map.sourcesContent.some((content) => typeof content !== "string" || content.length === 0)
      );
    });
    expect(incomplete.map((file) => file.path)).toEqual([]);
  });

  it("ships JavaScript that is ASCII only (V8 compiles any other file as slower two-byte source)", () => {
    const scripts = installed.files.filter((file) => file.path.endsWith(".js"));
    expect(scripts.length).toBeGreaterThan(10);
    const wide = scripts.filter(({ path }) =>
      /[\u0080-\uffff]/.test(readFileSync(join(installed.project, "node_modules/lexground", path), "utf8")),
    );
    expect(wide.map((file) => file.path)).toEqual([]);
  });

  it("has a LICENSE, package metadata and README links that work on the registry page", () => {
    const manifest = JSON.parse(readFileSync(join(repositoryRoot, "package.json"), "utf8")) as Record<
      string,
      unknown
    >;
    expect(manifest.license).toBe("MIT");
    expect(readFileSync(join(repositoryRoot, "LICENSE"), "utf8")).toMatch(
      /^MIT License\n\nCopyright \(c\) \d{4} /,
    );
    for (const field of ["repository", "homepage", "bugs", "keywords", "author"]) {
      expect(manifest[field], field).toBeTruthy();
    }
    // The registry renders README.md alone: a relative link would point at a file that is not there.
    const readme = readFileSync(join(repositoryRoot, "README.md"), "utf8");
    const relative = [...readme.matchAll(/\]\(([^)]+)\)/g)]
      .map((match) => match[1]!)
      .filter((target) => !/^(https?:|#|mailto:)/.test(target));
    expect(relative).toEqual([]);
  });

  it("installs only its three dependencies", () => {
    const top = readdirSync(join(installed.project, "node_modules"))
      .filter((name) => !name.startsWith("."))
      .sort();
    expect(top).toEqual(["commander", "lexground", "picocolors", "yaml"]);
  });

  it("runs in an empty project: engine, loader, CLI build and query, require(), a missing peer", async () => {
    const { project } = installed;
    const kb = join(project, "kb");
    await mkdir(kb);
    await writeFile(
      join(kb, "refunds.md"),
      ENTRY("docs.refund-window", "Refund window", "Refunds within 30 days."),
    );
    await writeFile(
      join(kb, "payouts.md"),
      ENTRY("docs.instant-payouts", "Instant payouts", "Payouts in minutes."),
    );

    // ESM: the engine from the root export, the loader from lexground/files, a missing optional peer.
    await writeFile(
      join(project, "app.mjs"),
      `import { KnowledgeGroundingEngine, MissingPeerDependencyError } from "lexground";
import { loadKnowledgeBase } from "lexground/files";
const { sources, ok } = await loadKnowledgeBase("kb");
const engine = new KnowledgeGroundingEngine({ enabled: true, sources });
const { metadata } = await engine.ground({ query: "what is the refund window?" });
let langchain = "loaded";
try { await import("lexground/langchain"); } catch (error) {
  langchain = MissingPeerDependencyError.isInstance(error) ? error.packageName : String(error);
}
console.log(JSON.stringify({ ok, selected: metadata.selectedIds, langchain }));
`,
    );
    const esm = await execute(process.execPath, ["app.mjs"], { cwd: project, timeout: 60_000 });
    expect(JSON.parse(esm.stdout)).toEqual({
      ok: true,
      selected: ["docs.refund-window"],
      langchain: "@langchain/core",
    });

    // CommonJS: require("lexground") and require("lexground/files") (require(esm), Node >= 20.19).
    await writeFile(
      join(project, "app.cjs"),
      `const { KnowledgeGroundingEngine } = require("lexground");
const { loadKnowledgeBase } = require("lexground/files");
loadKnowledgeBase("kb").then(async ({ sources }) => {
  const engine = new KnowledgeGroundingEngine({ enabled: true, sources });
  const { metadata } = await engine.ground({ query: "instant payouts" });
  console.log(JSON.stringify(metadata.selectedIds));
});
`,
    );
    const commonJs = await execute(process.execPath, ["app.cjs"], { cwd: project, timeout: 60_000 });
    expect(JSON.parse(commonJs.stdout)).toEqual(["docs.instant-payouts"]);
    expect(commonJs.stderr).toBe("");

    // The CLI through npx, as the README shows it.
    const env = { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "", NO_COLOR: "1" };
    await execute(npx, ["--no-install", "lexground", "build", "kb", "-o", "kb.json"], {
      cwd: project,
      env,
      timeout: 60_000,
    });
    const query = await execute(
      npx,
      ["--no-install", "lexground", "query", "how fast are instant payouts?", "--kb", "kb.json", "--json"],
      { cwd: project, env, timeout: 60_000 },
    );
    const report = JSON.parse(query.stdout) as { selectedIds?: string[]; primary?: { id: string }[] };
    expect(JSON.stringify(report)).toContain("docs.instant-payouts");
  });

  it("without any peer: lexground/neurolink imports and names ai; the middleware and the search tool ground", async () => {
    const { project } = installed;
    await writeFile(
      join(project, "ai-sdk.mjs"),
      `import { KnowledgeGroundingEngine } from "lexground";
import { groundingMiddleware } from "lexground/ai-sdk";
import { searchKnowledgeTool } from "lexground/ai-sdk/tool";
import { NeuroLink } from "lexground/neurolink";
const engine = new KnowledgeGroundingEngine({ enabled: true, sources: [{ id: "docs", version: "1", entries: [
  { id: "docs.refund-window", title: "Refund window", summary: "Refunds within 30 days.", domain: "docs", integrations: [] },
] }] });
const client = new NeuroLink({ env: { OPENAI_API_KEY: "test-key" }, logger: { warn() {}, error() {} } });
let generate = "answered";
try { await client.generate({ input: { text: "hi" }, provider: "openai" }); } catch (error) {
  generate = [error.name, error.setting, error.cause?.name, error.cause?.packageName].join(" ");
}
const tool = searchKnowledgeTool(engine);
const found = await tool.execute({ query: "refund window" }, { toolCallId: "1", messages: [] });
const params = await groundingMiddleware({ engine }).transformParams({ type: "generate", model: {},
  params: { prompt: [{ role: "user", content: [{ type: "text", text: "refund window" }] }] } });
console.log(JSON.stringify({ generate, tool: found.entries.map((entry) => entry.id),
  middleware: params.prompt[0].role === "system" && params.prompt[0].content.includes("[KB:docs.refund-window@1]") }));
`,
    );
    const { stdout } = await execute(process.execPath, ["ai-sdk.mjs"], { cwd: project, timeout: 60_000 });
    expect(JSON.parse(stdout)).toEqual({
      generate: "ProviderNotConfiguredError ai MissingPeerDependencyError ai",
      tool: ["docs.refund-window"],
      middleware: true,
    });
  });

  it("require() loads every entry point; one whose optional peer is missing names that peer", async () => {
    const { project } = installed;
    const manifest = JSON.parse(readFileSync(join(repositoryRoot, "package.json"), "utf8")) as {
      exports: Record<string, unknown>;
      peerDependencies: Record<string, string>;
    };
    const entryPoints = Object.keys(manifest.exports)
      .filter((subpath) => subpath !== "./package.json")
      .map((subpath) => `lexground${subpath.slice(1)}`);
    await writeFile(
      join(project, "require-all.cjs"),
      `const outcomes = {};
for (const name of ${JSON.stringify(entryPoints)}) {
  try { outcomes[name] = Object.keys(require(name)).length > 0 ? "loaded" : "empty"; }
  catch (error) { outcomes[name] = String(error.message).split("\\n")[0]; }
}
console.log(JSON.stringify(outcomes));
`,
    );
    const { stdout } = await execute(process.execPath, ["require-all.cjs"], {
      cwd: project,
      timeout: 60_000,
    });
    const outcomes = JSON.parse(stdout) as Record<string, string>;
    expect(Object.keys(outcomes).sort()).toEqual([...entryPoints].sort());
    const peers = Object.keys(manifest.peerDependencies);
    for (const [name, outcome] of Object.entries(outcomes)) {
      if (outcome === "loaded") continue;
      // Only a missing optional peer may stop an entry point, and the error says which.
      expect(
        peers.some((peer) => outcome.includes(`'${peer}`)),
        `${name}: ${outcome}`,
      ).toBe(true);
    }
    for (const name of ["lexground", "lexground/files", "lexground/neurolink", "lexground/ai-sdk"]) {
      expect(outcomes[name], name).toBe("loaded");
    }
    expect(outcomes["lexground/ai-sdk/tool"]).toBe("loaded");
    expect(outcomes["lexground/langchain"]).toMatch(/Cannot find (?:module|package) '@langchain\/core/);
  });

  it("bundles the installed root export for the browser and grounds a turn in headless Chromium", async (context) => {
    if (!chromiumAvailable("pack", "the browser run of the installed package")) context.skip();
    // The browser page imports the engine from ../../src/index.js; here that import is resolved the way the
    // application's bundler resolves "lexground": from the installed package, through its exports.
    const resolved: string[] = [];
    const installedLexground: Plugin = {
      name: "lexground-from-the-installed-package",
      enforce: "pre",
      async resolveId(source, importer) {
        if (source !== "../../src/index.js" || importer !== BROWSER_PAGE) return null;
        const target = await this.resolve("lexground", join(installed.project, "app.mjs"), {
          skipSelf: true,
        });
        if (target) resolved.push(target.id);
        return target;
      },
    };
    const { result } = await runPageInChromium(await bundleForBrowser(BROWSER_PAGE, [installedLexground]));
    expect(resolved).toEqual([join(realpathSync(installed.project), "node_modules/lexground/dist/index.js")]);
    await expectPageMatchesNode(result);
  });
});
