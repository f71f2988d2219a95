/**
 * Optional peers (issue 13, "a light install"): the root and `lexground/files` need no peer, each integration loads
 * only its own, and a missing one is a typed error naming the package to install. Absence is simulated in a child
 * process by a module resolve hook that raises Node's own "Cannot find package" error for the hidden packages.
 */
import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { providerErrorForCli } from "../../src/cli/commands/ask.js";
import { CliFailure } from "../../src/cli/errors.js";
import { ProviderNotConfiguredError } from "../../src/neurolink/errors.js";
import {
  importPeerDependency,
  isMissingPackageError,
  MissingPeerDependencyError,
  PEER_DEPENDENCY_RANGES,
} from "../../src/peerDependency.js";

const root = join(import.meta.dirname, "../..");
const run = promisify(execFile);
const manifest = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as {
  dependencies: Record<string, string>;
  peerDependencies: Record<string, string>;
  peerDependenciesMeta: Record<string, { optional?: boolean }>;
  devDependencies: Record<string, string>;
};

function notFound(packageName: string, code = "ERR_MODULE_NOT_FOUND"): Error {
  return Object.assign(new Error(`Cannot find package '${packageName}' imported from /app/index.js`), {
    code,
  });
}

describe("package.json dependencies", () => {
  it("installs only what the CLI needs; every integration's package is an optional peer", () => {
    expect(Object.keys(manifest.dependencies).sort()).toEqual(["commander", "picocolors", "yaml"]);
    expect(manifest.peerDependencies).toEqual(PEER_DEPENDENCY_RANGES);
    for (const name of Object.keys(manifest.peerDependencies)) {
      expect(manifest.peerDependenciesMeta[name]?.optional, name).toBe(true);
      // Tests still get every peer.
      expect(manifest.devDependencies[name], name).toBeDefined();
      expect(manifest.dependencies[name], `${name} is both a dependency and a peer`).toBeUndefined();
    }
    expect(manifest).not.toHaveProperty("optionalDependencies");
  });
});

