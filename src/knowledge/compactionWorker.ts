/**
 * A compaction worker: the entry point of a worker thread that compacts the fields of a changed index for the
 * main thread (see `compactionThread.ts` and `compactionProtocol.ts`), with the code the main thread would run
 * (`compactedField`), so the result is the same bit for bit.
 *
 * Loaded only by URL into a worker thread (never imported by the engine), and only in Node: the thread facilities
 * are looked up at run time, so this module imports no `node:` specifier either.
 */
import {
  COMPACTION_WORKER_MARKER,
  type CompactionReply,
  type CompactionTask,
  type CompactionWorkerData,
  FieldCompactionServer,
  transferredBuffers,
} from "./compactionProtocol.js";
import { nodeBuiltin } from "./runtime.js";

type WorkerPort = {
  postMessage(message: CompactionReply, transfer?: ArrayBuffer[]): void;
  on(event: "message", listener: (message: CompactionTask) => void): void;
};
type WorkerThreads = { isMainThread: boolean; workerData: unknown; parentPort: WorkerPort | null };

function isCompactionWorkerData(data: unknown): data is CompactionWorkerData {
  return (
    typeof data === "object" &&
    data !== null &&
    (data as CompactionWorkerData).marker === COMPACTION_WORKER_MARKER
  );
}

/** Serves the main thread's tasks (when this module runs as a compaction worker's entry point). */
function serve(port: WorkerPort, data: CompactionWorkerData): void {
  const server = new FieldCompactionServer(new Uint8Array(data.staging));
  port.on("message", (task) => {
    try {
      if (task.kind === "chunk") {
        server.receive(task);
        port.postMessage({ kind: "received" });
      } else {
        const arrays = server.compact(task);
        port.postMessage({ kind: "field", arrays }, transferredBuffers(arrays));
      }
    } catch (caught) {
      port.postMessage({
        kind: "failed",
        message: caught instanceof Error ? caught.message : String(caught),
      });
    }
  });
}

/**
 * The nice value this thread asks for: the lowest priority. Compaction is background work that may finish later; the
 * main thread serves turns and timers, and on a host with as many busy threads as cores it should not wait for this one.
 */
export const COMPACTION_WORKER_NICE = 19;

type OperatingSystem = { setPriority(priority: number): void };

/**
 * Lowers this thread's scheduling priority. On Linux a nice value belongs to a thread, so `setPriority(priority)` (pid
 * 0: the calling thread) lowers the worker alone, not the process; elsewhere it may lower the whole process, which
 * would also slow the main thread, so it is done on Linux only. Raising a nice value needs no privilege; any refusal
 * leaves the priority as it was (the compaction is the same, only scheduled differently).
 */
function lowerThreadPriority(): void {
  const os = nodeBuiltin<OperatingSystem>("node:os");
  const platform = (globalThis as { process?: { platform?: string } }).process?.platform;
  if (!os || platform !== "linux") return;
  try {
    os.setPriority(COMPACTION_WORKER_NICE);
  } catch {
    // Refused: the worker keeps the process's priority.
  }
}

const threads = nodeBuiltin<WorkerThreads>("node:worker_threads");
if (threads && !threads.isMainThread && threads.parentPort && isCompactionWorkerData(threads.workerData)) {
  lowerThreadPriority();
  serve(threads.parentPort, threads.workerData);
}
