/**
 * OpenTelemetry spans for groundings and builds, through the tracer the host passes (`telemetry: { tracer }`), or
 * the one a Node entry point passes (the host's `@opentelemetry/api`, see `src/openTelemetry.ts`). Nothing is
 * imported: the tracer parents each span on its active context (the AI SDK's span, when grounding runs inside
 * one), so the root export stays free of dependencies and bundles for any runtime.
 * Tracing never changes an outcome: a tracer or span that throws is ignored.
 */
import type {
  KnowledgeGroundingConfig,
  KnowledgeTelemetryAttributeValue,
  KnowledgeTelemetrySpan,
  KnowledgeTelemetryTracer,
} from "../types/knowledge.js";

/** OpenTelemetry's `SpanStatusCode.ERROR`. */
const STATUS_ERROR = 2;

/** Span attributes; undefined values are left out. */
export type SpanAttributes = Record<string, KnowledgeTelemetryAttributeValue | undefined>;

/** Whether a value can start spans (has `startActiveSpan`). */
export function isTracer(value: unknown): value is KnowledgeTelemetryTracer {
  return (
    value !== null &&
    typeof value === "object" &&
    typeof (value as { startActiveSpan?: unknown }).startActiveSpan === "function"
  );
}

/** Whether a configuration allows spans at all (`telemetry.isEnabled` is not false). */
export function telemetryAllowed(config: KnowledgeGroundingConfig): boolean {
  const telemetry = config.telemetry;
  return !(telemetry && typeof telemetry === "object" && telemetry.isEnabled === false);
}

/**
 * The tracer of a configuration when tracing is on, otherwise `fallback` (a tracer an entry point supplies when
 * the host configured none), or null (read from the engine's plain copy).
 */
export function telemetryTracer(
  config: KnowledgeGroundingConfig,
  fallback: KnowledgeTelemetryTracer | null = null,
): KnowledgeTelemetryTracer | null {
  if (!telemetryAllowed(config)) return null;
  const tracer = config.telemetry?.tracer;
  if (isTracer(tracer)) return tracer;
  return isTracer(fallback) ? fallback : null;
}

function defined(attributes: SpanAttributes): Record<string, KnowledgeTelemetryAttributeValue> {
  const result: Record<string, KnowledgeTelemetryAttributeValue> = {};
  for (const [key, value] of Object.entries(attributes)) if (value !== undefined) result[key] = value;
  return result;
}

function quietly(action: () => unknown): void {
  try {
    action();
  } catch {
    // A broken span must not change what the engine returns.
  }
}

/**
 * Runs `work` inside an active span named `name` (or without one when `tracer` is null or fails to start one).
 * `describe` turns the work's result into attributes, and an error status with `failure` as its message when
 * given; a rejection is recorded as an error too. The span ends when the work settles.
 */
export async function traced<Result>(
  tracer: KnowledgeTelemetryTracer | null,
  name: string,
  attributes: SpanAttributes,
  work: () => Promise<Result>,
  describe: (result: Result) => { attributes: SpanAttributes; failure?: string },
): Promise<Result> {
  if (!tracer) return work();
  let started = false;
  let running: Promise<Result> | undefined;
  try {
    return await tracer.startActiveSpan(
      name,
      { attributes: defined(attributes) },
      (span: KnowledgeTelemetrySpan) => {
        started = true;
        running = (async () => {
          try {
            const result = await work();
            quietly(() => {
              const description = describe(result);
              for (const [key, value] of Object.entries(defined(description.attributes)))
                span.setAttribute(key, value);
              if (description.failure !== undefined)
                span.setStatus({ code: STATUS_ERROR, message: description.failure });
            });
            return result;
          } catch (caught) {
            quietly(() =>
              span.setStatus({
                code: STATUS_ERROR,
                message: caught instanceof Error ? caught.message : String(caught),
              }),
            );
            throw caught;
          } finally {
            quietly(() => span.end());
          }
        })();
        return running;
      },
    );
  } catch (caught) {
    // The tracer threw before running the work: run it untraced. After: the work's own rejection, or a tracer
    // that threw afterwards, in which case the work's result still stands.
    if (!started) return work();
    if (running) return running;
    throw caught;
  }
}
