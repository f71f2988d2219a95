/**
 * The engine: one immutable snapshot per source set, built once (through the process cache), then per turn
 * `ground()` selects, renders and reports, failing open on every error and on timeout.
 *
 * `KnowledgeGroundingEngine` is one class written in layers, one file each: its state and status
 * (`engineState.ts`), builds (`engineBuilds.ts`), updates (`engineUpdates.ts`) and, here, turns; the errors and
 * failure reasons are in `engineErrors.ts`.
 */
import type {
  KnowledgeGroundingConfig,
  KnowledgeGroundingInput,
  KnowledgeGroundingMetadata,
  KnowledgeGroundingOutcome,
  KnowledgeRetrievalRequest,
  KnowledgeSelection,
  KnowledgeSource,
  KnowledgeTelemetryTracer,
} from "../types/knowledge.js";
import { assembleKnowledgeContext } from "./context.js";
import { DEFAULT_ANALYZER, DEFAULT_RECENT_TURNS } from "./defaults.js";
import { INDEX_NOT_READY, KnowledgeGroundingTimeoutError } from "./engineErrors.js";
import { readTurnField } from "./engineState.js";
import { KnowledgeEngineUpdates } from "./engineUpdates.js";
import { describeError } from "./hostValues.js";
import { retrieve, retrieveFrom } from "./retrieval.js";
import type { KnowledgeIndexBackend } from "./searchBackend.js";
import { asShadowOutcome } from "./shadow.js";
import { isTracer, traced } from "./telemetry.js";

export {
  BUILD_FAILED,
  INDEX_NOT_READY,
  KnowledgeGroundingTimeoutError,
  KnowledgeRegistryError,
  VALIDATION_FAILED,
} from "./engineErrors.js";

/** Metadata of a turn that selected nothing: disabled, not ready, or failed open (with its reason). */
export function emptyMetadata(durationMs: number, failureReason?: string): KnowledgeGroundingMetadata {
  return {
    retrievalMode: "lexical",
    selectedIds: [],
    expandedIds: [],
    candidateCount: 0,
    contextTokens: 0,
    truncated: false,
    durationMs,
    failureReason,
  };
}

/** A boolean option of a turn's input, or undefined when absent, not a boolean, or unreadable (never throws). */
function readTurnFlag(input: unknown, key: "shadow" | "shadowAlternatives"): boolean | undefined {
  const value = readTurnField(input, key);
  return typeof value === "boolean" ? value : undefined;
}

/**
 * Knowledge grounding engine. Construction never throws and never waits: it reads the configuration once (each
 * option exactly once, into a plain copy: later changes to the host's object have no effect), validates it and
 * starts the one-time build; `ready()` resolves when that build settles. `ground()` never throws.
 *
 * Unlike NeuroLink's, the engine can be rebuilt: `rebuild(sources?)` builds a new snapshot and swaps it in
 * atomically when valid, while the previous snapshot keeps serving. Whatever order concurrent builds finish in,
 * the most recently requested valid set ends up serving: an invalid or failing set never replaces a valid one,
 * and a set requested earlier never replaces one requested later.
 */
export class KnowledgeGroundingEngine extends KnowledgeEngineUpdates {
  /**
   * One engine per shadow alternative: the same sources (this engine's copy), blocked domains, timeout and
   * logger, the alternative's own preset and settings, always in shadow mode. Identical index settings share
   * one build through the process cache.
   */
  protected createAlternatives(
    config: KnowledgeGroundingConfig,
  ): (readonly [string, KnowledgeGroundingEngine])[] {
    const alternatives = config.shadowAlternatives;
    if (!alternatives) return [];
    return Object.entries(alternatives).map(([name, alternative]) => {
      const engine = new KnowledgeGroundingEngine(
        {
          enabled: true,
          sources: this.sources as KnowledgeSource[],
          ...(config.blockedDomains === undefined ? {} : { blockedDomains: config.blockedDomains }),
          ...(config.timeoutMs === undefined ? {} : { timeoutMs: config.timeoutMs }),
          ...(alternative.preset === undefined ? {} : { preset: alternative.preset }),
          ...(alternative.retrieval === undefined ? {} : { retrieval: alternative.retrieval }),
          ...(alternative.context === undefined ? {} : { context: alternative.context }),
          logger: this.logger,
          shadow: true,
        },
        this.now,
      );
      return [name, engine] as const;
    });
  }

