/**
 * Fallback orchestration: the ordered attempt plan of one call (primary or model-pool members, then the model
 * chain, then the `fallbackProvider`/`fallbackModel` option, then targets asked from `providerFallback`) and the
 * loop that runs it.
 *
 * The loop is shared by generate and stream: an attempt either returns (a generate result, or a stream that has
 * produced its first content) or throws, and a throw moves on to the next target. A caller abort is rethrown at
 * once and never falls back. Every attempt receives the same prepared request, so grounding, which ran before the
 * loop, is neither repeated nor appended twice.
 *
 * @module
 */

import type { ResolvedCallOptions } from "./dynamic.js";
import {
  AllAttemptsFailedError,
  type AttemptRecord,
  errorMessageOf,
  InvalidOptionsError,
  NeuroLinkError,
  ProviderCallError,
} from "./errors.js";
import {
  isLanguageModelObject,
  type ModelRequest,
  type ProviderResolver,
  type ResolvedModel,
  splitProviderModel,
} from "./providers.js";
import type {
  FallbackTarget,
  LanguageModelObject,
  ModelChainEntry,
  ModelPoolConfig,
  ModelPoolMember,
  NeurolinkConstructorConfig,
  ProviderFallbackCallback,
} from "./types.js";

/** One planned attempt. */
export type AttemptTarget = {
  request: ModelRequest;
  source: AttemptRecord["source"];
  /** Index of the pool member, for cooldown bookkeeping. */
  poolIndex?: number;
};

/** Per-instance state of a model pool: member cooldowns and the round-robin cursor. */
export class ModelPool {
  readonly members: readonly ModelPoolMember[];
  private readonly strategy: "priority" | "round-robin";
  private readonly cooldownMs: number;
  private readonly cooldownUntil: number[];
  private cursor = 0;

  constructor(
    config: ModelPoolConfig,
    private readonly now: () => number = Date.now,
  ) {
    this.members = [...config.members];
    this.strategy = config.strategy ?? "priority";
    this.cooldownMs = Math.max(0, config.cooldownMs ?? 60_000);
    this.cooldownUntil = this.members.map(() => 0);
  }

  /** Members in the order to try for the next call: available ones first, cooling ones last. */
  plan(): AttemptTarget[] {
    const count = this.members.length;
    const start = this.strategy === "round-robin" && count > 0 ? this.cursor++ % count : 0;
    const time = this.now();
    const available: AttemptTarget[] = [];
    const cooling: AttemptTarget[] = [];
    for (let offset = 0; offset < count; offset++) {
      const index = (start + offset) % count;
      const member = this.members[index] as ModelPoolMember;
      const target: AttemptTarget = {
        request: {
          provider: member.provider,
          ...(member.model === undefined ? {} : { model: member.model }),
        },
        source: "model-pool",
        poolIndex: index,
      };
      ((this.cooldownUntil[index] ?? 0) > time ? cooling : available).push(target);
    }
    return available.concat(cooling);
  }

  markFailure(index: number): void {
    this.cooldownUntil[index] = this.now() + this.cooldownMs;
  }

  markSuccess(index: number): void {
    this.cooldownUntil[index] = 0;
  }

  /** Members currently cooling down (for diagnostics). */
  coolingMembers(): ModelPoolMember[] {
    const time = this.now();
    return this.members.filter((_, index) => (this.cooldownUntil[index] ?? 0) > time);
  }
}

/** Turns a model-chain entry into a target; bare model ids run on the primary call's provider. */
export function chainEntryToTarget(
  entry: ModelChainEntry,
  primaryProvider: string | undefined,
  source: AttemptRecord["source"],
  splitEntry: (value: string) => { provider?: string; model: string } = splitProviderModel,
): AttemptTarget {
  if (typeof entry === "string") {
    const parts = splitEntry(entry);
    const provider = parts.provider ?? primaryProvider;
    return { request: { ...(provider === undefined ? {} : { provider }), model: parts.model }, source };
  }
  if ("specificationVersion" in entry) return { request: { model: entry as LanguageModelObject }, source };
  const target = entry as FallbackTarget;
  const provider = target.provider ?? primaryProvider;
  return {
    request: {
      ...(provider === undefined ? {} : { provider }),
      ...(target.model === undefined ? {} : { model: target.model }),
    },
    source,
  };
}

