/**
 * The cold-start harness's child (`bench/firstTurn.ts`): what it times is a fresh Node's first grounded turn, so its
 * own reporting must not add Node work that a grounding host would not do.
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import {
  REPO_ROOT,
  timeFirstTurn,
  withoutNodeStartVariables,
  writeFirstTurnChild,
} from "../../bench/firstTurn.js";

const directory = mkdtempSync(join(tmpdir(), "lexground-first-turn-"));
afterAll(() => rmSync(directory, { recursive: true, force: true }));

/** A stand-in for the built package: an engine with a grounded turn, and `process.stdout` made unusable. */
const STUB = `
Object.defineProperty(process, "stdout", {
  configurable: true,
  get() { throw new Error("the child touched process.stdout"); },
});
export function manifestToSources() { return []; }
export class KnowledgeGroundingEngine {
  async ground() { return { ephemeralContext: "context", metadata: {} }; }
  getStatus() { return { snapshotOrigin: "artifact", entryCount: 1, lastError: null }; }
}
`;

describe("the first-turn child", () => {
  it("finds the package by name beside it, as an application that installed it would", () => {
    writeFirstTurnChild(directory);
    const resolved = createRequire(join(directory, "app.js")).resolve("lexground/package.json");
    expect(realpathSync(resolved)).toBe(realpathSync(join(REPO_ROOT, "package.json")));
  });

  it("writes its report without process.stdout (whose stream set-up is not part of a first turn)", () => {
    const childPath = writeFirstTurnChild(directory);
    const stubPath = join(directory, "stub.mjs");
    writeFileSync(stubPath, STUB);
    const run = spawnSync(process.execPath, [childPath, stubPath, "-", "kb.lxg", "a query"], {
      encoding: "utf8",
    });
    expect(run.stderr).toBe("");
    expect(run.status).toBe(0);
    const report = JSON.parse(run.stdout) as { origin: string; grounded: boolean; cpuMs: number };
    expect(report.origin).toBe("artifact");
    expect(report.grounded).toBe(true);
    expect(report.cpuMs).toBeGreaterThan(0);
  });

  it("times the first turn until its report, and the exit apart (a child that lingers after reporting)", async () => {
    const lingering = join(directory, "lingering.mjs");
    writeFileSync(
      lingering,
      `process.getBuiltinModule("node:fs").writeSync(1, JSON.stringify({ origin: "artifact", grounded: true }));
setTimeout(() => {}, 1000);`,
    );
    const timed = await timeFirstTurn(lingering, { artifactPath: "kb.lxg", query: "a query" });
    expect(timed.report).toMatchObject({ origin: "artifact", grounded: true });
    expect(timed.exitMilliseconds - timed.milliseconds).toBeGreaterThanOrEqual(500);
  });

  it("runs a child without the variables that change Node's own start when asked, keeping the rest", async () => {
    const reporter = join(directory, "environment.mjs");
    writeFileSync(
      reporter,
      `const { NODE_EXTRA_CA_CERTS, NODE_OPTIONS, LEXGROUND_PROBE } = process.env;
process.getBuiltinModule("node:fs").writeSync(1, JSON.stringify({ origin: "artifact", grounded: true,
  extra: NODE_EXTRA_CA_CERTS ?? null, options: NODE_OPTIONS ?? null, probe: LEXGROUND_PROBE ?? null }));`,
    );
    const inherited = await timeFirstTurn(reporter, { artifactPath: "kb.lxg", query: "q" }, [], {
      NODE_EXTRA_CA_CERTS: "/nonexistent/extra.pem",
      NODE_OPTIONS: "--no-warnings",
      LEXGROUND_PROBE: "kept",
    });
    expect(inherited.report).toMatchObject({
      extra: "/nonexistent/extra.pem",
      options: "--no-warnings",
      probe: "kept",
    });
    const clean = await timeFirstTurn(
      reporter,
      { artifactPath: "kb.lxg", query: "q" },
      [],
      withoutNodeStartVariables({ LEXGROUND_PROBE: "kept" }),
    );
    expect(clean.report).toMatchObject({ extra: null, options: null, probe: "kept" });
  });
});
