import { afterEach, describe, expect, it, vi } from "vitest";
import type { KnowledgeEntryInput, KnowledgeGroundingInput, KnowledgeSource } from "../types/knowledge.js";
import { KnowledgeGroundingEngine } from "./engine.js";
import { clearKnowledgeIndexCache } from "./indexCache.js";
import { hasSnapshotChanges } from "./snapshotChanges.js";

afterEach(() => clearKnowledgeIndexCache());

const entry = (id: string, title: string, extra: Partial<KnowledgeEntryInput> = {}): KnowledgeEntryInput => ({
  id,
  title,
  summary: `${title} summary`,
  domain: "help",
  integrations: [],
  ...extra,
});

const baseSources = (): KnowledgeSource[] => [
  {
    id: "help",
    version: "v1",
    entries: [
      entry("payouts.instant", "Instant payouts", { body: "Send a payout to a debit card within minutes." }),
      entry("refunds.partial", "Partial refunds", { relatedEntryIds: ["payouts.instant"] }),
    ],
  },
  { id: "policies", version: "p1", entries: [entry("policy.fees", "Fee policy")] },
];

async function engineWith(sources = baseSources()): Promise<KnowledgeGroundingEngine> {
  const engine = new KnowledgeGroundingEngine({ enabled: true, sources, logger: null });
  await engine.ready();
  return engine;
}

/** A full build of `sources` answering `input`: what an updated engine must answer. */
async function fullBuildAnswer(sources: KnowledgeSource[], input: KnowledgeGroundingInput) {
  clearKnowledgeIndexCache();
  const engine = await engineWith(sources);
  return comparable(await engine.ground(input));
}

function comparable(outcome: Awaited<ReturnType<KnowledgeGroundingEngine["ground"]>>) {
  return {
    context: outcome.ephemeralContext?.content ?? null,
    selected: outcome.metadata.selectedIds,
    expanded: outcome.metadata.expandedIds,
    confidence: outcome.metadata.confidence,
    candidates: outcome.retrieval?.candidates,
  };
}

