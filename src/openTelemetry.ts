/**
 * The host's OpenTelemetry tracer, for the Node entry points (`lexground/neurolink`, `lexground/ai-sdk`,
 * `lexground/ai-sdk/tool`, `lexground/langchain`). `@opentelemetry/api` is an optional peer: when the application
 * has it (every AI SDK app does, `ai` depends on it), groundings and builds are spans of the tracer named
 * `lexground`, children of the active span (the AI SDK's `ai.generateText…` spans under `experimental_telemetry`),
 * recorded by whatever tracer provider the application registered, and no-ops when it registered none. Without
 * the package, nothing is traced and nothing fails.
 *
 * The package is looked up synchronously through Node's `require` (found with `process.getBuiltinModule`), so an
 * engine built right after import traces its first build, and no bundler sees an import of a package that may be
 * missing. Outside Node (browsers, edge runtimes) nothing is looked up: pass `telemetry: { tracer }` there. The
 * root export never imports this module; it stays free of dependencies.
 *
 * @module
 */
import { nodeBuiltin } from "./knowledge/runtime.js";
import { isTracer } from "./knowledge/telemetry.js";
import type { KnowledgeTelemetryTracer } from "./types/knowledge.js";

/** The name of lexground's tracer (OpenTelemetry's instrumentation scope). */
export const OPEN_TELEMETRY_TRACER_NAME = "lexground";

/** The part of `@opentelemetry/api` used here. */
type OpenTelemetryApi = { trace?: { getTracer?: (name: string) => unknown } };

/** Looked up once: the tracer, or null when the package is missing (or this is not Node). */
let hostTracer: KnowledgeTelemetryTracer | null | undefined;

/** Loads `@opentelemetry/api` with Node's `require`, from this module's location; undefined outside Node. */
function requireOpenTelemetry(): unknown {
  const modules = nodeBuiltin<{ createRequire(from: string): (id: string) => unknown }>("node:module");
  if (!modules) return undefined;
  return modules.createRequire(import.meta.url)("@opentelemetry/api");
}

/**
 * The `lexground` tracer of `@opentelemetry/api` as `load` returns it, or null when loading fails (the package
 * is not installed, or this is not Node) or the module has no usable `trace.getTracer`.
 */
export function openTelemetryTracerFrom(load: () => unknown): KnowledgeTelemetryTracer | null {
  try {
    const api = load() as OpenTelemetryApi | undefined;
    const tracer = api?.trace?.getTracer?.(OPEN_TELEMETRY_TRACER_NAME);
    return isTracer(tracer) ? tracer : null;
  } catch {
    // Not installed, or not loadable here: no spans.
    return null;
  }
}

/**
 * The host's OpenTelemetry tracer named `lexground` when `@opentelemetry/api` is installed and this is Node,
 * otherwise null. Looked up on the first call and remembered.
 */
export function hostOpenTelemetryTracer(): KnowledgeTelemetryTracer | null {
  if (hostTracer === undefined) hostTracer = openTelemetryTracerFrom(requireOpenTelemetry);
  return hostTracer;
}