describe("MissingPeerDependencyError", () => {
  it("is recognized only for the package itself, from import or require", () => {
    expect(isMissingPackageError(notFound("@langchain/core"), "@langchain/core")).toBe(true);
    expect(
      isMissingPackageError(
        Object.assign(new Error("Cannot find module 'redis/dist/index.js'"), { code: "MODULE_NOT_FOUND" }),
        "redis",
      ),
    ).toBe(true);
    // A dependency of the peer is missing, not the peer: that error is the peer's, reported as it is.
    expect(isMissingPackageError(notFound("@ai-sdk/provider-utils"), "@ai-sdk/provider")).toBe(false);
    expect(isMissingPackageError(new Error("Cannot find package 'redis'"), "redis")).toBe(false);
    expect(isMissingPackageError("Cannot find package 'redis'", "redis")).toBe(false);
  });

  it("importPeerDependency names the package and the install command, and rethrows anything else", async () => {
    const peer = { packageName: "redis", versionRange: "^5.0.0", feature: "Redis conversation memory" };
    const error = await importPeerDependency(peer, () => Promise.reject(notFound("redis"))).catch(
      (caught: unknown) => caught,
    );
    expect(MissingPeerDependencyError.isInstance(error)).toBe(true);
    expect(error).toMatchObject({
      name: "MissingPeerDependencyError",
      packageName: "redis",
      versionRange: "^5.0.0",
      installCommand: "npm install redis@^5.0.0",
      message:
        "Redis conversation memory needs the package redis, which is not installed: npm install redis@^5.0.0",
    });
    const other = new SyntaxError("broken module");
    await expect(importPeerDependency(peer, () => Promise.reject(other))).rejects.toBe(other);
    await expect(importPeerDependency(peer, () => Promise.resolve(42))).resolves.toBe(42);
  });

  it("a missing package reported in a child process: langchain, a provider, redis, pg, the MCP command", async () => {
    const { stdout } = await run(
      process.execPath,
      [
        "--import",
        "tsx",
        "--import",
        "./test/package/fixtures/hide-packages.mjs",
        "test/package/fixtures/missing-peers.ts",
      ],
      {
        cwd: root,
        env: {
          PATH: process.env.PATH ?? "",
          LEXGROUND_HIDE_PACKAGES: "@langchain/core,@ai-sdk/openai,redis,@modelcontextprotocol/sdk,pg",
        },
        timeout: 60_000,
      },
    );
    const reports = JSON.parse(stdout) as Record<string, Record<string, string>>;
    expect(reports.langchain).toMatchObject({
      name: "MissingPeerDependencyError",
      packageName: "@langchain/core",
      message: expect.stringContaining("npm install @langchain/core@^1.0.0"),
    });
    expect(reports.provider).toMatchObject({
      name: ProviderNotConfiguredError.name,
      setting: "@ai-sdk/openai",
      causeName: "MissingPeerDependencyError",
      message: expect.stringContaining("npm install @ai-sdk/openai@^3.0.0"),
    });
    expect(reports.redis).toMatchObject({
      name: "ConversationMemoryError",
      causeName: "MissingPeerDependencyError",
      message: expect.stringContaining("npm install redis@^5.0.0"),
    });
    expect(reports.postgres).toMatchObject({
      name: "MissingPeerDependencyError",
      packageName: "pg",
      message: expect.stringContaining("lexground/postgres needs the package pg"),
    });
    // A turn over a backend without its driver fails open and says what to install.
    expect(reports.postgresTurn?.message).toContain("npm install pg@^8.11.0");
    expect(reports.mcp?.name).toBe("1");
    expect(reports.mcp?.message).toContain("lexground mcp needs the package @modelcontextprotocol/sdk");
    expect(reports.mcp?.message).toContain("npm install @modelcontextprotocol/sdk@^1.32.0");
  });

  it("without ai: the client's calls name it, the middleware and the search tool work, ask exits 1", async () => {
    const { stdout } = await run(
      process.execPath,
      [
        "--import",
        "tsx",
        "--import",
        "./test/package/fixtures/hide-packages.mjs",
        "test/package/fixtures/missing-ai.ts",
      ],
      {
        cwd: root,
        env: { PATH: process.env.PATH ?? "", LEXGROUND_HIDE_PACKAGES: "ai,zod" },
        timeout: 60_000,
      },
    );
    const reports = JSON.parse(stdout) as Record<string, Record<string, unknown>>;
    for (const method of ["generate", "stream"]) {
      expect(reports[method], method).toMatchObject({
        name: ProviderNotConfiguredError.name,
        setting: "ai",
        causeName: "MissingPeerDependencyError",
        causePackage: "ai",
        message: "lexground/neurolink needs the package ai, which is not installed: npm install ai@^6.0.0",
      });
    }
    expect(reports.tool).toEqual({ entries: ["payouts.instant"] });
    expect(reports.middleware).toEqual({ system: true });
    expect(reports.ask?.exitCode).toBe(1);
    expect(reports.ask?.stderr).toContain("needs the package ai, which is not installed");
    expect(reports.ask?.stderr).toContain("npm install ai@^6.0.0");
  });

  it("lexground ask names the provider package to install", () => {
    const missing = new MissingPeerDependencyError({
      packageName: "@ai-sdk/anthropic",
      versionRange: "^3.0.0",
      feature: 'the "anthropic" provider',
    });
    const translated = providerErrorForCli(
      new ProviderNotConfiguredError({
        provider: "anthropic",
        setting: "@ai-sdk/anthropic",
        message: missing.message,
        cause: missing,
      }),
    );
    expect(translated).toBeInstanceOf(CliFailure);
    expect(translated?.message).toBe(
      'provider "anthropic" needs the package @ai-sdk/anthropic, which is not installed',
    );
    expect(translated?.hint).toBe("install it next to lexground: npm install @ai-sdk/anthropic@^3.0.0");
  });
});