  /** Builds the retrieval request: the query, the last {@link DEFAULT_RECENT_TURNS} turns, the integrations. */
  private buildRequest(input: KnowledgeGroundingInput): KnowledgeRetrievalRequest {
    const turns = Array.isArray(input.recentTurns) ? input.recentTurns : [];
    const enabled = input.scope?.enabledIntegrations;
    return {
      query: typeof input.query === "string" ? input.query : "",
      recentTurns: turns.slice(-DEFAULT_RECENT_TURNS),
      enabledIntegrations: Array.isArray(enabled) ? enabled : [],
    };
  }

  /**
   * Grounds one turn: waits for the index (counted in the timeout), retrieves, renders. Never throws: on any
   * failure or timeout the outcome has no context and `metadata.failureReason` says why. In shadow mode
   * (`input.shadow`, else `config.shadow`) the outcome has no context either: the block it would have injected is
   * in `shadowContext` and `metadata.shadow` is true. Configured shadow alternatives are grounded on the same
   * input, in shadow mode, and reported in `alternatives` (unless `input.shadowAlternatives` is false).
   */
  async ground(input: KnowledgeGroundingInput): Promise<KnowledgeGroundingOutcome> {
    const tracer = this.tracer ?? this.turnTracer(input);
    if (!tracer) return this.groundUntraced(input);
    return traced(
      tracer,
      "lexground.ground",
      { "lexground.preset": this.effective?.preset },
      () => this.groundUntraced(input),
      ({ ephemeralContext, metadata }) => ({
        attributes: {
          "lexground.grounded": ephemeralContext !== null,
          "lexground.duration_ms": metadata.durationMs,
          "lexground.candidate_count": metadata.candidateCount,
          "lexground.selected_ids": metadata.selectedIds,
          "lexground.expanded_ids": metadata.expandedIds,
          "lexground.confidence": metadata.confidence,
          "lexground.context_tokens": metadata.contextTokens,
          "lexground.truncated": metadata.truncated,
          "lexground.failure_reason": metadata.failureReason,
          "lexground.shadow": metadata.shadow,
        },
        failure: metadata.failureReason,
      }),
    );
  }

  /** The tracer a turn's input carries (`input.tracer`), when tracing is allowed and it is one. */
  private turnTracer(input: KnowledgeGroundingInput): KnowledgeTelemetryTracer | null {
    if (!this.tracingAllowed) return null;
    const tracer = readTurnField(input, "tracer");
    return isTracer(tracer) ? tracer : null;
  }

  /** {@link ground} without its span: shadow mode and alternatives around {@link groundTurn}. */
  private async groundUntraced(input: KnowledgeGroundingInput): Promise<KnowledgeGroundingOutcome> {
    if (!this.isEnabled()) return { ephemeralContext: null, metadata: emptyMetadata(0), retrieval: null };
    const shadowFlag = readTurnFlag(input, "shadow");
    const shadow = shadowFlag ?? this.shadow;
    const runAlternatives =
      this.alternatives.length > 0 && readTurnFlag(input, "shadowAlternatives") !== false;
    const primary = this.groundTurn(input);
    if (!runAlternatives) {
      const outcome = await primary;
      return shadow ? asShadowOutcome(outcome) : outcome;
    }
    const alternativeInput: KnowledgeGroundingInput = {
      query: readTurnField(input, "query") as string,
      recentTurns: readTurnField(input, "recentTurns") as KnowledgeGroundingInput["recentTurns"],
      scope: readTurnField(input, "scope") as KnowledgeGroundingInput["scope"],
      shadow: true,
      shadowAlternatives: false,
    };
    const [outcome, ...others] = await Promise.all([
      primary,
      ...this.alternatives.map(([, engine]) => engine.ground(alternativeInput)),
    ]);
    const alternatives: Record<string, KnowledgeGroundingOutcome> = {};
    this.alternatives.forEach(([name], index) => {
      alternatives[name] = others[index]!;
    });
    return { ...(shadow ? asShadowOutcome(outcome!) : outcome!), alternatives };
  }

