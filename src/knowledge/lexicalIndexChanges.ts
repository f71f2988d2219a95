/**
 * The update path of the lexical index: the state of an index derived from a finished one by removing and adding
 * documents (`KnowledgeLexicalIndex.withChanges`). Only the added entries are tokenized; everything else is
 * shared with the index it derives from (see `indexChanges.ts` for what a change costs and `liveScoring.ts` for
 * how such an index is searched).
 */
import type {
  KnowledgeFieldWeights,
  KnowledgeScoringMode,
  NormalizedKnowledgeEntry,
} from "../types/knowledge.js";
import type { TokenAnalyzer } from "./analyzer.js";
import { compactedPostings } from "./compaction.js";
import { compactionStep } from "./compactionStep.js";
import type { CompactionThread } from "./compactionThread.js";
import { KNOWLEDGE_FIELD_NAMES } from "./defaults.js";
import { buildDocument, entryFieldTexts } from "./document.js";
import { type DocumentTerms, deriveChanges } from "./indexChanges.js";
import type { FinishedLexicalState } from "./indexParts.js";
import { longListBoundSteps } from "./listBounds.js";
import { FIELD_COUNT } from "./postings.js";
import { RankedIdMap } from "./rankedIdMap.js";
import { TermCounter } from "./termCounter.js";
import type { TermDictionary } from "./termDictionary.js";

/**
 * A term counter per dictionary, reused by every change (its scratch grows to the dictionary's size, which a
 * fresh counter would allocate and fill again for each change), with the last marker it used.
 */
const counters = new WeakMap<TermDictionary, { counter: TermCounter; marker: number }>();

/** Markers stay below this; past it the counter starts over. */
const MARKER_LIMIT = 2 ** 30;

/** The terms of each entry, per field, as term ids of `dictionary` (which grows with new terms). */
export function documentTermsOf(
  entries: readonly NormalizedKnowledgeEntry[],
  dictionary: TermDictionary,
  analyzer: TokenAnalyzer | null,
): Map<string, DocumentTerms> {
  const terms = new Map<string, DocumentTerms>();
  let reused = counters.get(dictionary);
  if (!reused || reused.marker > MARKER_LIMIT) {
    reused = { counter: new TermCounter(dictionary), marker: 0 };
    counters.set(dictionary, reused);
  }
  const counter = reused.counter;
  let marker = reused.marker;
  for (const entry of entries) {
    if (terms.has(entry.id))
      throw new Error(`KnowledgeLexicalIndex.withChanges: duplicate id ${JSON.stringify(entry.id)}`);
    const texts = analyzer ? null : entryFieldTexts(entry);
    const document = analyzer ? buildDocument(entry) : null;
    const documentTerms: DocumentTerms = { terms: [], frequencies: [], lengths: new Int32Array(FIELD_COUNT) };
    for (let field = 0; field < FIELD_COUNT; field++) {
      reused.marker = ++marker; // kept current even if a later entry throws
      documentTerms.lengths[field] = texts
        ? counter.countTexts(texts[field]!, marker)
        : counter.countTokens(analyzer!(document!.fields[KNOWLEDGE_FIELD_NAMES[field]!]), marker);
      // Straight from the counter's typed list (its `fieldTerms` getter copies it into a JS array).
      const fieldTerms = counter.fieldTermIds.slice(0, counter.fieldTermCount);
      const frequencies = new Int32Array(fieldTerms.length);
      for (let index = 0; index < fieldTerms.length; index++)
        frequencies[index] = counter.frequency(fieldTerms[index]!);
      documentTerms.terms.push(fieldTerms);
      documentTerms.frequencies.push(frequencies);
      counter.clearField();
    }
    terms.set(entry.id, documentTerms);
  }
  return terms;
}

/**
 * The state of `state`'s index without `removedIds` and with `added` (see `KnowledgeLexicalIndex.withChanges`):
 * the same postings, ids and dictionary, new changes, and the average lengths of the changed collection.
 */
export function changedState(
  state: FinishedLexicalState,
  analyzer: TokenAnalyzer | null,
  removedIds: Iterable<string>,
  added: readonly NormalizedKnowledgeEntry[],
): FinishedLexicalState {
  const changes = deriveChanges(
    state.base!,
    state.changes,
    removedIds,
    documentTermsOf(added, state.dictionary, analyzer),
  );
  // Searches of a changed index compute contributions at query time: no precomputed postings.
  return { ...state, postings: [], bm25fShares: null, changes, averageLengths: changes.averageLengths };
}

/**
 * `ranks[from..to)` set to their index. A plain function: a loop in the generator below, which runs once per
 * compaction, stays in V8's interpreter (a few milliseconds at 100k entries in one step).
 */
function fillIdentity(ranks: Int32Array, from: number, to: number): void {
  for (let doc = from; doc < to; doc++) ranks[doc] = doc;
  compactionStep.done += to - from;
}

/**
 * The finished state of a fresh index equal to `state`'s changed index (see `compaction.ts`), and where each of
 * its dense ids went (-1: not live); null when the build buffers must be finalized instead (BM25F, or a base
 * whose dense ids are not in the ids' order: `compactedBuilders`). `thread`: a worker that compacts the fields.
 */
export function* compactedState(
  state: FinishedLexicalState,
  parameters: {
    fieldWeights: Readonly<KnowledgeFieldWeights>;
    k1: number;
    b: number;
    scoring: KnowledgeScoringMode;
  },
  thread: CompactionThread | null = null,
): Generator<void, { state: FinishedLexicalState; newDenseIds: Int32Array } | null, void> {
  if (parameters.scoring !== "sum") return null;
  // Terms interned after this (by later changes) have no postings in the result, as for a build's finalize.
  const termCount = state.dictionary.size;
  const compacted = yield* compactedPostings(
    state.base!,
    state.changes!,
    { ...parameters, termCount },
    thread?.compactor ?? null,
  );
  if (!compacted) return null;
  const ids = compacted.ids;
  // Dense ids follow the ids' order: the ranks are the identity, and ids are found by binary search over them
  // (a hash map of every id was the largest allocation left on the main thread, tens of milliseconds at 100k).
  const ranks = new Int32Array(ids.length);
  for (let from = 0; from < ids.length; from += compactionStep.work) {
    fillIdentity(ranks, from, Math.min(ids.length, from + compactionStep.work));
    yield;
  }
  const denseIds = RankedIdMap.ofSorted(ids);
  // The long lists' bounds, as a build computes them: without them the first turns after a compaction each scanned
  // their frequent terms' whole lists (at 100k, turn p99 25-47 ms after a compaction against 19.5 before).
  const upperBounds = yield* longListBoundSteps(compacted.postings, termCount);
  return {
    state: {
      dictionary: state.dictionary,
      ids,
      denseIds,
      ranks,
      postings: compacted.postings,
      termPostings: compacted.termPostings,
      averageLengths: compacted.averageLengths,
      bm25fShares: null,
      termLimit: termCount,
      base: {
        ids,
        denseIds,
        ranks,
        order: ranks,
        termPostings: compacted.termPostings,
        lengths: compacted.lengths,
        totalLengths: compacted.totalLengths,
        scratch: null,
      },
      changes: null,
      postingLoader: null,
      upperBounds,
    },
    newDenseIds: compacted.newDenseIds,
  };
}
