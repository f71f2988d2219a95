/**
 * What the browser runs (bundled by test/browser/runtime.test.ts): build an engine from sources, ground a turn,
 * build an index artifact and load it from its bytes in a second engine, and show that a file path is refused
 * gracefully. The results go into the page as JSON for `--dump-dom` to read back.
 */
import {
  buildIndexArtifact,
  clearKnowledgeIndexCache,
  getOrBuildKnowledgeIndexSnapshot,
  KnowledgeGroundingEngine,
} from "../../src/index.js";
import { RUNTIME_QUERY, RUNTIME_SOURCES } from "./fixture.js";

async function main(): Promise<unknown> {
  // The first turn also builds the index; under a loaded CI machine a cold browser can exceed the default 800 ms
  // turn timeout, which fails open (no block) and made this comparison flaky. What is compared stays the same.
  const engine = new KnowledgeGroundingEngine({ enabled: true, sources: RUNTIME_SOURCES, timeoutMs: 10_000 });
  const outcome = await engine.ground({ query: RUNTIME_QUERY });
  const status = engine.getStatus();
  const artifact = await buildIndexArtifact(RUNTIME_SOURCES);
  clearKnowledgeIndexCache();
  const fromBytes = new KnowledgeGroundingEngine({
    enabled: true,
    sources: RUNTIME_SOURCES,
    indexArtifact: artifact,
  });
  await fromBytes.ready();
  const fromBytesOutcome = await fromBytes.ground({ query: RUNTIME_QUERY });
  clearKnowledgeIndexCache();
  const fromPath = new KnowledgeGroundingEngine({
    enabled: true,
    sources: RUNTIME_SOURCES,
    indexArtifact: "/srv/knowledge.lxg",
  });
  await fromPath.ready();
  return {
    hasProcess: typeof (globalThis as { process?: unknown }).process !== "undefined",
    content: outcome.ephemeralContext?.content ?? null,
    metadata: outcome.metadata,
    cacheKey: (await getOrBuildKnowledgeIndexSnapshot(RUNTIME_SOURCES)).cacheKey,
    ready: status.ready,
    artifactBytes: artifact.byteLength,
    fromBytes: {
      origin: fromBytes.getStatus().snapshotOrigin ?? null,
      content: fromBytesOutcome.ephemeralContext?.content,
    },
    fromPath: { ready: fromPath.getStatus().ready, notes: fromPath.getStatus().notes },
  };
}

// The page runs in a browser; the project is typed for Node, so the one DOM call is typed here.
const page = globalThis as unknown as {
  document: { getElementById(id: string): { textContent: string } | null };
};
const output = page.document.getElementById("result")!;
main().then(
  (result) => {
    output.textContent = JSON.stringify(result);
  },
  (error: unknown) => {
    output.textContent = JSON.stringify({ error: String(error instanceof Error ? error.stack : error) });
  },
);
