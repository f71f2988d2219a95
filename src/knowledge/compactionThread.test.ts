import { readdirSync, readFileSync } from "node:fs";
import { getPriority } from "node:os";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type {
  KnowledgeEntryInput,
  KnowledgeIndexSnapshot,
  NormalizedKnowledgeEntry,
} from "../types/knowledge.js";
import {
  CompactionThread,
  fieldsCompactedByWorkers,
  runCompactionSteps,
  setCompactionThreadMinimum,
  sharedCompactionBytes,
} from "./compactionThread.js";
import { COMPACTION_WORKER_NICE } from "./compactionWorker.js";
import { drain } from "./compiledSnapshot.js";
import { KnowledgeGroundingEngine } from "./engine.js";
import { clearKnowledgeIndexCache } from "./indexCache.js";
import type { KnowledgeLexicalIndex } from "./lexicalIndex.js";
import { normalizeAndValidate } from "./resolve.js";
import { yieldToEventLoop } from "./runtime.js";
import { buildIndexSnapshot } from "./snapshot.js";
import { applySnapshotChanges, compactSnapshotSteps, hasSnapshotChanges } from "./snapshotChanges.js";

let previousMinimum = 0;
beforeAll(() => {
  previousMinimum = setCompactionThreadMinimum(0);
});
afterAll(() => {
  setCompactionThreadMinimum(previousMinimum);
  clearKnowledgeIndexCache();
});

function normalized(entries: KnowledgeEntryInput[]): NormalizedKnowledgeEntry[] {
  const result = normalizeAndValidate([{ id: "source", version: "v1", entries }], { manifestVersion: "0" });
  expect(result.validation.ok).toBe(true);
  return result.entries;
}

const WORDS = ["alpha", "beta", "gamma", "delta", "omega", "payout", "refund", "card", "fee", "bank"];

/** Entries with repeated words (frequencies of 255 and more included) and an empty field or two. */
function entries(count: number, salt: number): KnowledgeEntryInput[] {
  return Array.from({ length: count }, (_, index) => {
    const word = (offset: number) => WORDS[(index * 7 + offset * 3 + salt) % WORDS.length]!;
    return {
      id: `entry.${String(index * 13 + salt).padStart(4, "0")}`,
      title: `${word(0)} ${word(1)} ${index}`,
      summary: `${word(2)} summary ${salt}`,
      body:
        index % 5 === 0 ? `${`${word(3)} `.repeat(250 + (index % 11))} ${word(4)}` : `${word(4)} ${word(5)}`,
      aliases: index % 3 === 0 ? [`${word(6)} alias`] : [],
      domain: "help",
      integrations: [],
    };
  });
}

/** A changed snapshot: a base of 60 entries, then removals, replacements and additions in three changes. */
function changedSnapshot(): KnowledgeIndexSnapshot {
  const base = normalized(entries(60, 0));
  let snapshot = buildIndexSnapshot(base, {});
  snapshot = applySnapshotChanges(snapshot, [base[3]!.id, base[10]!.id], []);
  snapshot = applySnapshotChanges(snapshot, [], normalized(entries(12, 5)));
  const replaced = normalized(entries(60, 0).slice(20, 26)).map((entry) => ({
    ...entry,
    summary: `${entry.summary} zeta zeta`,
  }));
  return applySnapshotChanges(snapshot, [], replaced);
}

/** A full collection, then a moment for the finalizers it makes due. */
async function collectGarbage(): Promise<void> {
  setFlagsFromString("--expose-gc");
  (runInNewContext("gc") as () => void)();
  await new Promise((resolve) => setTimeout(resolve, 10));
}

/** `changed` compacted through a worker thread started for it. */
async function compactedInWorker(changed: KnowledgeIndexSnapshot): Promise<KnowledgeLexicalIndex> {
  const thread = CompactionThread.start(changed.entryCount);
  expect(thread).not.toBeNull();
  try {
    const compacted = await runCompactionSteps(
      compactSnapshotSteps(changed, thread),
      thread,
      8,
      yieldToEventLoop,
    );
    expect(thread!.fieldsCompacted).toBeGreaterThan(0);
    return compacted.lexical as KnowledgeLexicalIndex;
  } finally {
    thread!.close();
  }
}

