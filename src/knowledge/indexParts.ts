/** The exported form of a finished lexical index (what an index artifact stores), and its consistency check. */
import type {
  KnowledgeAnalyzerName,
  KnowledgeFieldWeights,
  KnowledgeScoringMode,
} from "../types/knowledge.js";
import { FIELD_COUNT, type FrequencyPostings } from "./postings.js";
import type { TermDictionary } from "./termDictionary.js";

/** The finished state of a `KnowledgeLexicalIndex`, for serialization into an index artifact. */
export type KnowledgeLexicalIndexParts = {
  fieldWeights: KnowledgeFieldWeights;
  k1: number;
  b: number;
  analyzer: KnowledgeAnalyzerName;
  scoring: KnowledgeScoringMode;
  ids: readonly string[];
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

export /** Checks that exported parts fit together: posting lists, ranks and offsets against the counts. */
function assertPartsConsistent(parts: KnowledgeLexicalIndexParts): void {
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
