/**
 * The cost of content hashing on a 100,000-entry synthetic registry: the cache key (a SHA-256 over every entry)
 * and an index artifact's checksum, with Node's native SHA-256 and with the pure JavaScript one the engine uses
 * where `node:crypto` is not reachable (browsers, edge runtimes). The pure run happens in a child process started
 * without `process.getBuiltinModule`, as a browser would be.
 *
 *   node --import tsx bench/hash.ts [--size 100000] [--rounds 5]
 */
import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { generateSyntheticRegistry } from "./synthetic.js";

const { values } = parseArgs({
  options: {
    size: { type: "string", default: "100000" },
    rounds: { type: "string", default: "5" },
    pure: { type: "boolean", default: false },
  },
});
const size = Number(values.size);
const rounds = Number(values.rounds);

/** Median of `rounds` timings of `task`, in milliseconds. */
function median(task: () => unknown): number {
  const timings: number[] = [];
  for (let round = 0; round < rounds; round++) {
    const start = performance.now();
    task();
    timings.push(performance.now() - start);
  }
  return timings.sort((left, right) => left - right)[Math.floor(timings.length / 2)]!;
}

type Measurement = {
  key: string;
  keyMs: number;
  checksumMs: number;
  artifactMegabytes: number;
  native: boolean;
};

async function measure(): Promise<Measurement> {
  if (values.pure) (process as { getBuiltinModule?: unknown }).getBuiltinModule = undefined;
  const { normalizeSources } = await import("../src/knowledge/resolve.js");
  const { buildKnowledgeIndexCacheKey, buildIndexArtifact } = await import("../src/knowledge/indexCache.js");
  const { createSha256, usesNativeSha256 } = await import("../src/knowledge/sha256.js");
  const { entries } = generateSyntheticRegistry({ size, seed: 1, queryCount: 1 });
  const sources = [{ id: "synthetic", version: "1", entries }];
  const { groups } = normalizeSources(sources);
  const artifact = await buildIndexArtifact(sources);
  return {
    key: buildKnowledgeIndexCacheKey(groups),
    keyMs: median(() => buildKnowledgeIndexCacheKey(groups)),
    checksumMs: median(() => createSha256().update(artifact).digest()),
    artifactMegabytes: artifact.byteLength / 1e6,
    native: usesNativeSha256(),
  };
}

if (values.pure) {
  console.log(JSON.stringify(await measure()));
} else {
  const native = await measure();
  const output = execFileSync(
    process.execPath,
    [
      ...process.execArgv,
      fileURLToPath(import.meta.url),
      "--pure",
      "--size",
      String(size),
      "--rounds",
      String(rounds),
    ],
    { encoding: "utf8", maxBuffer: 64 * 1024 * 1024 },
  );
  const pure = JSON.parse(output.trim().split("\n").at(-1)!) as Measurement;
  if (!native.native || pure.native) throw new Error("expected one native and one pure run");
  if (pure.key !== native.key) throw new Error("the pure SHA-256 gave a different cache key");
  const format = (value: number) => value.toFixed(1);
  console.log(
    `entries: ${size}, median of ${rounds}, artifact ${format(native.artifactMegabytes)} MB, same key: yes`,
  );
  for (const [label, nativeMs, pureMs] of [
    ["cache key", native.keyMs, pure.keyMs],
    ["artifact checksum", native.checksumMs, pure.checksumMs],
  ] as const) {
    console.log(
      `${label.padEnd(18)} native ${format(nativeMs)} ms   pure ${format(pureMs)} ms   pure/native ${format(pureMs / nativeMs)}x`,
    );
  }
}