/** What the orchestration loop needs from its caller. */
export type FallbackRun<T> = {
  resolver: ProviderResolver;
  targets: readonly AttemptTarget[];
  providerFallback?: ProviderFallbackCallback;
  maxAttempts: number;
  callerSignal?: AbortSignal;
  /** Runs one attempt; throws to fall back. */
  attempt: (resolved: ResolvedModel, target: AttemptTarget) => Promise<T>;
  /** Classifies a failure for the attempt record. */
  phaseOf: (error: unknown) => AttemptRecord["phase"];
  onFallback?: (event: {
    from: { provider: string; model: string };
    to: { provider: string; model: string };
    error: unknown;
    attempt: number;
  }) => void;
  onFailure?: (target: AttemptTarget, error: unknown) => void;
  onSuccess?: (target: AttemptTarget) => void;
  now?: () => number;
};

/** The successful attempt and the record of every attempt. */
export type FallbackOutcome<T> = {
  value: T;
  resolved: ResolvedModel;
  attempts: AttemptRecord[];
};

function describeRequest(request: ModelRequest): { provider: string; model: string } {
  if (typeof request.model === "object")
    return { provider: request.model.provider, model: request.model.modelId };
  return { provider: request.provider ?? "(default)", model: request.model ?? "(default)" };
}

/**
 * Runs attempts until one succeeds. Throws the caller's abort reason when the caller aborts; when only one attempt
 * ran, its error if it is one of ours (a timeout, a missing setting) and {@link ProviderCallError} around it
 * otherwise; {@link AllAttemptsFailedError} when several ran.
 */
export async function runWithFallback<T>(run: FallbackRun<T>): Promise<FallbackOutcome<T>> {
  const now = run.now ?? Date.now;
  const attempts: AttemptRecord[] = [];
  let nextStatic = 0;
  let lastError: unknown;
  let lastFailure: { provider: string; model: string } | undefined;
  while (attempts.length < run.maxAttempts) {
    if (run.callerSignal?.aborted) throw run.callerSignal.reason;
    let target: AttemptTarget | undefined = run.targets[nextStatic];
    if (target !== undefined) {
      nextStatic += 1;
    } else {
      if (!run.providerFallback || attempts.length === 0) break;
      let proposal: FallbackTarget | null;
      try {
        proposal = await run.providerFallback(lastError);
      } catch {
        // A throwing callback means "no further target", like returning null.
        proposal = null;
      }
      if (!proposal) break;
      target = {
        request: {
          ...(proposal.provider === undefined ? {} : { provider: proposal.provider }),
          ...(proposal.model === undefined ? {} : { model: proposal.model }),
        },
        source: "provider-fallback",
      };
    }
    const started = now();
    // One attempt's record: a success without `failure`, a failure with its error (and phase when known).
    const record = (
      attempted: { provider: string; model: string },
      failure?: { error: unknown; phase: AttemptRecord["phase"] },
    ): void => {
      attempts.push({
        attempt: attempts.length + 1,
        provider: attempted.provider,
        model: attempted.model,
        source: target.source,
        outcome: failure ? "failure" : "success",
        durationMs: now() - started,
        ...(failure && {
          error: failure.error,
          errorMessage: errorMessageOf(failure.error),
          ...(failure.phase === undefined ? {} : { phase: failure.phase }),
        }),
      });
    };
    let resolved: ResolvedModel;
    try {
      resolved = await run.resolver.resolve(target.request);
    } catch (error) {
      const described = describeRequest(target.request);
      record(described, { error, phase: "setup" });
      lastError = error;
      lastFailure = described;
      continue;
    }
    if (lastFailure !== undefined) {
      run.onFallback?.({
        from: lastFailure,
        to: { provider: resolved.provider, model: resolved.model },
        error: lastError,
        attempt: attempts.length + 1,
      });
    }
    try {
      const value = await run.attempt(resolved, target);
      record(resolved);
      run.onSuccess?.(target);
      return { value, resolved, attempts };
    } catch (error) {
      // An abort by the caller is a decision, not a failure: never retried elsewhere.
      if (run.callerSignal?.aborted) throw run.callerSignal.reason;
      const phase = run.phaseOf(error);
      record(resolved, { error, phase });
      lastError = error;
      lastFailure = { provider: resolved.provider, model: resolved.model };
      run.onFailure?.(target, error);
    }
  }
  const only = attempts.length === 1 ? attempts[0] : undefined;
  if (only !== undefined) {
    throw NeuroLinkError.isInstance(only.error) ? only.error : new ProviderCallError(only);
  }
  throw new AllAttemptsFailedError(attempts);
}

