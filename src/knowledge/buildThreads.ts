/**
 * Node's worker threads as a parallel build uses them, looked up at run time (the root export imports no `node:`
 * module): whether this runtime is Node, how many cores it has, and starting a build worker (`buildWorker.ts`)
 * from the compiled files or from the TypeScript sources.
 */
import type { KnowledgeAnalyzerName } from "../types/knowledge.js";
import type { BuildWorkerData, BuildWorkerReply } from "./buildWorker.js";
import { BUILD_WORKER_MARKER } from "./buildWorkerMarker.js";
import { nodeBuiltin } from "./runtime.js";

/** The part of Node's `MessagePort` the main thread uses. */
export type NodePort = {
  postMessage(message: unknown, transfer?: readonly unknown[]): void;
  close(): void;
};
/** The part of Node's `Worker` the main thread uses. */
export type NodeWorker = {
  on(event: "error" | "exit" | "messageerror", listener: (value: unknown) => void): void;
  unref(): void;
  terminate(): Promise<number>;
};
/** The part of `node:worker_threads` the main thread uses. */
export type WorkerThreads = {
  Worker: new (
    filename: URL | string,
    options: { workerData: unknown; transferList: readonly unknown[]; eval?: boolean },
  ) => NodeWorker;
  MessageChannel: new () => { port1: NodePort; port2: NodePort };
  receiveMessageOnPort(port: NodePort): { message: BuildWorkerReply } | undefined;
};
type NodeOs = { availableParallelism?: () => number; cpus(): readonly unknown[] };
type NodeProcess = { versions: Record<string, string | undefined> };

/** The worker's script when the engine runs from its TypeScript sources: tsx's loader, then the worker module. */
const SOURCE_WORKER = `const { workerData } = process.getBuiltinModule("node:worker_threads");
import("tsx/esm/api").then((api) => { api.register(); return import(workerData.entry); });`;

/** Whether this is Node (other runtimes with a `process`, Bun and Deno, differ in worker details). */
export function isNode(): boolean {
  const process = (globalThis as { process?: NodeProcess }).process;
  return Boolean(process?.versions?.node && !process.versions.bun && !process.versions.deno);
}

/** The cores available to this process (1 when unknown). */
export function availableCores(): number {
  const os = nodeBuiltin<NodeOs>("node:os");
  return os ? (os.availableParallelism?.() ?? os.cpus().length) : 1;
}

/** `node:worker_threads`, or null. */
export function workerThreads(): WorkerThreads | null {
  return nodeBuiltin<WorkerThreads>("node:worker_threads") ?? null;
}

/**
 * Starts a build worker with its own message channel (`port` is the main thread's end); `signal` is incremented
 * by every reply. Throws when the worker cannot start.
 */
export function startBuildWorker(
  threads: WorkerThreads,
  analyzer: KnowledgeAnalyzerName,
  signal: Int32Array,
): { worker: NodeWorker; port: NodePort } {
  const channel = new threads.MessageChannel();
  // A file name in a variable: bundlers leave this `new URL` alone (the worker only ever runs in Node).
  const here = import.meta.url;
  const file = here.endsWith(".ts") ? "./buildWorker.ts" : "./buildWorker.js";
  const entry = new URL(file, here);
  const data: BuildWorkerData = {
    marker: BUILD_WORKER_MARKER,
    analyzer,
    signal,
    port: channel.port2 as unknown as BuildWorkerData["port"],
    entry: entry.href,
  };
  const options = { workerData: data, transferList: [channel.port2] };
  // From the TypeScript sources (development, tests), the worker registers tsx's loader before loading them.
  const worker = entry.pathname.endsWith(".ts")
    ? new threads.Worker(SOURCE_WORKER, { ...options, eval: true })
    : new threads.Worker(entry, options);
  return { worker, port: channel.port1 };
}
