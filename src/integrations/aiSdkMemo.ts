/**
 * The middleware's memory of recent retrievals: the steps of one tool loop reuse the first step's grounding.
 */
import { DEFAULT_RECENT_TURNS, HISTORY_TURN_CHARS, MAX_QUERY_CHARS } from "../knowledge/defaults.js";
import { LruCache } from "../knowledge/lruCache.js";
import type {
  KnowledgeGroundingOutcome,
  KnowledgeIndexSnapshot,
  KnowledgeRequestScope,
} from "../types/knowledge.js";
import type { PromptTurn } from "./aiSdkPrompt.js";

type MemoEntry = {
  promise: Promise<KnowledgeGroundingOutcome>;
  createdAt: number;
  settled: boolean;
  /** The snapshot serving when the retrieval settled (`undefined` when the engine does not expose it). */
  snapshot: KnowledgeIndexSnapshot | null | undefined;
};

export type StepGrounding = { outcome: KnowledgeGroundingOutcome; reused: boolean };

/**
 * Retrievals remembered per distinct turn, so the steps of one tool loop (one `transformParams` call each, with
 * the same last user message) reuse the first step's grounding: while it is younger than the lifetime and the
 * engine still serves the snapshot it was retrieved from. Bounded; least recently used dropped.
 */
export class GroundingMemo {
  private readonly entries: LruCache<string, MemoEntry>;

  constructor(
    limit: number,
    private readonly ttlMs: number,
    private readonly now: () => number,
    private readonly currentSnapshot: () => KnowledgeIndexSnapshot | null | undefined,
  ) {
    // Refreshed on reuse; a limit of 0 keeps nothing, so every step grounds anew.
    this.entries = new LruCache(limit);
  }

  /** The remembered retrieval of `key` if it may be reused; a stale one is forgotten. */
  reusable(key: string): Promise<KnowledgeGroundingOutcome> | undefined {
    const existing = this.entries.get(key);
    if (!existing) return undefined;
    const fresh = this.now() - existing.createdAt <= this.ttlMs;
    const sameSnapshot = !existing.settled || existing.snapshot === this.currentSnapshot();
    if (fresh && sameSnapshot) return existing.promise;
    this.entries.delete(key);
    return undefined;
  }

  /** Remembers a retrieval that has just started. */
  remember(key: string, promise: Promise<KnowledgeGroundingOutcome>): void {
    this.entries.set(key, { promise, createdAt: this.now(), settled: false, snapshot: undefined });
  }

  /** Notes the snapshot that served `promise`, once it resolved, if it is still the one remembered for `key`. */
  settled(key: string, promise: Promise<KnowledgeGroundingOutcome>): void {
    const stored = this.entries.peek(key);
    if (stored?.promise === promise) {
      stored.settled = true;
      stored.snapshot = this.currentSnapshot();
    }
  }
}

/**
 * The memo key of a turn: what the engine actually reads (it truncates the query and each turn), so equal keys
 * mean equal retrievals. Integrations are compared case-insensitively by the engine, hence the normalization.
 */
export function memoKeyOf(
  turn: PromptTurn,
  scope: KnowledgeRequestScope | undefined,
  shadow: boolean | undefined,
): string {
  const integrations = scope?.enabledIntegrations
    ? [...new Set(scope.enabledIntegrations.map((name) => name.toLowerCase()))].sort()
    : [];
  return JSON.stringify([
    turn.query.slice(0, MAX_QUERY_CHARS),
    turn.recentTurns
      .slice(-DEFAULT_RECENT_TURNS)
      .map((recent) => [recent.role, recent.text.slice(0, HISTORY_TURN_CHARS)]),
    integrations,
    shadow ?? null,
  ]);
}
