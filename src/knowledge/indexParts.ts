/**
 * The exported form of a finished lexical index (what an index artifact stores), its consistency check, and the
 * conversions between it and the index's finished state.
 */
import type {
  KnowledgeAnalyzerName,
  KnowledgeFieldWeights,
  KnowledgeScoringMode,
} from "../types/knowledge.js";
import { type EntryIds, entryIdArray } from "./denseIds.js";
import type { IndexBase, IndexChanges } from "./indexChanges.js";
import { FIELD_COUNT, type FieldPostings, type FrequencyPostings } from "./postings.js";
import { TermDictionary } from "./termDictionary.js";

/** The finished state of a `KnowledgeLexicalIndex`, for serialization into an index artifact. */
export type KnowledgeLexicalIndexParts = {
  fieldWeights: KnowledgeFieldWeights;
  k1: number;
  b: number;
  analyzer: KnowledgeAnalyzerName;
  scoring: KnowledgeScoringMode;
  ids: readonly string[];
  /**
   * Entry id → dense id, when the caller has one (an artifact's lookup over `ids` in `ranks` order, checked to be
   * strictly ascending, so ids are distinct): used as is instead of hashing every id into a new map.
   */
  denseIds?: ReadonlyMap<string, number>;
  /** Number of terms (term ids are 0 to termCount - 1). */
  termCount: number;
  /** The terms by id: needed only without {@link dictionary} (they are interned again then). */
  terms?: readonly string[];
  averageLengths: Float64Array;
  ranks: Int32Array;
  postings: readonly {
    offsets: Int32Array;
    docs: Int32Array;
    contributions: Float64Array;
    active: boolean;
  }[];
  bm25fShares: Float64Array | null;
  /**
   * The term dictionary itself (its ids are those of `terms`): given to `fromParts`, it is used as is instead of
   * interning every term again (an artifact stores its tables).
   */
  dictionary?: TermDictionary;
  /**
   * Per field: term-frequency postings, and per field and document: the field's length. An index loaded with them
   * can be changed (`withChanges`); without them (older artifacts) it can only be searched.
   */
  termPostings?: readonly FrequencyPostings[];
  lengths?: readonly Int32Array[];
  /**
   * Postings read lazily (an artifact's): `docs`, `contributions` and `bm25fShares` are allocated but filled, and
   * checked, only for the terms given to {@link PostingLoader.ensureTerms}, which the index calls before it reads
   * them. Without a loader the arrays are complete and checked at once.
   */
  postingLoader?: PostingLoader;
};

/**
 * Fills the postings of terms on first use (reading and checking them), so that loading an artifact does not read
 * every posting. Throws (a typed artifact error) when what it reads is damaged; nothing it has not filled and
 * checked is ever read by a search.
 */
export type PostingLoader = {
  /** Makes the postings of `termIds` (in every field) readable. */
  ensureTerms(termIds: readonly number[]): void;
  /** Makes every posting readable (before exporting the index). */
  ensureAll(): void;
};

/**
 * The finished state of an index: what a search reads, what an artifact stores and what a change derives from.
 * @internal
 */
export type FinishedLexicalState = {
  /** Term ↔ id; shared (append-only) with the indexes derived from this one. */
  dictionary: TermDictionary;
  ids: EntryIds;
  denseIds: Map<string, number>;
  /** Rank of each dense id in code-unit order of entry ids: the deterministic tie-break. */
  ranks: Int32Array;
  /** Per field (sum) or one over all fields (BM25F): postings with precomputed contributions. */
  postings: FieldPostings[];
  /** Per field: term-frequency postings, what query-time scoring and compaction read. */
  termPostings: FrequencyPostings[];
  averageLengths: Float64Array;
  /** BM25F only: per posting, each field's share of its score (for the breakdown). */
  bm25fShares: Float64Array | null;
  /** Terms the postings cover: the dictionary's size when finalizing started (it may grow afterwards). */
  termLimit: number;
  /** The finished arrays shared with derived indexes; null when loaded without term frequencies. */
  base: IndexBase | null;
  /** What this index changes relative to {@link base}; null for a full build (precomputed contributions apply). */
  changes: IndexChanges | null;
  /** Loaded from an artifact: fills the postings of a term when a search first reads it (null: all present). */
  postingLoader: PostingLoader | null;
  /**
   * Per entry of `postings`: the upper bounds of its long lists computed while finalizing (`listBounds.ts`), which
   * seed the search's bound cache; absent (computed on demand) for other states. Only for these `postings`.
   */
  upperBounds?: Map<number, number>[] | null;
};