describe("compaction in a worker thread", () => {
  it("writes the same fresh index as the main thread, bit for bit", async () => {
    const changed = changedSnapshot();
    const local = drain(compactSnapshotSteps(changed)).lexical as KnowledgeLexicalIndex;
    const thread = CompactionThread.start(changed.entryCount);
    expect(thread).not.toBeNull();
    let remote: KnowledgeLexicalIndex;
    try {
      remote = (await runCompactionSteps(compactSnapshotSteps(changed, thread), thread, 8, yieldToEventLoop))
        .lexical as KnowledgeLexicalIndex;
    } finally {
      thread!.close();
    }
    expect(thread!.fieldsCompacted).toBeGreaterThan(0);
    expect(remote.hasChanges).toBe(false);
    // Every array of the two indexes (postings, contributions, frequencies, lengths, statistics) is equal.
    expect(remote).toEqual(local);
  });

  it("hands the fresh arrays back on SharedArrayBuffers (no memory V8 counts arrives), the same bit for bit", async () => {
    const changed = changedSnapshot();
    const local = drain(compactSnapshotSteps(changed)).lexical as KnowledgeLexicalIndex;
    const remote = await compactedInWorker(changed);
    expect(remote).toEqual(local);
    const active = remote.exportParts().postings.filter((postings) => postings.active);
    expect(active.length).toBeGreaterThan(0);
    for (const postings of active)
      for (const array of [postings.offsets, postings.docs, postings.contributions])
        expect(array.buffer).toBeInstanceOf(SharedArrayBuffer);
    // Nothing of the worker's is transferred: a transferred buffer would be external memory of this thread's heap.
    for (const postings of local.exportParts().postings.filter((postings) => postings.active))
      expect(postings.docs.buffer).not.toBeInstanceOf(SharedArrayBuffer);
  });

  it("hands back ordinary arrays once the shared ones outstanding pass their budget, the same bit for bit", async () => {
    const changed = changedSnapshot();
    const local = drain(compactSnapshotSteps(changed)).lexical as KnowledgeLexicalIndex;
    // Results kept alive, so none of their shared bytes is released: the budget runs out after a few.
    const kept: KnowledgeLexicalIndex[] = [];
    let ordinary: KnowledgeLexicalIndex | undefined;
    for (let attempt = 0; attempt < 8 && !ordinary; attempt++) {
      const remote = await compactedInWorker(changed);
      expect(remote).toEqual(local);
      kept.push(remote);
      const docs = remote.exportParts().postings.find((postings) => postings.active)!.docs;
      if (!(docs.buffer instanceof SharedArrayBuffer)) ordinary = remote;
    }
    expect(kept.length).toBeGreaterThan(1);
    expect(ordinary).toBeDefined();
  });

  it("releases a dropped index's shared bytes once it is collected", async () => {
    // Indexes dropped by the tests before are collected first, so that this one's arrays may be shared.
    await collectGarbage();
    const changed = changedSnapshot();
    const field = 0;
    let remote: KnowledgeLexicalIndex | null = await compactedInWorker(changed);
    const held = sharedCompactionBytes(field);
    expect(remote.exportParts().postings[field]!.docs.buffer).toBeInstanceOf(SharedArrayBuffer);
    expect(held).toBeGreaterThan(0);
    remote = null;
    let released = false;
    for (let attempt = 0; attempt < 20 && !released; attempt++) {
      await collectGarbage();
      released = sharedCompactionBytes(field) < held;
    }
    expect(released).toBe(true);
  });

  it("runs no step in the turn that started the worker (starting one is a few milliseconds of its own)", async () => {
    const events: string[] = [];
    function* steps(): Generator<void, number, void> {
      events.push("step");
      yield;
      events.push("step");
      return 1;
    }
    const started = { waiting: null } as unknown as CompactionThread;
    const yielding = async () => {
      events.push("yield");
    };
    expect(await runCompactionSteps(steps(), started, 1_000, yielding)).toBe(1);
    expect(events).toEqual(["yield", "step", "step"]);
    events.length = 0;
    expect(await runCompactionSteps(steps(), null, 1_000, yielding)).toBe(1);
    expect(events).toEqual(["step", "step"]);
  });

  it.runIf(process.platform === "linux")(
    "the worker thread runs at the lowest priority and the calling thread's priority is unchanged (Linux)",
    async () => {
      const niceValues = () =>
        readdirSync("/proc/self/task").map((task) => {
          // The fields after the command name's closing parenthesis: the nice value is the 17th of them.
          const fields = readFileSync(`/proc/self/task/${task}/stat`, "utf8").split(") ")[1]!.split(" ");
          return Number(fields[16]);
        });
      const before = getPriority();
      const changed = changedSnapshot();
      const thread = CompactionThread.start(changed.entryCount);
      expect(thread).not.toBeNull();
      try {
        await runCompactionSteps(compactSnapshotSteps(changed, thread), thread, 8, yieldToEventLoop);
        expect(thread!.fieldsCompacted).toBeGreaterThan(0);
        expect(niceValues()).toContain(COMPACTION_WORKER_NICE);
      } finally {
        thread!.close();
      }
      expect(getPriority()).toBe(before);
    },
  );

  it("compacts on the main thread, with the same result, when the worker cannot be used", async () => {
    const changed = changedSnapshot();
    const local = drain(compactSnapshotSteps(changed)).lexical as KnowledgeLexicalIndex;
    const thread = CompactionThread.start(changed.entryCount)!;
    thread.close();
    const remote = await runCompactionSteps(
      compactSnapshotSteps(changed, thread),
      thread,
      8,
      yieldToEventLoop,
    );
    expect(thread.fieldsCompacted).toBe(0);
    expect(remote.lexical).toEqual(local);
  });

  it("an engine's background compaction through the worker answers as a full build", async () => {
    const sources = [{ id: "source", version: "v1", entries: entries(60, 0) }];
    const engine = new KnowledgeGroundingEngine({ enabled: true, sources, logger: null });
    await engine.ready();
    const fieldsBefore = fieldsCompactedByWorkers();
    const upserted = entries(8, 5);
    await engine.upsert(upserted);
    await engine.remove([entries(60, 0)[7]!.id]);
    await engine.compacted();
    expect(hasSnapshotChanges(engine.getSnapshot()!)).toBe(false);
    expect(fieldsCompactedByWorkers()).toBeGreaterThan(fieldsBefore);
    clearKnowledgeIndexCache();
    const finalEntries = [...entries(60, 0).filter((_, index) => index !== 7), ...upserted];
    const full = new KnowledgeGroundingEngine({
      enabled: true,
      sources: [{ id: "source", version: "v1", entries: finalEntries }],
      logger: null,
    });
    await full.ready();
    for (const query of ["alpha beta payout", "gamma summary 5", "omega refund card fee", "bank alias"]) {
      const [actual, expected] = await Promise.all([engine.ground({ query }), full.ground({ query })]);
      expect(actual.retrieval?.candidates).toEqual(expected.retrieval?.candidates);
      expect(actual.ephemeralContext?.content).toEqual(expected.ephemeralContext?.content);
    }
  });
});
