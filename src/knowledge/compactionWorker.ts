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

const threads = nodeBuiltin<WorkerThreads>("node:worker_threads");
if (threads && !threads.isMainThread && threads.parentPort && isCompactionWorkerData(threads.workerData))
  serve(threads.parentPort, threads.workerData);
