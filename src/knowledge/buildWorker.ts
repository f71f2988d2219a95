/**
 * A build worker: the entry point of a worker thread that tokenizes and counts parts of a registry for a parallel
 * build (see `parallelBuild.ts`). It keeps a term dictionary of its own; each reply carries the counted fields of
 * a part with the worker's term ids, plus the terms it met for the first time in that part, so the main thread
 * can map them to its own ids in the order a single-threaded build would have given them.
 *
 * Loaded only by URL into a worker thread (never imported by the engine), and only in Node: the thread facilities
 * are looked up at run time, so this module imports no `node:` specifier either.
 */
import type { KnowledgeAnalyzerName } from "../types/knowledge.js";
import { getAnalyzer, type TokenAnalyzer } from "./analyzer.js";
import { BUILD_WORKER_MARKER } from "./buildWorkerMarker.js";
import { tokenizeList } from "./document.js";
import { type ScatteredRange, type ScatterInput, type ScatterTarget, scatterRange } from "./fieldPostings.js";
import { normalizePhrases, phraseKey } from "./normalize.js";
import { FIELD_COUNT, IntBuffer } from "./postings.js";
import { nodeBuiltin } from "./runtime.js";
import { TermCounter } from "./termCounter.js";
import { TermDictionary } from "./termDictionary.js";

/** What a build worker is started with. */
export type BuildWorkerData = {
  marker: typeof BUILD_WORKER_MARKER;
  analyzer: KnowledgeAnalyzerName;
  /** Incremented (and notified) after every reply, so the main thread can sleep until one arrives. */
  signal: Int32Array;
  port: BuildWorkerPort;
  /** The URL of this module (what a worker started from the TypeScript sources imports). */
  entry: string;
};

/**
 * A part to count: its entries' field texts, flattened, with the number of texts of each (entry, field), and
 * possibly the buffer of an earlier reply to write the counts into (transferred back and forth, not allocated).
 */
export type BuildWorkerTask = {
  kind?: undefined;
  part: number;
  /** The entries' ids, in order (their phrase keys are computed with the counts). */
  ids: string[];
  texts: string[];
  textCounts: Int32Array;
  buffer?: ArrayBuffer;
};

/** Scatter the postings of a field's terms from `fromTerm` on (see `scatterRange`; the build buffers are shared). */
export type BuildWorkerScatterTask = {
  kind: "scatter";
  request: number;
  input: ScatterInput;
  fromTerm: number;
  /** The field's shared finished arrays to write into (else the range comes back in arrays of its own). */
  target?: ScatterTarget | null;
};

/**
 * A counted part. `counts` holds, per entry and field in order: the field's length in tokens, its number of
 * distinct terms, then (term, frequency) pairs in order of first occurrence, terms as the worker's ids. `newTerms`
 * are the terms whose ids the worker gave while counting this part, in id order. `phrases` are the entries' phrase
 * keys (see {@link PartPhrases}).
 */
export type BuildWorkerReply =
  | { kind: "ready" }
  | {
      kind: "counted";
      part: number;
      counts: Int32Array;
      newTerms: string[];
      phrases: PartPhrases;
      milliseconds: number;
    }
  | { kind: "scattered"; request: number; range: ScatteredRange }
  | { kind: "failed"; part: number; message: string };

/** The message port of a build worker (the part of Node's `MessagePort` used here). */
export type BuildWorkerPort = {
  postMessage(message: unknown, transfer?: ArrayBuffer[]): void;
  on(event: "message", listener: (message: BuildWorkerTask | BuildWorkerScatterTask) => void): void;
  close(): void;
};

/**
 * The phrase keys of a part's entries, as the snapshot files them (`SnapshotMaps`): per entry, in order, its exact
 * keys (`normalizePhrases([id, title])`) then the keys of its aliases that are not empty (`phraseKey(alias)`), all
 * in `keys`; `counts` holds per entry the number of each (exact, then alias). Computed by the worker so that the
 * main thread, whose heap holds the registry, does not allocate them (most of its short-lived garbage).
 */
export type PartPhrases = { keys: string[]; counts: Int32Array };

/** Where an entry's aliases are among its fields' text counts (field order: title, aliases, keywords, …). */
const ALIASES_FIELD = 1;