/** Checks that exported parts fit together: posting lists, ranks and offsets against the counts. */
export function assertPartsConsistent(parts: LexicalIndexPartsInput): void {
  const documentCount = parts.ids.length;
  const termCount = parts.termCount;
  const expectedPostings = parts.scoring === "bm25f" ? 1 : FIELD_COUNT;
  if (parts.postings.length !== expectedPostings || parts.ranks.length !== documentCount) {
    throw new RangeError(
      "index parts are inconsistent: posting lists or ranks do not match the document count",
    );
  }
  for (const postings of parts.postings) {
    if (!postings.active) continue;
    const total = postings.offsets[termCount];
    if (
      postings.offsets.length !== termCount + 1 ||
      total !== postings.docs.length ||
      total !== postings.contributions.length
    ) {
      throw new RangeError("index parts are inconsistent: posting offsets do not match the term count");
    }
    // A loader checks each block of postings when it fills it.
    if (parts.postingLoader) continue;
    // Indexed, one unsigned comparison per posting: loading an artifact runs this over every posting.
    const docs = postings.docs;
    for (let index = 0; index < docs.length; index++)
      if (docs[index]! >>> 0 >= documentCount)
        throw new RangeError("index parts are inconsistent: posting refers to a missing document");
  }
}

/** The parameters of an index, as its parts carry them. */
type IndexParameters = Pick<KnowledgeLexicalIndexParts, "fieldWeights" | "k1" | "b" | "scoring"> & {
  analyzerName: KnowledgeAnalyzerName;
};

/** The parts of a finished index without changes (see `KnowledgeLexicalIndex.exportParts`). */
export function partsOfState(
  parameters: IndexParameters,
  state: FinishedLexicalState,
): KnowledgeLexicalIndexParts {
  // The dictionary is shared with changed indexes and may have grown since finalize: terms past `termLimit`
  // have no postings here, so their offsets repeat the last one.
  const termCount = state.dictionary.size;
  const padded = (offsets: Int32Array): Int32Array => {
    if (offsets.length === 0 || offsets.length === termCount + 1) return offsets;
    const grown = new Int32Array(termCount + 1);
    grown.set(offsets);
    grown.fill(offsets[offsets.length - 1]!, offsets.length);
    return grown;
  };
  const postings = state.postings.map((field) =>
    field.offsets.length === 0 ? field : { ...field, offsets: padded(field.offsets) },
  );
  const termPostings = state.termPostings.map((field) => ({ ...field, offsets: padded(field.offsets) }));
  return {
    fieldWeights: { ...parameters.fieldWeights },
    k1: parameters.k1,
    b: parameters.b,
    analyzer: parameters.analyzerName,
    scoring: parameters.scoring,
    ids: entryIdArray(state.ids),
    termCount,
    averageLengths: state.averageLengths,
    ranks: state.ranks,
    postings,
    bm25fShares: state.bm25fShares,
    dictionary: state.dictionary,
    ...(state.base ? { termPostings, lengths: state.base.lengths } : {}),
  };
}

/**
 * Parts to recreate an index from: {@link KnowledgeLexicalIndexParts}, or an artifact's, whose ids are decoded as
 * they are read (with its own {@link KnowledgeLexicalIndexParts.denseIds} lookup).
 */
export type LexicalIndexPartsInput = Omit<KnowledgeLexicalIndexParts, "ids"> & { ids: EntryIds };

/** The finished state of exported parts, checked for consistency (throws a RangeError otherwise). */
export function stateFromParts(parts: LexicalIndexPartsInput): FinishedLexicalState {
  assertPartsConsistent(parts);
  let ids: EntryIds;
  let denseIds = new Map<string, number>();
  if (parts.denseIds) {
    // The caller's lookup (read-only from here on: a finished index never adds ids to its own map).
    ids = parts.ids;
    denseIds = parts.denseIds as Map<string, number>;
  } else {
    const added: string[] = [];
    ids = added;
    for (const id of entryIdArray(parts.ids)) {
      if (denseIds.has(id))
        throw new RangeError(`index parts are inconsistent: duplicate id ${JSON.stringify(id)}`);
      denseIds.set(id, added.length);
      added.push(id);
    }
  }
  let dictionary = parts.dictionary;
  if (!dictionary) {
    dictionary = new TermDictionary();
    for (const term of parts.terms ?? []) dictionary.intern(term);
  }
  if (dictionary.size !== parts.termCount)
    throw new RangeError("index parts are inconsistent: duplicate terms");
  const termPostings = parts.termPostings && parts.lengths ? parts.termPostings.slice() : [];
  return {
    dictionary,
    ids,
    denseIds,
    ranks: parts.ranks,
    postings: parts.postings.map((postings) => ({ ...postings })),
    termPostings,
    averageLengths: parts.averageLengths,
    bm25fShares: parts.bm25fShares,
    termLimit: parts.termCount,
    base:
      parts.termPostings && parts.lengths
        ? {
            ids,
            denseIds,
            ranks: parts.ranks,
            order: null,
            termPostings,
            lengths: parts.lengths,
            totalLengths: Float64Array.from(parts.lengths, (lengths) =>
              lengths.reduce((sum, length) => sum + length, 0),
            ),
            scratch: null,
          }
        : null,
    changes: null,
    postingLoader: parts.postingLoader ?? null,
  };
}