describe("engine.upsert / engine.remove", () => {
  it("adds, replaces and removes entries; turns answer as a full build of the final registry", async () => {
    const engine = await engineWith();
    const added = await engine.upsert([
      entry("payouts.schedule", "Payout schedule", { body: "Daily payouts." }),
    ]);
    expect(added).toMatchObject({ live: true, entryCount: 4, snapshotOrigin: "update", issues: [] });
    const replaced = await engine.upsert([
      entry("payouts.instant", "Instant card payouts", { status: "active" }),
    ]);
    expect(replaced.live).toBe(true);
    const removed = await engine.remove(["policy.fees"]);
    expect(removed).toMatchObject({ live: true, entryCount: 3 });
    const finalSources: KnowledgeSource[] = [
      {
        id: "help",
        version: "v1",
        entries: [
          entry("payouts.instant", "Instant card payouts", { status: "active" }),
          entry("refunds.partial", "Partial refunds", { relatedEntryIds: ["payouts.instant"] }),
          entry("payouts.schedule", "Payout schedule", { body: "Daily payouts." }),
        ],
      },
      { id: "policies", version: "p1", entries: [] },
    ];
    for (const query of ["instant card payouts", "daily payout schedule", "fee policy", "partial refunds"]) {
      const input = { query };
      const actual = comparable(await engine.ground(input));
      expect(actual).toEqual(await fullBuildAnswer(finalSources, input));
    }
    await engine.compacted();
    expect(comparable(await engine.ground({ query: "daily payout schedule" }))).toEqual(
      await fullBuildAnswer(finalSources, { query: "daily payout schedule" }),
    );
  });

  it("refuses an invalid change with its issues and keeps serving the same snapshot", async () => {
    const engine = await engineWith();
    const before = engine.getSnapshot();
    const result = await engine.upsert([entry("ok.entry", "Fine"), { id: "broken", title: 42 } as never]);
    expect(result).toMatchObject({ live: false, reason: "validation-failed" });
    expect(result.issues.some((issue) => issue.level === "error" && issue.path === "entries[1].title")).toBe(
      true,
    );
    expect(engine.getSnapshot()).toBe(before);
    expect(engine.getStatus().validationIssues).toEqual(result.issues);
    expect(engine.getSnapshot()?.entriesById.has("ok.entry")).toBe(false);
    const notArray = await engine.upsert("nope" as never);
    expect(notArray).toMatchObject({ live: false, reason: "validation-failed" });
    const badIds = await engine.remove([7 as never]);
    expect(badIds.issues[0]).toMatchObject({ level: "error", path: "ids[0]" });
    expect(engine.getSnapshot()).toBe(before);
  });

  it("routes entries to sources: by id, options.sourceId, or a list of sources; versions stay", async () => {
    const engine = await engineWith();
    await engine.upsert([entry("policy.new", "New policy")], { sourceId: "policies" });
    expect(engine.getSnapshot()?.entriesById.get("policy.new")?.version).toBe("p1");
    await engine.upsert([entry("policy.fees", "Fee policy v2")]);
    expect(engine.getSnapshot()?.entriesById.get("policy.fees")?.version).toBe("p1");
    const fresh = await engine.upsert([{ id: "faq", version: "f9", entries: [entry("faq.one", "One")] }]);
    expect(fresh.live).toBe(true);
    expect(engine.getSnapshot()?.entriesById.get("faq.one")?.version).toBe("f9");
    const moved = await engine.upsert([entry("policy.fees", "Elsewhere")], { sourceId: "help" });
    expect(moved.issues[0]).toMatchObject({ code: "duplicate-entry-id", path: "entries[0].id" });
    const version = await engine.upsert([{ id: "help", version: "v2", entries: [entry("x", "X")] }]);
    expect(version.issues[0]).toMatchObject({ code: "source-version-changed", path: "sources[0].version" });
    const unknown = await engine.remove(["nothing.here"]);
    expect(unknown).toMatchObject({ live: true, issues: [{ level: "warning", code: "unknown-entry-id" }] });
  });

  it("warns about relations to entries the registry does not have after the change", async () => {
    const engine = await engineWith();
    const result = await engine.upsert([
      entry("a.new", "A", { relatedEntryIds: ["refunds.partial", "gone"], parentEntryId: "missing.parent" }),
    ]);
    expect(result.live).toBe(true);
    expect(result.issues.map((issue) => issue.code).sort()).toEqual(["broken-parent", "broken-relation"]);
  });

  it("rebuild() after updates rebuilds the updated registry", async () => {
    const engine = await engineWith();
    await engine.upsert([entry("payouts.schedule", "Payout schedule")]);
    await engine.remove(["policy.fees"]);
    const rebuilt = await engine.rebuild();
    expect(rebuilt).toMatchObject({ live: true, entryCount: 3 });
    expect([...(engine.getSnapshot()?.entriesById.keys() ?? [])].sort()).toEqual([
      "payouts.instant",
      "payouts.schedule",
      "refunds.partial",
    ]);
  });

  it("reports index-not-ready when nothing serves yet", async () => {
    const engine = new KnowledgeGroundingEngine({ enabled: true, sources: [], logger: null });
    await engine.ready();
    expect(await engine.upsert([entry("a", "A")])).toMatchObject({ live: false, reason: "index-not-ready" });
  });

  it("reports index-not-ready after a snapshot is installed from elsewhere, instead of changing it with the previous registry", async () => {
    const engine = await engineWith();
    await engine.upsert([entry("payouts.schedule", "Payout schedule")]);
    const other = await engineWith([
      { id: "other", version: "o1", entries: [entry("other.one", "Other one")] },
    ]);
    engine.installSnapshot(other.getSnapshot()!, "artifact");
    expect(await engine.remove(["payouts.instant"])).toMatchObject({
      live: false,
      reason: "index-not-ready",
    });
    expect(engine.getSnapshot()!.entryCount).toBe(1);
  });
});