/** The phrase keys of a task's entries (see {@link PartPhrases}). */
export function partPhrases(task: BuildWorkerTask): PartPhrases {
  const { ids, texts, textCounts } = task;
  const keys: string[] = [];
  const counts = new Int32Array(ids.length * 2);
  let text = 0;
  for (let entry = 0; entry < ids.length; entry++) {
    // Fields in order: title (one text), aliases, keywords, summary, body (see entryFieldTexts).
    const base = entry * FIELD_COUNT;
    const title = texts[text]!;
    const exact = normalizePhrases([ids[entry]!, title]);
    for (const key of exact) keys.push(key);
    counts[2 * entry] = exact.length;
    let aliasKeys = 0;
    const aliasStart = text + textCounts[base]!;
    for (let alias = 0; alias < textCounts[base + ALIASES_FIELD]!; alias++) {
      const key = phraseKey(texts[aliasStart + alias]);
      if (key === "") continue;
      keys.push(key);
      aliasKeys++;
    }
    counts[2 * entry + 1] = aliasKeys;
    for (let field = 0; field < FIELD_COUNT; field++) text += textCounts[base + field]!;
  }
  return { keys, counts };
}

/** Tokenizes and counts parts with one dictionary for the worker's lifetime. */
export class PartCounter {
  private readonly dictionary = new TermDictionary();
  private readonly counter = new TermCounter(this.dictionary);
  private readonly analyzer: TokenAnalyzer | null;
  private marker = 0;
  private reportedTerms = 0;

  constructor(analyzer: KnowledgeAnalyzerName) {
    this.analyzer = getAnalyzer(analyzer);
  }

  /** Counts one part; see {@link BuildWorkerReply}. */
  count(task: BuildWorkerTask): { counts: Int32Array; newTerms: string[] } {
    const { texts, textCounts } = task;
    const counter = this.counter;
    const out = new IntBuffer();
    if (task.buffer) out.data = new Int32Array(task.buffer);
    out.reserve(texts.length * 64);
    let text = 0;
    for (let index = 0; index < textCounts.length; index++) {
      const fieldTexts = texts.slice(text, text + textCounts[index]!);
      text += textCounts[index]!;
      const marker = ++this.marker;
      // The same calls as KnowledgeLexicalIndex.addDocument makes for an entry's field.
      const length = this.analyzer
        ? counter.countTokens(this.analyzer(tokenizeList(fieldTexts)), marker)
        : counter.countTexts(fieldTexts, marker);
      out.push(length);
      const termCount = counter.fieldTermCount;
      const termIds = counter.fieldTermIds;
      out.push(termCount);
      for (let index = 0; index < termCount; index++) {
        const termId = termIds[index]!;
        out.push(termId);
        out.push(counter.frequency(termId));
      }
      counter.clearField();
    }
    const newTerms: string[] = [];
    for (let id = this.reportedTerms; id < this.dictionary.size; id++)
      newTerms.push(this.dictionary.term(id));
    this.reportedTerms = this.dictionary.size;
    // A view of the whole buffer (transferred, so it can come back with a later part).
    return { counts: out.data.subarray(0, out.length), newTerms };
  }
}

type WorkerThreads = { isMainThread: boolean; workerData: unknown };

function isBuildWorkerData(data: unknown): data is BuildWorkerData {
  return (
    typeof data === "object" && data !== null && (data as BuildWorkerData).marker === BUILD_WORKER_MARKER
  );
}

/** Serves tasks on the port given in `workerData` (when this module runs as a build worker's entry point). */
function serve(data: BuildWorkerData): void {
  const parts = new PartCounter(data.analyzer);
  const reply = (message: BuildWorkerReply, transfer?: ArrayBuffer[]): void => {
    data.port.postMessage(message, transfer);
    Atomics.add(data.signal, 0, 1);
    Atomics.notify(data.signal, 0);
  };
  data.port.on("message", (task) => {
    if (task.kind === "scatter") {
      try {
        const range = scatterRange(task.input, task.fromTerm, task.target ?? null);
        const transfer = [range.docs.buffer, range.contributions.buffer] as ArrayBuffer[];
        if (range.frequencies) transfer.push(range.frequencies.buffer as ArrayBuffer);
        reply({ kind: "scattered", request: task.request, range }, transfer);
      } catch (caught) {
        reply({
          kind: "failed",
          part: -1,
          message: caught instanceof Error ? caught.message : String(caught),
        });
      }
      return;
    }
    const started = performance.now();
    try {
      const { counts, newTerms } = parts.count(task);
      const phrases = partPhrases(task);
      reply(
        {
          kind: "counted",
          part: task.part,
          counts,
          newTerms,
          phrases,
          milliseconds: performance.now() - started,
        },
        [counts.buffer as ArrayBuffer],
      );
    } catch (caught) {
      reply({
        kind: "failed",
        part: task.part,
        message: caught instanceof Error ? caught.message : String(caught),
      });
    }
  });
  reply({ kind: "ready" });
}

const threads = nodeBuiltin<WorkerThreads>("node:worker_threads");
if (threads && !threads.isMainThread && isBuildWorkerData(threads.workerData)) serve(threads.workerData);