/**
 * The ordered targets of one call: the call's own provider/model (else the model pool's members, else the
 * configured model), then the model chain, then the `fallbackProvider`/`fallbackModel` option. Only the first
 * with `disableInternalFallback`. Throws `InvalidOptionsError` naming a malformed chain entry.
 */
export function planAttemptTargets(
  resolved: ResolvedCallOptions,
  config: Pick<NeurolinkConstructorConfig, "provider" | "model" | "modelChain">,
  resolver: Pick<ProviderResolver, "split">,
  modelPool: Pick<ModelPool, "plan"> | undefined,
): AttemptTarget[] {
  const model = resolved.model;
  let targets: AttemptTarget[];
  let primaryProvider: string | undefined;
  if (isLanguageModelObject(model)) {
    targets = [{ request: { model }, source: "primary" }];
    primaryProvider = resolved.provider ?? config.provider;
  } else if (resolved.provider !== undefined || model !== undefined) {
    targets = [
      {
        request: {
          ...(resolved.provider === undefined ? {} : { provider: resolved.provider }),
          ...(model === undefined ? {} : { model }),
        },
        source: "primary",
      },
    ];
    primaryProvider =
      resolved.provider ?? (typeof model === "string" ? resolver.split(model).provider : undefined);
  } else if (modelPool) {
    targets = modelPool.plan();
  } else if (isLanguageModelObject(config.model)) {
    targets = [{ request: { model: config.model as LanguageModelObject }, source: "primary" }];
  } else {
    const configured = config.model;
    targets = [{ request: typeof configured === "string" ? { model: configured } : {}, source: "primary" }];
  }
  if (resolved.disableInternalFallback === true) return targets.slice(0, 1);
  const chainPath = resolved.modelChain === undefined ? "config.modelChain" : "modelChain";
  const chain = resolved.modelChain ?? config.modelChain ?? [];
  if (!Array.isArray(chain)) throw new InvalidOptionsError(chainPath, "must be an array");
  chain.forEach((entry: unknown, index) => {
    if (typeof entry !== "string" && (typeof entry !== "object" || entry === null)) {
      throw new InvalidOptionsError(
        `${chainPath}[${index}]`,
        "must be a model id, `{ provider, model }` or an AI SDK model",
      );
    }
  });
  for (const entry of chain) {
    targets.push(chainEntryToTarget(entry, primaryProvider, "model-chain", (value) => resolver.split(value)));
  }
  if (resolved.fallbackProvider !== undefined || resolved.fallbackModel !== undefined) {
    const provider = resolved.fallbackProvider ?? primaryProvider;
    targets.push({
      request: {
        ...(provider === undefined ? {} : { provider }),
        ...(resolved.fallbackModel === undefined ? {} : { model: resolved.fallbackModel }),
      },
      source: "fallback-option",
    });
  }
  return targets;
}