describe("atomicity: a turn sees the registry before or after a change, never between", () => {
  it("turns started while updates and compactions run match one of the registries", async () => {
    const engine = await engineWith();
    const input = { query: "payout schedule instant fee policy refunds" };
    const states: KnowledgeSource[][] = [baseSources()];
    const turns: Promise<ReturnType<typeof comparable>>[] = [];
    const ground = () => turns.push(engine.ground(input).then(comparable));
    ground();
    const first = engine.upsert([entry("payouts.schedule", "Payout schedule", { body: "instant fee" })]);
    ground();
    const second = engine.remove(["refunds.partial"]);
    ground();
    await first;
    ground();
    await second;
    ground();
    await engine.compacted();
    ground();
    const [help, policies] = baseSources();
    const afterFirst: KnowledgeSource[] = [
      {
        ...help!,
        entries: [...help!.entries, entry("payouts.schedule", "Payout schedule", { body: "instant fee" })],
      },
      policies!,
    ];
    const afterSecond: KnowledgeSource[] = [
      { ...afterFirst[0]!, entries: afterFirst[0]!.entries.filter((item) => item.id !== "refunds.partial") },
      policies!,
    ];
    states.push(afterFirst, afterSecond);
    const answers = [];
    for (const state of states) answers.push(await fullBuildAnswer(state, input));
    const seen = await Promise.all(turns);
    for (const answer of seen) expect(answers).toContainEqual(answer);
    expect(seen.at(-1)).toEqual(answers[2]);
  });
});

describe("background compaction: once updates pause", () => {
  /** Lets a compaction of a tiny index run to its end (its slices yield with setImmediate, which stays real). */
  const settle = async () => {
    for (let turn = 0; turn < 20; turn++) await new Promise((resolve) => setImmediate(resolve));
  };

  it("folds a burst of updates once, 200-400 ms after the last one, and at the latest after 2 s of updates", async () => {
    const engine = await engineWith();
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
    try {
      const pending = () => hasSnapshotChanges(engine.getSnapshot()!);
      await engine.upsert([entry("burst.0", "Burst zero")]);
      // Updates 150 ms apart: never 200 ms of quiet, so nothing is folded meanwhile (the compaction used to
      // start 200 ms after the first update, in the middle of the burst).
      for (let index = 1; index <= 4; index++) {
        await vi.advanceTimersByTimeAsync(150);
        await settle();
        expect(pending()).toBe(true);
        await engine.upsert([entry(`burst.${index}`, `Burst ${index}`)]);
      }
      await vi.advanceTimersByTimeAsync(400);
      await settle();
      expect(pending()).toBe(false);
      // A steady stream of updates is folded anyway after ten quiet checks.
      await engine.upsert([entry("stream.0", "Stream zero")]);
      let folded = false;
      for (let index = 1; index <= 30 && !folded; index++) {
        await vi.advanceTimersByTimeAsync(150);
        await settle();
        folded = !pending();
        await engine.upsert([entry(`stream.${index}`, `Stream ${index}`)]);
      }
      expect(folded).toBe(true);
      // The last update's compaction, driven to its end before the real timers are back: its quiet period and its
      // slices wait on (fake) timers, and one still pending then would never fire (on a loaded machine a fixed
      // 2.5 s advance left a slice pending once, and the test timed out waiting for the compaction).
      let compacted = false;
      void engine.compacted().then(() => {
        compacted = true;
      });
      for (let step = 0; step < 600 && !compacted; step++) {
        await vi.advanceTimersByTimeAsync(100);
        await settle();
      }
      expect(compacted).toBe(true);
    } finally {
      vi.useRealTimers();
    }
    expect(hasSnapshotChanges(engine.getSnapshot()!)).toBe(false);
  });
});
