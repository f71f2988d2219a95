/**
 * The compaction after incremental updates: an updated generation is exact but has no pruning tables, so once no
 * update has come for `compactionDelayMs` the writer publishes the updated registry again, in full.
 */
import type { KnowledgeIndexBuildOptions } from "../knowledge/knowledgeIndex.js";
import type { NormalizedKnowledgeEntry } from "../types/knowledge.js";

/** A registry an incremental update published, to publish again in full. */
export type CompactionRequest = {
  entries: readonly NormalizedKnowledgeEntry[];
  indexOptions: KnowledgeIndexBuildOptions;
  contentKey: string;
};

/** When to compact: after the latest update, once `compactionDelayMs` passed without another. */
export class CompactionSchedule {
  /** The registry of the latest incremental update, until a compaction republishes it. */
  private pendingCompaction: (CompactionRequest & { timer: ReturnType<typeof setTimeout> | null }) | null =
    null;
  private compaction: Promise<void> | null = null;
  private closed = false;

  /**
   * @param compactionDelayMs How long without an update before compacting.
   * @param compactNow Publishes a request in full, unless another update or publication replaced it meanwhile
   * (never rejects: a failure is the backend's to record; the updated generation keeps serving, exactly).
   */
  constructor(
    private readonly compactionDelayMs: number,
    private readonly compactNow: (request: CompactionRequest) => Promise<void>,
  ) {}

  /** Schedules the compaction of the registry an update just published (replacing any pending one). */
  schedule(
    entries: readonly NormalizedKnowledgeEntry[],
    indexOptions: KnowledgeIndexBuildOptions,
    contentKey: string,
  ): void {
    if (this.pendingCompaction?.timer) clearTimeout(this.pendingCompaction.timer);
    const timer = setTimeout(() => {
      if (this.pendingCompaction?.timer === timer) this.pendingCompaction.timer = null;
      this.compaction ??= this.compact();
    }, this.compactionDelayMs);
    timer.unref?.();
    this.pendingCompaction = { entries, indexOptions, contentKey, timer };
  }

  /** Resolves when no compaction is pending or running (a pending one runs now); never rejects. */
  async compacted(): Promise<void> {
    const pending = this.pendingCompaction;
    if (pending?.timer) {
      clearTimeout(pending.timer);
      pending.timer = null;
      this.compaction ??= this.compact();
    }
    while (this.compaction) await this.compaction;
  }

  /** Drops a pending compaction; none starts after this. */
  close(): void {
    this.closed = true;
    if (this.pendingCompaction?.timer) clearTimeout(this.pendingCompaction.timer);
    this.pendingCompaction = null;
  }

  private async compact(): Promise<void> {
    try {
      while (this.pendingCompaction && this.pendingCompaction.timer === null && !this.closed) {
        const { entries, indexOptions, contentKey } = this.pendingCompaction;
        this.pendingCompaction = null;
        await this.compactNow({ entries, indexOptions, contentKey });
      }
    } finally {
      this.compaction = null;
    }
  }
}
