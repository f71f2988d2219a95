/**
 * What importing the root export does before anything is asked of it, for processes that start cold (serverless
 * hosts, the CLI): no Node built-in is looked up (the build worker's start-up check runs only in a build worker;
 * the engine looks up what it needs when it first needs it). Loading modules is the largest part of a cold start
 * after Node's own (README, "Prebuilt index artifacts and cold start").
 */
import { describe, expect, it, vi } from "vitest";

const lookedUp: string[] = [];

vi.mock("../src/knowledge/runtime.js", async (importOriginal) => {
  const original = await importOriginal<typeof import("../src/knowledge/runtime.js")>();
  return {
    ...original,
    nodeBuiltin: <Module>(name: string): Module | undefined => {
      lookedUp.push(name);
      return original.nodeBuiltin<Module>(name);
    },
  };
});

describe("importing the root export", () => {
  it("looks up no Node built-in module", async () => {
    const root = await import("../src/index.js");
    expect(typeof root.KnowledgeGroundingEngine).toBe("function");
    expect(lookedUp).toEqual([]);
  });

  it("building and loading a small artifact, and its first turn, look up no zlib (the WebAssembly CRC-32 checks it)", async () => {
    const root = await import("../src/index.js");
    const { policiesSource, settingsSource } = await import("./fixtures/registry.js");
    const artifact = await root.buildIndexArtifact([settingsSource, policiesSource]);
    root.clearKnowledgeIndexCache();
    const engine = new root.KnowledgeGroundingEngine({ enabled: true, indexArtifact: artifact });
    const outcome = await engine.ground({ query: "refund policy" });
    expect(engine.getStatus().snapshotOrigin).toBe("artifact");
    expect(outcome.ephemeralContext).not.toBeNull();
    expect(lookedUp).not.toContain("node:zlib");
  });
});
