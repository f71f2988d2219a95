/**
 * Building a snapshot: the immutable index of a validated entry set, built incrementally (so an async caller can
 * yield), on this thread or with worker threads counting parts of the registry. Its phrase and relation maps are
 * `snapshotMaps.ts`; its compiled companion (dense entries, eligibility building blocks) `compiledSnapshot.ts`.
 */
import type {
  KnowledgeFieldWeights,
  KnowledgeIndexSnapshot,
  NormalizedKnowledgeEntry,
} from "../types/knowledge.js";
import { toIndexBuildOptions } from "./defaults.js";
import { sortedIdOrder } from "./idSort.js";
import { KnowledgeLexicalIndex, type KnowledgeLexicalIndexOptions } from "./lexicalIndex.js";
import { normalizePhrases } from "./normalize.js";
import { type BuildSegment, type ParallelIndexing, parallelIndexing } from "./parallelBuild.js";
import { SnapshotMaps } from "./snapshotMaps.js";

/** Options of {@link buildIndexSnapshot}: the index parameters plus field weights (partial allowed). */
export type KnowledgeIndexBuildOptions = KnowledgeLexicalIndexOptions & {
  fieldWeights?: Partial<KnowledgeFieldWeights>;
  /**
   * Threads that index the entries, the calling one included (worker threads, Node only; the index is the same
   * whatever the count). Default: one per available core (at most 4) from 16,384 entries, one below; `1` keeps
   * the build on the calling thread.
   */
  threads?: number;
  /** Entries per part handed to a worker thread (tests set small parts). @internal */
  partEntries?: number;
};

/**
 * Builds the immutable snapshot of a validated entry set. The second argument is the field weights (as in
 * NeuroLink; a partial object is merged over the defaults) or {@link KnowledgeIndexBuildOptions}.
 */
export function buildIndexSnapshot(
  entries: readonly NormalizedKnowledgeEntry[],
  weightsOrOptions?: Partial<KnowledgeFieldWeights> | KnowledgeIndexBuildOptions,
): KnowledgeIndexSnapshot {
  const builder = startIndexBuild(entries, weightsOrOptions);
  while (!builder.step(Number.POSITIVE_INFINITY)) {
    // Runs to completion synchronously.
  }
  return builder.finish();
}

/** An incremental snapshot build, so an async caller can yield to the event loop between chunks. */
export type IndexBuild = {
  /** Indexes entries for up to `budgetMs`; returns true when every entry is indexed. */
  step(budgetMs: number): boolean;
  /** Finalizes and returns the snapshot. */
  finish(): KnowledgeIndexSnapshot;
};

