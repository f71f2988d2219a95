/**
 * A scoring worker: the entry point of a resident worker thread that scores one part of a search's document ids
 * while the main thread scores the other (see `splitScoring.ts`), with the same loop (`scoreLists`), so every score
 * is the same bits. It reads the index's postings in shared memory, as registered by the main thread.
 *
 * Loaded only by URL into a worker thread (never imported by the engine), and only in Node: the thread facilities
 * are looked up at run time, so this module imports no `node:` specifier either.
 */
import { nodeBuiltin } from "./runtime.js";
import { type QueryLists, type ScoringList, scoreLists } from "./scoreLists.js";
import {
  CANCELLED,
  DONE,
  exchangeBest,
  FAILED,
  READY,
  rangeClaimer,
  resultViews,
  SCORING_WORKER_MARKER,
  type ScoringMessage,
  type ScoringReply,
  type ScoringWorkerData,
  WORKER_SIDE,
} from "./scoringProtocol.js";

type WorkerPort = {
  postMessage(message: ScoringReply): void;
  on(event: "message", listener: (message: ScoringMessage) => void): void;
};
type WorkerThreads = { isMainThread: boolean; workerData: unknown; parentPort: WorkerPort | null };

type RegisteredIndex = { fields: (ScoringList | null)[]; ranks: Int32Array; documentCount: number };

/** Thrown through the scoring loop when the main thread gave the search up. */
class Cancelled extends Error {}

function isScoringWorkerData(data: unknown): data is ScoringWorkerData {
  return (
    typeof data === "object" && data !== null && (data as ScoringWorkerData).marker === SCORING_WORKER_MARKER
  );
}

/** Scores one search's part and writes it to the search's result buffer. */
function search(
  index: RegisteredIndex,
  message: Extract<ScoringMessage, { kind: "search" }>,
  control: Int32Array,
): void {
  const listCount = message.fields.length;
  const lists: QueryLists = {
    postings: Array.from(message.fields, (field) => index.fields[field]!),
    starts: message.starts,
    ends: message.ends,
    upper: message.upper,
  };
  const positions = new Map<number, Int32Array>();
  const capacity = Math.min(Math.ceil(message.topK), index.documentCount);
  const board = new Int32Array(message.board, 0, 2 * capacity);
  const claim = rangeClaimer(control, message.bounds);
  const first = claim();
  const ranked = scoreLists(
    lists,
    index.documentCount,
    index.ranks,
    message.topK,
    message.mask,
    message.windows,
    positions,
    {
      // Nothing left to claim (the main thread read every range): an empty range, an empty result.
      from: first?.from ?? 0,
      to: first?.to ?? 0,
      next: claim,
      exchange: (_threshold, best) => {
        if (Atomics.load(control, CANCELLED) === message.sequence) throw new Cancelled();
        return exchangeBest(board, WORKER_SIDE, capacity, best);
      },
    },
  );
  const views = resultViews(message.result, capacity, listCount);
  ranked.forEach(({ doc, score }, slot) => {
    views.docs[slot] = doc;
    views.scores[slot] = score;
    views.positions.set(positions.get(doc)!, slot * listCount);
  });
  views.count[0] = ranked.length;
}

/** Serves the main thread's messages (when this module runs as a scoring worker's entry point). */
function serve(port: WorkerPort, data: ScoringWorkerData): void {
  const control = new Int32Array(data.control);
  const indexes = new Map<number, RegisteredIndex>();
  port.on("message", (message) => {
    if (message.kind === "index") {
      indexes.set(message.id, {
        fields: message.fields.map((field) => field ?? null),
        ranks: message.ranks,
        documentCount: message.documentCount,
      });
    } else if (message.kind === "drop") {
      indexes.delete(message.id);
    } else {
      try {
        const index = indexes.get(message.id);
        if (!index) throw new Error("unknown index");
        search(index, message, control);
      } catch {
        // Cancelled, or failed: the main thread scores the part itself.
        Atomics.store(control, FAILED, message.sequence);
      }
      Atomics.store(control, DONE, message.sequence);
      Atomics.notify(control, DONE);
    }
  });
  Atomics.store(control, READY, 1);
  port.postMessage({ kind: "ready" });
}

const threads = nodeBuiltin<WorkerThreads>("node:worker_threads");
if (threads && !threads.isMainThread && threads.parentPort && isScoringWorkerData(threads.workerData)) {
  serve(threads.parentPort, threads.workerData);
}