  /** One turn with this engine's own configuration (see {@link ground}). */
  private async groundTurn(input: KnowledgeGroundingInput): Promise<KnowledgeGroundingOutcome> {
    const started = this.now();
    const wallStart = Date.now();
    if (!this.isEnabled()) return { ephemeralContext: null, metadata: emptyMetadata(0), retrieval: null };
    const timeoutMs = this.timeoutMs;
    let timer: ReturnType<typeof setTimeout> | undefined;
    try {
      const work = this.groundNow(input ?? ({} as KnowledgeGroundingInput), started);
      // The race may be lost to the timer; the work's own late failure must not become an unhandled rejection.
      work.catch(() => {});
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new KnowledgeGroundingTimeoutError(timeoutMs)), timeoutMs);
      });
      const outcome = await Promise.race([work, timeout]);
      // Timers cannot interrupt synchronous scoring: a result that arrives late is discarded.
      if (Date.now() - wallStart > timeoutMs) throw new KnowledgeGroundingTimeoutError(timeoutMs);
      return outcome;
    } catch (caught) {
      return {
        ephemeralContext: null,
        metadata: emptyMetadata(this.now() - started, describeError(caught)),
        retrieval: null,
      };
    } finally {
      if (timer !== undefined) clearTimeout(timer);
    }
  }

  private async groundNow(
    input: KnowledgeGroundingInput,
    started: number,
  ): Promise<KnowledgeGroundingOutcome> {
    // With a backend, a published generation serves while this engine publishes its own sources.
    if (!(this.backend && this.backendServing)) {
      try {
        await this.ready();
      } catch {
        // A strict engine's ready() rejects when nothing serves; the turn reports the reason below instead.
      }
    }
    this.retryFailedBuild();
    const snapshot = this.snapshot;
    if (this.backend) return this.groundWithBackend(this.backend, input, started);
    if (!snapshot) return this.notReady(started);
    const request = this.buildRequest(input);
    const selection = retrieve(snapshot, request, this.resolved, this.config.blockedDomains);
    return this.outcomeOf(selection, request, started);
  }

  /** The outcome of a turn that nothing serves. */
  private notReady(started: number): KnowledgeGroundingOutcome {
    return {
      ephemeralContext: null,
      metadata: emptyMetadata(this.now() - started, this.unavailableReason ?? INDEX_NOT_READY),
      retrieval: null,
    };
  }

  /** A turn against the backend's current generation; a backend error rejects (the turn fails open). */
  private async groundWithBackend(
    backend: KnowledgeIndexBackend,
    input: KnowledgeGroundingInput,
    started: number,
  ): Promise<KnowledgeGroundingOutcome> {
    const index = await backend.current();
    if (!index) {
      // Nothing published (or the database lost it): an engine with sources publishes them again.
      this.republish();
      return this.notReady(started);
    }
    this.backendServing = true;
    const request = this.buildRequest(input);
    const selection = await retrieveFrom(index.searcher, request, this.resolved, this.config.blockedDomains);
    return this.outcomeOf(selection, request, started);
  }

  /** Renders a selection into the turn's outcome. */
  private outcomeOf(
    selection: KnowledgeSelection,
    request: KnowledgeRetrievalRequest,
    started: number,
  ): KnowledgeGroundingOutcome {
    const assembled = assembleKnowledgeContext(selection, this.contextConfig, {
      query: request.query,
      analyzer: this.resolved.analyzer ?? DEFAULT_ANALYZER,
    });
    const durationMs = this.now() - started;
    const selectedEntryIds = selection.primary.map((entry) => entry.id);
    const expandedEntryIds = selection.expanded.map((entry) => entry.id);
    const metadata: KnowledgeGroundingMetadata = {
      retrievalMode: "lexical",
      selectedIds: selectedEntryIds,
      expandedIds: expandedEntryIds,
      candidateCount: selection.candidateCount,
      contextTokens: assembled.contextTokens,
      truncated: assembled.truncated,
      durationMs,
      confidence: selection.confidence,
    };
    return {
      ephemeralContext:
        assembled.assembledContext === ""
          ? null
          : {
              content: assembled.assembledContext,
              kind: "knowledge",
              trusted: true,
              citations: assembled.citations,
              metadata: { confidence: selection.confidence },
            },
      metadata,
      retrieval: {
        entries: [...selection.primary, ...selection.expanded],
        assembledContext: assembled.assembledContext,
        confidence: selection.confidence,
        citations: assembled.citations,
        selectedEntryIds,
        expandedEntryIds,
        candidateCount: selection.candidateCount,
        contextTokens: assembled.contextTokens,
        truncated: assembled.truncated,
        durationMs,
        candidates: selection.candidates,
        ...(selection.expansionSkipped ? { expansionSkipped: selection.expansionSkipped } : {}),
        ...(assembled.excerptedIds === undefined ? {} : { excerptedIds: assembled.excerptedIds }),
      },
    };
  }
}