/** Starts an incremental build; see {@link buildIndexSnapshot}. */
export function startIndexBuild(
  entries: readonly NormalizedKnowledgeEntry[],
  weightsOrOptions?: Partial<KnowledgeFieldWeights> | KnowledgeIndexBuildOptions,
): IndexBuild {
  const options = toIndexBuildOptions(weightsOrOptions);
  const lexical = new KnowledgeLexicalIndex(options.fieldWeights, options);
  // Dense ids follow code-unit order of entry ids, which makes "lower id first" the natural tie-break.
  const sorted = sortById(entries);
  const maps = new SnapshotMaps();
  const parallel = parallelIndexing(sorted, {
    analyzer: lexical.analyzerName,
    threads: options.threads,
    ...(options.partEntries !== undefined ? { partEntries: options.partEntries } : {}),
  });
  // The worker also scatters part of each large field's postings when finalizing (so it lives until then).
  if (parallel) lexical.useScatterHelper(parallel.scatterHelper());
  const internTerms = (terms: readonly string[]): number[] => lexical.internTerms(terms);
  let next = 0;
  /** Indexes entries from `next` up to `end` on this thread (`counted`: a worker's counts); false at the deadline. */
  const indexUpTo = (end: number, deadline: number, counted: BuildSegment | null): boolean => {
    while (next < end) {
      const entry = sorted[next++]!;
      const phrases = counted?.phrases;
      if (phrases) {
        // Keys the worker computed (see PartPhrases), the same as computing them here.
        const position = 2 * (next - 1 - counted.start);
        const exactCount = phrases.counts[position]!;
        const aliasCount = phrases.counts[position + 1]!;
        maps.addKeys(entry, phrases.keys, counted.phraseOffset, exactCount, aliasCount);
        counted.phraseOffset += exactCount + aliasCount;
      } else maps.add(entry, normalizePhrases([entry.id, entry.title]));
      if (counted)
        counted.offset = lexical.addCountedDocument(
          entry.id,
          counted.counts!,
          counted.offset,
          counted.termIds!,
        );
      else lexical.addEntry(entry);
      if (next === RESERVE_AFTER_DOCUMENTS) lexical.reserveFor(sorted.length);
      if ((next & DEADLINE_CHECK_MASK) === 0 && performance.now() >= deadline) return false;
    }
    return true;
  };
  const build: IndexBuild = {
    step(budgetMs: number): boolean {
      const deadline =
        budgetMs === Number.POSITIVE_INFINITY ? Number.POSITIVE_INFINITY : performance.now() + budgetMs;
      if (!parallel) {
        if (!indexUpTo(sorted.length, deadline, null)) return false;
      } else {
        try {
          while (next < sorted.length) {
            const segment = parallel.segmentAt(next);
            if (!parallel.await(segment, deadline, internTerms)) return false;
            const counted = segment.helper >= 0 ? segment : null;
            const started = performance.now();
            const from = next;
            const done = indexUpTo(segment.end, deadline, counted);
            parallel.record(next - from, performance.now() - started, counted !== null);
            if (!done) return false;
          }
        } catch (error) {
          parallel.close();
          throw error;
        }
      }
      // Then finalize the postings one field at a time, so an async build can yield between fields.
      try {
        while (!lexical.finalizeStep()) if (performance.now() >= deadline) return false;
      } catch (error) {
        parallel?.close();
        throw error;
      }
      parallel?.close();
      return true;
    },
    finish(): KnowledgeIndexSnapshot {
      try {
        lexical.finalize();
      } finally {
        parallel?.close();
      }
      return maps.finish(lexical, sorted);
    },
  };
  // An abandoned build (its caller gone) stops its workers when it is collected.
  if (parallel) abandonedBuilds?.register(build, parallel);
  return build;
}

/** Stops the workers of a parallel build that was dropped before it finished. */
const abandonedBuilds =
  typeof FinalizationRegistry === "function"
    ? new FinalizationRegistry<ParallelIndexing>((parallel) => parallel.close())
    : null;

/** Documents indexed before the build buffers are sized for the whole registry. */
const RESERVE_AFTER_DOCUMENTS = 1024;
/** The build checks its deadline after every 64 entries (when the count's low six bits are zero). */
const DEADLINE_CHECK_MASK = 63;

/**
 * The entries in code-unit order of their ids. Manifests written by `lexground build` are already in that order
 * (checked in one pass); otherwise their indices are sorted by packed id prefixes (`idSort.ts`), with no id → entry
 * map. Duplicate ids (only possible when a caller skips validation) keep their input order, so the index reports
 * them as a stable sort would.
 */
function sortById(entries: readonly NormalizedKnowledgeEntry[]): NormalizedKnowledgeEntry[] {
  let ordered = true;
  for (let index = 1; index < entries.length && ordered; index++)
    ordered = entries[index - 1]!.id < entries[index]!.id;
  if (ordered) return entries.slice();
  const order = sortedIdOrder(entries.map((entry) => entry.id));
  const sorted: NormalizedKnowledgeEntry[] = new Array(order.length);
  for (let rank = 0; rank < order.length; rank++) sorted[rank] = entries[order[rank]!]!;
  return sorted;
}
