/**
 * The immutable index: the search document of each entry, the field-aware BM25 index and the snapshot that
 * bundles them with the phrase and relation maps.
 *
 * Layout (why it is fast): entries get dense integer ids; postings of each field are compressed-sparse-row typed
 * arrays per term; each posting stores its finished BM25 contribution, computed once at build time with exactly
 * the expression of the straightforward scorer, so a query only adds precomputed numbers for the postings of its
 * own terms. Eligibility is a byte mask applied while scoring, before top-K.
 */
import type {
  IndexedKnowledgeDocument,
  KnowledgeAnalyzerName,
  KnowledgeFieldName,
  KnowledgeFieldWeights,
  KnowledgeIndexSnapshot,
  KnowledgeLexicalMatch,
  KnowledgeLexicalSearcher,
  KnowledgeScoringMode,
  NormalizedKnowledgeEntry,
} from "../types/knowledge.js";
import { getAnalyzer, type TokenAnalyzer } from "./analyzer.js";
import {
  DEFAULT_BM25_B,
  DEFAULT_BM25_K1,
  DEFAULT_FIELD_WEIGHTS,
  KNOWLEDGE_FIELD_NAMES,
  MAX_QUERY_TOKENS,
  MAX_TOKEN_LENGTH,
} from "./defaults.js";
import { forEachSegment, isAscii, normalizePhrases, phraseKey, tokenize } from "./normalize.js";
import { PhraseTrie } from "./phraseTrie.js";
import { finishHash, foldWord, PACKED_HASH_START, TermDictionary } from "./termDictionary.js";

/** Parameters of the lexical index. Everything is optional; defaults are NeuroLink's. */
export type KnowledgeLexicalIndexOptions = {
  /** BM25 term-frequency saturation. Default 1.5. */
  k1?: number;
  /** BM25 length normalization. Default 0.75. */
  b?: number;
  /** Analyzer for document and query tokens. Default `"none"`. */
  analyzer?: KnowledgeAnalyzerName;
  /** Evidence combination. Default `"sum"`. */
  scoring?: KnowledgeScoringMode;
};

/** The finished state of a {@link KnowledgeLexicalIndex}, for serialization into an index artifact. */
export type KnowledgeLexicalIndexParts = {
  fieldWeights: KnowledgeFieldWeights;
  k1: number;
  b: number;
  analyzer: KnowledgeAnalyzerName;
  scoring: KnowledgeScoringMode;
  ids: readonly string[];
  terms: readonly string[];
  averageLengths: Float64Array;
  ranks: Int32Array;
  postings: readonly {
    offsets: Int32Array;
    docs: Int32Array;
    contributions: Float64Array;
    active: boolean;
  }[];
  bm25fShares: Float64Array | null;
};

/** Options of {@link buildIndexSnapshot}: the index parameters plus field weights (partial allowed). */
export type KnowledgeIndexBuildOptions = KnowledgeLexicalIndexOptions & {
  fieldWeights?: Partial<KnowledgeFieldWeights>;
};

const FIELD_COUNT = 5;

/** The raw texts of a document's fields, kept so the index can tokenize and intern in one pass. */
const RAW_FIELD_TEXTS = Symbol("lexground.rawFieldTexts");
type DocumentWithRawTexts = IndexedKnowledgeDocument & { [RAW_FIELD_TEXTS]?: readonly (readonly string[])[] };

/**
 * Builds the search document of an entry: its id and title phrases and the tokens of its five fields. The token
 * arrays are computed when first read; {@link KnowledgeLexicalIndex.add} reads the raw texts instead and
 * tokenizes them straight into term ids, which yields the same terms without a string per token.
 */
export function buildDocument(entry: NormalizedKnowledgeEntry): IndexedKnowledgeDocument {
  let fields: IndexedKnowledgeDocument["fields"] | undefined;
  const document: DocumentWithRawTexts = {
    id: entry.id,
    exactKeys: normalizePhrases([entry.id, entry.title]),
    get fields() {
      fields ??= {
        title: tokenize(entry.title),
        aliases: tokenizeList(entry.aliases),
        keywords: tokenizeList(entry.keywords),
        summary: tokenize(entry.summary),
        body: tokenize(entry.body),
      };
      return fields;
    },
    [RAW_FIELD_TEXTS]: entryFieldTexts(entry),
  };
  return document;
}

/** The raw texts of an entry's five fields, in field order. */
function entryFieldTexts(entry: NormalizedKnowledgeEntry): readonly (readonly string[])[] {
  return [[entry.title], entry.aliases, entry.keywords, [entry.summary], [entry.body]];
}

function tokenizeList(values: readonly string[]): string[] {
  if (values.length === 0) return [];
  if (values.length === 1) return tokenize(values[0]);
  const tokens: string[] = [];
  for (const value of values) for (const token of tokenize(value)) tokens.push(token);
  return tokens;
}

/** Merges partial weights over the defaults. */
export function resolveFieldWeights(weights?: Partial<KnowledgeFieldWeights> | null): KnowledgeFieldWeights {
  const resolved = { ...DEFAULT_FIELD_WEIGHTS };
  if (weights) {
    for (const field of KNOWLEDGE_FIELD_NAMES) {
      const value = weights[field];
      if (value !== undefined) resolved[field] = value;
    }
  }
  return resolved;
}

/** A growable Int32 buffer used only while building. */
class IntBuffer {
  data = new Int32Array(1024);
  length = 0;
  push(value: number): void {
    if (this.length === this.data.length) {
      const next = new Int32Array(this.data.length * 2);
      next.set(this.data);
      this.data = next;
    }
    this.data[this.length++] = value;
  }
  /** Grows the capacity to at least `capacity` values in one step. */
  reserve(capacity: number): void {
    if (capacity <= this.data.length) return;
    const next = new Int32Array(capacity);
    next.set(this.data.subarray(0, this.length));
    this.data = next;
  }
}

/** Per-field build state, dropped by finalize. */
type FieldBuilder = {
  /** Term id of each posting, appended document by document. */
  terms: IntBuffer;
  /** Term frequency of each posting. */
  frequencies: IntBuffer;
  /** Per document: the end of its postings in `terms` (they start where the previous document's end). */
  ends: IntBuffer;
  /** Per document: the field's length in tokens. */
  lengths: IntBuffer;
  total: number;
};

/** Finished per-field postings. */
type FieldPostings = {
  /** Term id → first posting; `offsets[termId + 1]` ends it. Empty for skipped fields. */
  offsets: Int32Array;
  docs: Int32Array;
  contributions: Float64Array;
  active: boolean;
};

/**
 * Field-aware BM25 index (NeuroLink's "BM25F-style" scorer): per field, Okapi BM25 with Lucene's always-positive
 * IDF `ln(1 + (N − df + 0.5) / (df + 0.5))`, df counted in that field only and N over every document, then summed
 * with the field weights. `k1` (default 1.5) is in [0, ∞), `b` (default 0.75) in [0, 1]. A field whose weight is
 * ≤ 0, or that is empty in every document, is skipped. Use: `add` each document, `finalize` once, then `search`.
 *
 * With `scoring: "bm25f"`, the weighted, length-normalized term frequencies of all fields are summed before one
 * saturation, with one IDF over documents containing the term in any scored field; the per-field breakdown then
 * splits each term's score in proportion to the fields' normalized frequencies.
 */
export class KnowledgeLexicalIndex implements KnowledgeLexicalSearcher {
  /** Resolved field weights. */
  readonly fieldWeights: Readonly<KnowledgeFieldWeights>;
  readonly k1: number;
  readonly b: number;
  readonly analyzerName: KnowledgeAnalyzerName;
  readonly scoring: KnowledgeScoringMode;
  private readonly analyzer: TokenAnalyzer | null;
  private readonly dictionary = new TermDictionary();
  // Term frequency counting per (document, field) without a Map: by term id, the last (document, field) marker it
  // was seen in and its count there, interleaved so counting a token touches one cache line; and the distinct
  // terms of the current field.
  private termCounts = new Int32Array(2048);
  private readonly fieldTerms: number[] = [];
  private readonly ids: string[] = [];
  private readonly denseIds = new Map<string, number>();
  private builders: FieldBuilder[] | null;
  private postings: FieldPostings[] = [];
  private averageLengths: Float64Array = new Float64Array(FIELD_COUNT);
  /** Rank of each dense id in code-unit order of entry ids: the deterministic tie-break. */
  private ranks: Int32Array = new Int32Array(0);
  private finalized = false;
  // Scratch accumulators reused by every search; searches are synchronous, so they never interleave.
  private totals: Float64Array | null = null;
  private fieldTotals: Float64Array[] = [];
  private fieldMarks: Uint8Array | null = null;
  private touched: Int32Array | null = null;

  constructor(fieldWeights?: Partial<KnowledgeFieldWeights>, options: KnowledgeLexicalIndexOptions = {}) {
    this.fieldWeights = Object.freeze(resolveFieldWeights(fieldWeights));
    this.k1 = options.k1 ?? DEFAULT_BM25_K1;
    this.b = options.b ?? DEFAULT_BM25_B;
    this.analyzerName = options.analyzer ?? "none";
    this.scoring = options.scoring ?? "sum";
    this.analyzer = getAnalyzer(this.analyzerName);
    assertIndexParameters(this.fieldWeights, this.k1, this.b);
    this.builders = Array.from({ length: FIELD_COUNT }, () => ({
      terms: new IntBuffer(),
      frequencies: new IntBuffer(),
      ends: new IntBuffer(),
      lengths: new IntBuffer(),
      total: 0,
    }));
  }

  /** Number of documents added. */
  get size(): number {
    return this.ids.length;
  }

  /** Entry id of a dense id. */
  idAt(denseId: number): string {
    return this.ids[denseId]!;
  }

  /** Dense id of an entry id, or -1. */
  denseIdOf(id: string): number {
    return this.denseIds.get(id) ?? -1;
  }

  /** Adds one document. Ids must be unique; documents cannot be added after {@link finalize}. */
  add(document: IndexedKnowledgeDocument): void {
    const rawTexts = this.analyzer ? undefined : (document as DocumentWithRawTexts)[RAW_FIELD_TEXTS];
    this.addDocument(document.id, rawTexts, document);
  }

  /**
   * Sizes the build buffers for `documentCount` documents in all, extrapolated from the documents added so far,
   * so that large builds allocate each buffer about once instead of doubling it: every large allocation can
   * trigger a full garbage collection, which walks the host's whole heap.
   * @internal
   */
  reserveFor(documentCount: number, maxReservedPostings = MAX_RESERVED_POSTINGS): void {
    const builders = this.builders;
    const added = this.ids.length;
    if (!builders || added === 0 || documentCount <= added) return;
    const scale = (documentCount / added) * 1.1;
    const estimates = builders.map((builder) => Math.ceil(builder.terms.length * scale) + 1024);
    // Unusual first documents (say, a run of megabyte bodies) must not make the estimate a huge allocation:
    // past the cap the buffers are scaled down and simply keep doubling when they fill.
    const total = estimates.reduce((sum, estimate) => sum + estimate, 0);
    const shrink = total > maxReservedPostings ? maxReservedPostings / total : 1;
    builders.forEach((builder, field) => {
      const postings = Math.ceil(estimates[field]! * shrink);
      builder.terms.reserve(postings);
      builder.frequencies.reserve(postings);
      builder.ends.reserve(documentCount);
      builder.lengths.reserve(documentCount);
    });
  }

  /**
   * Adds an entry's search document straight from the entry's texts (what a snapshot build does), without the
   * intermediate document object.
   * @internal
   */
  addEntry(entry: NormalizedKnowledgeEntry): void {
    if (this.analyzer) this.add(buildDocument(entry));
    else this.addDocument(entry.id, entryFieldTexts(entry), undefined);
  }

  private addDocument(
    id: string,
    rawTexts: readonly (readonly string[])[] | undefined,
    document: IndexedKnowledgeDocument | undefined,
  ): void {
    const builders = this.builders;
    if (!builders) throw new Error("KnowledgeLexicalIndex.add: the index is finalized");
    if (this.denseIds.has(id))
      throw new Error(`KnowledgeLexicalIndex.add: duplicate id ${JSON.stringify(id)}`);
    const docId = this.ids.length;
    this.ids.push(id);
    this.denseIds.set(id, docId);
    for (let field = 0; field < FIELD_COUNT; field++) {
      const builder = builders[field]!;
      const marker = docId * FIELD_COUNT + field + 1;
      let length = 0;
      if (rawTexts) {
        for (const text of rawTexts[field]!) {
          if (!text) continue;
          if (isAscii(text)) length += this.countAsciiText(text, marker, 0, text.length);
          else {
            forEachSegment(
              text,
              (start, end) => {
                length += this.countAsciiText(text, marker, start, end);
              },
              (segment) => {
                const tokens = tokenize(segment);
                for (const token of tokens) this.countTerm(this.dictionary.intern(token), marker);
                length += tokens.length;
              },
            );
          }
        }
      } else {
        const raw = document?.fields[KNOWLEDGE_FIELD_NAMES[field]!] ?? [];
        const tokens = this.analyzer ? this.analyzer(raw) : raw;
        for (const token of tokens) this.countTerm(this.dictionary.intern(token), marker);
        length = tokens.length;
      }
      builder.lengths.push(length);
      builder.total += length;
      for (const termId of this.fieldTerms) {
        builder.terms.push(termId);
        builder.frequencies.push(this.termCounts[2 * termId + 1]!);
      }
      builder.ends.push(builder.terms.length);
      this.fieldTerms.length = 0;
    }
  }

  /** Counts one occurrence of a term in the (document, field) identified by `marker`. */
  private countTerm(termId: number, marker: number): void {
    if (2 * termId >= this.termCounts.length) this.growScratch(termId);
    const counts = this.termCounts;
    if (counts[2 * termId] !== marker) {
      counts[2 * termId] = marker;
      counts[2 * termId + 1] = 1;
      this.fieldTerms.push(termId);
    } else {
      counts[2 * termId + 1]!++;
    }
  }

  /**
   * Tokenizes ASCII text straight into term ids ({@link scanAsciiTokens}'s splitting, inlined here because this
   * loop runs once per indexed character) and counts them. Each token's characters are lowercased, packed and
   * hashed during the scan, so the dictionary lookup reads the source no more. An outer loop skips separators and
   * an inner one consumes a token, which keeps the per-character work small. Returns the number of tokens.
   */
  private countAsciiText(text: string, marker: number, from: number, to: number): number {
    const dictionary = this.dictionary;
    let tokens = 0;
    let index = from;
    while (index < to) {
      let code = text.charCodeAt(index);
      if (!((code >= 97 && code <= 122) || (code >= 48 && code <= 57) || (code >= 65 && code <= 90))) {
        index++;
        continue;
      }
      const start = index;
      let length = 0;
      let word = 0;
      let shift = 0;
      let hash = PACKED_HASH_START;
      let word0 = 0;
      let word1 = 0;
      let word2 = 0;
      let word3 = 0;
      let previousUpper = false;
      for (;;) {
        if (code >= 65 && code <= 90) {
          if (length > 0) {
            // Split before a capital that follows a lowercase letter or digit, or that starts "Xy" after capitals.
            if (!previousUpper) break;
            const next = index + 1 < to ? text.charCodeAt(index + 1) : 0;
            if (next >= 97 && next <= 122) break;
          }
          previousUpper = true;
        } else if ((code >= 97 && code <= 122) || (code >= 48 && code <= 57)) {
          previousUpper = false;
        } else {
          break;
        }
        // Characters past the length cap still take part in splitting, but not in the term.
        if (length < MAX_TOKEN_LENGTH) {
          word |= (code | 32) << shift;
          length++;
          shift += 8;
          if (shift === 32) {
            hash = foldWord(hash, word);
            if (length === 4) word0 = word;
            else if (length === 8) word1 = word;
            else if (length === 12) word2 = word;
            else if (length === 16) word3 = word;
            word = 0;
            shift = 0;
          }
        }
        if (++index >= to) break;
        code = text.charCodeAt(index);
      }
      if (shift > 0) {
        hash = foldWord(hash, word);
        if (length <= 4) word0 = word;
        else if (length <= 8) word1 = word;
        else if (length <= 12) word2 = word;
        else if (length <= 16) word3 = word;
      }
      this.countTerm(
        dictionary.internPacked(
          text,
          start,
          length,
          finishHash(hash, length),
          word0,
          word1,
          word2,
          word3,
          true,
        ),
        marker,
      );
      tokens++;
    }
    return tokens;
  }

  private growScratch(termId: number): void {
    let size = this.termCounts.length;
    while (size <= 2 * termId) size *= 2;
    const counts = new Int32Array(size);
    counts.set(this.termCounts);
    this.termCounts = counts;
  }

  /** Computes average field lengths, IDF and every posting's contribution, and releases the build state. */
  finalize(): void {
    while (!this.finalizeStep()) {
      // Runs every step synchronously.
    }
  }

  /**
   * One step of {@link finalize}: the statistics first, then one field's postings per call (BM25F: all at once),
   * then the ranks. Returns true when the index is finalized. Lets an async build yield between fields, which are
   * each large at scale.
   */
  finalizeStep(): boolean {
    if (this.finalized) return true;
    const builders = this.builders!;
    const documentCount = this.ids.length;
    const termCount = this.dictionary.size;
    const field = this.postings.length;
    if (field === 0 && !this.statisticsReady) {
      for (let index = 0; index < FIELD_COUNT; index++) {
        this.averageLengths[index] = documentCount > 0 ? builders[index]!.total / documentCount : 0;
      }
      this.statisticsReady = true;
      return false;
    }
    const complete = this.scoring === "bm25f" ? field === 1 : field === FIELD_COUNT;
    if (!complete) {
      if (this.scoring === "bm25f") {
        this.postings.push(this.finalizeBm25f(builders, termCount));
        return false;
      }
      if (!this.pendingField) {
        const weight = this.fieldWeights[KNOWLEDGE_FIELD_NAMES[field]!];
        const averageLength = this.averageLengths[field]!;
        if (!(weight > 0) || !(averageLength > 0)) {
          this.postings.push({
            offsets: new Int32Array(0),
            docs: new Int32Array(0),
            contributions: new Float64Array(0),
            active: false,
          });
          return false;
        }
        this.pendingField = fieldPostings(
          builders[field]!,
          termCount,
          documentCount,
          weight,
          averageLength,
          this.k1,
          this.b,
        );
      }
      const step = this.pendingField.next();
      if (step.done) {
        this.postings.push(step.value);
        this.pendingField = null;
      }
      return false;
    }
    this.ranks = rankIds(this.ids);
    this.builders = null;
    this.termCounts = new Int32Array(0);
    this.finalized = true;
    return true;
  }

  private statisticsReady = false;
  private pendingField: Generator<void, FieldPostings, void> | null = null;

  /**
   * True BM25F: one posting list per term over all fields, each posting the complete term score, with the
   * per-field shares kept for the breakdown.
   */
  private finalizeBm25f(
    builders: FieldBuilder[],
    termCount: number,
  ): FieldPostings & { shares?: Float64Array } {
    const documentCount = this.ids.length;
    const { k1, b } = this;
    // Weighted, length-normalized frequency per (term, doc, field), merged by (term, doc).
    const perTermDoc = new Map<number, Map<number, Float64Array>>();
    for (let field = 0; field < FIELD_COUNT; field++) {
      const builder = builders[field]!;
      const weight = this.fieldWeights[KNOWLEDGE_FIELD_NAMES[field]!];
      const averageLength = this.averageLengths[field]!;
      if (!(weight > 0) || !(averageLength > 0)) continue;
      let doc = 0;
      for (let index = 0; index < builder.terms.length; index++) {
        while (index >= builder.ends.data[doc]!) doc++;
        const term = builder.terms.data[index]!;
        const tf = builder.frequencies.data[index]!;
        const len = builder.lengths.data[doc]!;
        let docs = perTermDoc.get(term);
        if (!docs) {
          docs = new Map();
          perTermDoc.set(term, docs);
        }
        let parts = docs.get(doc);
        if (!parts) {
          parts = new Float64Array(FIELD_COUNT);
          docs.set(doc, parts);
        }
        parts[field] = (weight * tf) / (1 - b + (b * len) / averageLength);
      }
    }
    const offsets = new Int32Array(termCount + 1);
    let postingCount = 0;
    for (let term = 0; term < termCount; term++) {
      offsets[term] = postingCount;
      postingCount += perTermDoc.get(term)?.size ?? 0;
    }
    offsets[termCount] = postingCount;
    const docs = new Int32Array(postingCount);
    const contributions = new Float64Array(postingCount);
    const shares = new Float64Array(postingCount * FIELD_COUNT);
    for (let term = 0; term < termCount; term++) {
      const termDocs = perTermDoc.get(term);
      if (!termDocs) continue;
      const documentFrequency = termDocs.size;
      const idf = Math.log(1 + (documentCount - documentFrequency + 0.5) / (documentFrequency + 0.5));
      const sorted = [...termDocs.keys()].sort((left, right) => left - right);
      let position = offsets[term]!;
      for (const doc of sorted) {
        const parts = termDocs.get(doc)!;
        let pseudoFrequency = 0;
        for (let field = 0; field < FIELD_COUNT; field++) pseudoFrequency += parts[field]!;
        const score = (idf * (pseudoFrequency * (k1 + 1))) / (pseudoFrequency + k1);
        docs[position] = doc;
        contributions[position] = score;
        for (let field = 0; field < FIELD_COUNT; field++) {
          shares[position * FIELD_COUNT + field] =
            pseudoFrequency > 0 ? (score * parts[field]!) / pseudoFrequency : 0;
        }
        position++;
      }
    }
    this.bm25fShares = shares;
    return { offsets, docs, contributions, active: postingCount > 0 };
  }

  private bm25fShares: Float64Array | null = null;

  /**
   * Searches with an eligibility set of entry ids (the seed's contract). Results are sorted by score descending,
   * ties by entry id in code-unit order; at most `topK`.
   */
  search(
    queryTokens: string[],
    topK: number,
    eligibleEntryIds?: ReadonlySet<string>,
  ): KnowledgeLexicalMatch[] {
    let mask: Uint8Array | null = null;
    if (eligibleEntryIds) {
      mask = new Uint8Array(this.ids.length);
      for (const id of eligibleEntryIds) {
        const denseId = this.denseIds.get(id);
        if (denseId !== undefined) mask[denseId] = 1;
      }
    }
    return this.searchWithMask(queryTokens, topK, mask);
  }

  /**
   * Searches with an eligibility mask indexed by dense id (1 = eligible; null = all eligible). This is the hot
   * path: it touches only the postings of the query's own terms.
   */
  searchWithMask(
    queryTokens: readonly string[],
    topK: number,
    mask: Uint8Array | null,
  ): KnowledgeLexicalMatch[] {
    if (!this.finalized) throw new Error("KnowledgeLexicalIndex.search: call finalize() first");
    const documentCount = this.ids.length;
    if (documentCount === 0 || queryTokens.length === 0 || !(topK > 0)) return [];
    const termIds = this.queryTermIds(queryTokens);
    if (termIds.length === 0) return [];

    if (!this.totals) {
      this.totals = new Float64Array(documentCount);
      this.fieldTotals = Array.from({ length: FIELD_COUNT }, () => new Float64Array(documentCount));
      this.fieldMarks = new Uint8Array(documentCount);
      this.touched = new Int32Array(documentCount);
    }
    const totals = this.totals;
    const fieldTotals = this.fieldTotals;
    const marks = this.fieldMarks!;
    const touched = this.touched!;
    let touchedCount = 0;

    if (this.scoring === "bm25f") {
      const postings = this.postings[0]!;
      const shares = this.bm25fShares!;
      for (const term of termIds) {
        const end = postings.offsets[term + 1]!;
        for (let position = postings.offsets[term]!; position < end; position++) {
          const doc = postings.docs[position]!;
          if (mask !== null && mask[doc] === 0) continue;
          if (marks[doc] === 0) touched[touchedCount++] = doc;
          totals[doc]! += postings.contributions[position]!;
          for (let field = 0; field < FIELD_COUNT; field++) {
            const share = shares[position * FIELD_COUNT + field]!;
            if (share > 0) {
              fieldTotals[field]![doc]! += share;
              marks[doc]! |= 1 << field;
            }
          }
          marks[doc]! |= 1 << 5;
        }
      }
    } else {
      for (let field = 0; field < FIELD_COUNT; field++) {
        const postings = this.postings[field]!;
        if (!postings.active) continue;
        const fieldTotal = fieldTotals[field]!;
        const bit = 1 << field;
        const { offsets, docs, contributions } = postings;
        for (const term of termIds) {
          const end = offsets[term + 1]!;
          for (let position = offsets[term]!; position < end; position++) {
            const doc = docs[position]!;
            if (mask !== null && mask[doc] === 0) continue;
            if (marks[doc] === 0) touched[touchedCount++] = doc;
            const contribution = contributions[position]!;
            totals[doc]! += contribution;
            fieldTotal[doc]! += contribution;
            marks[doc]! |= bit;
          }
        }
      }
    }

    const selected = selectTop(touched, touchedCount, topK, totals, this.ranks);
    const matches: KnowledgeLexicalMatch[] = new Array(selected.length);
    for (let index = 0; index < selected.length; index++) {
      const doc = selected[index]!;
      const fieldScores: Partial<Record<KnowledgeFieldName, number>> = {};
      for (let field = 0; field < FIELD_COUNT; field++) {
        if (marks[doc]! & (1 << field))
          fieldScores[KNOWLEDGE_FIELD_NAMES[field]!] = fieldTotals[field]![doc]!;
      }
      matches[index] = { id: this.ids[doc]!, score: totals[doc]!, fieldScores };
    }
    for (let index = 0; index < touchedCount; index++) {
      const doc = touched[index]!;
      totals[doc] = 0;
      marks[doc] = 0;
      for (let field = 0; field < FIELD_COUNT; field++) fieldTotals[field]![doc] = 0;
    }
    return matches;
  }

  /** Distinct known term ids of the query, in first-occurrence order, at most {@link MAX_QUERY_TOKENS}. */
  private queryTermIds(queryTokens: readonly string[]): number[] {
    const analyzed = this.analyzer ? this.analyzer(queryTokens) : queryTokens;
    const seen = new Set<string>();
    const termIds: number[] = [];
    for (const token of analyzed) {
      if (seen.has(token)) continue;
      if (seen.size >= MAX_QUERY_TOKENS) break;
      seen.add(token);
      const termId = this.dictionary.get(token);
      if (termId >= 0) termIds.push(termId);
    }
    return termIds;
  }

  /** The finished state, for an index artifact. The arrays are the index's own: do not modify them. */
  exportParts(): KnowledgeLexicalIndexParts {
    if (!this.finalized) throw new Error("KnowledgeLexicalIndex.exportParts: call finalize() first");
    return {
      fieldWeights: { ...this.fieldWeights },
      k1: this.k1,
      b: this.b,
      analyzer: this.analyzerName,
      scoring: this.scoring,
      ids: this.ids,
      terms: this.dictionary.allTerms(),
      averageLengths: this.averageLengths,
      ranks: this.ranks,
      postings: this.postings,
      bm25fShares: this.bm25fShares,
    };
  }

  /** Recreates a finished index from {@link exportParts} output (checked for consistency). */
  static fromParts(parts: KnowledgeLexicalIndexParts): KnowledgeLexicalIndex {
    const index = new KnowledgeLexicalIndex(parts.fieldWeights, {
      k1: parts.k1,
      b: parts.b,
      analyzer: parts.analyzer,
      scoring: parts.scoring,
    });
    const documentCount = parts.ids.length;
    const termCount = parts.terms.length;
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
      for (const doc of postings.docs)
        if (doc < 0 || doc >= documentCount)
          throw new RangeError("index parts are inconsistent: posting refers to a missing document");
    }
    for (const id of parts.ids) {
      if (index.denseIds.has(id))
        throw new RangeError(`index parts are inconsistent: duplicate id ${JSON.stringify(id)}`);
      index.denseIds.set(id, index.ids.length);
      index.ids.push(id);
    }
    for (const term of parts.terms) index.dictionary.intern(term);
    if (index.dictionary.size !== termCount)
      throw new RangeError("index parts are inconsistent: duplicate terms");
    index.averageLengths = parts.averageLengths;
    index.ranks = parts.ranks;
    index.postings = parts.postings.map((postings) => ({ ...postings }));
    index.bm25fShares = parts.bm25fShares;
    index.builders = null;
    index.termCounts = new Int32Array(0);
    index.finalized = true;
    return index;
  }

  /** Approximate bytes held by the finished index (typed arrays plus an estimate for maps and strings). */
  estimateBytes(): number {
    let bytes = 0;
    for (const postings of this.postings) {
      bytes += postings.offsets.byteLength + postings.docs.byteLength + postings.contributions.byteLength;
    }
    if (this.bm25fShares) bytes += this.bm25fShares.byteLength;
    return bytes;
  }
}

function assertIndexParameters(weights: KnowledgeFieldWeights, k1: number, b: number): void {
  for (const field of KNOWLEDGE_FIELD_NAMES) {
    const weight = weights[field];
    if (typeof weight !== "number" || !Number.isFinite(weight) || weight < 0) {
      throw new RangeError(`fieldWeights.${field} must be a finite number >= 0, got ${String(weight)}`);
    }
  }
  if (typeof k1 !== "number" || !Number.isFinite(k1) || k1 < 0) {
    throw new RangeError(`k1 must be a finite number >= 0, got ${String(k1)}`);
  }
  if (typeof b !== "number" || !Number.isFinite(b) || b < 0 || b > 1) {
    throw new RangeError(`b must be a number in [0, 1], got ${String(b)}`);
  }
}

/**
 * The finished postings of one field: grouped by term, each posting's BM25 contribution computed once. A
 * function of its own (not a loop inside finalize) so the engine optimizes it with full type information; a
 * generator so an incremental build can yield inside a large field.
 *
 * One counting pass gives each term's document frequency and slice; then the postings, read in document order,
 * are scattered into their term's slice with the contribution computed on the way, so each slice stays sorted by
 * document. The weight × IDF of a term and the length normalization of a document are computed once each, with
 * the same operations in the same order as the straightforward expression, so contributions are bit-identical.
 */
function* fieldPostings(
  builder: FieldBuilder,
  termCount: number,
  documentCount: number,
  weight: number,
  averageLength: number,
  k1: number,
  b: number,
): Generator<void, FieldPostings, void> {
  const postingCount = builder.terms.length;
  const terms = builder.terms.data;
  const frequencies = builder.frequencies.data;
  const ends = builder.ends.data;
  const lengths = builder.lengths.data;
  const offsets = new Int32Array(termCount + 1);
  for (let from = 0; from < postingCount; from += POSTINGS_PER_STEP) {
    const to = Math.min(postingCount, from + POSTINGS_PER_STEP);
    for (let index = from; index < to; index++) offsets[terms[index]! + 1]!++;
    yield;
  }
  const weightedIdf = new Float64Array(termCount);
  for (let term = 0; term < termCount; term++) {
    const documentFrequency = offsets[term + 1]!;
    if (documentFrequency > 0)
      weightedIdf[term] =
        weight * Math.log(1 + (documentCount - documentFrequency + 0.5) / (documentFrequency + 0.5));
    offsets[term + 1]! += offsets[term]!;
  }
  yield;
  const cursor = offsets.slice(0, termCount);
  const docs = new Int32Array(postingCount);
  const contributions = new Float64Array(postingCount);
  const saturation = k1 + 1;
  let begin = 0;
  let sinceYield = 0;
  for (let doc = 0; doc < documentCount; doc++) {
    const end = ends[doc]!;
    if (end === begin) continue;
    const lengthNormalization = k1 * (1 - b + (b * lengths[doc]!) / averageLength);
    for (let index = begin; index < end; index++) {
      const term = terms[index]!;
      const tf = frequencies[index]!;
      const position = cursor[term]!++;
      docs[position] = doc;
      contributions[position] = (weightedIdf[term]! * (tf * saturation)) / (tf + lengthNormalization);
    }
    sinceYield += end - begin;
    begin = end;
    if (sinceYield >= POSTINGS_PER_STEP) {
      sinceYield = 0;
      yield;
    }
  }
  return { offsets, docs, contributions, active: true };
}

/** Postings finalized between two yields of an incremental build. */
const POSTINGS_PER_STEP = 1 << 18;

/** Rank of every id in code-unit order (JavaScript `<` on strings). */
function rankIds(ids: readonly string[]): Int32Array {
  const ranks = new Int32Array(ids.length);
  let sorted = true;
  for (let index = 1; index < ids.length; index++) {
    if (!(ids[index - 1]! < ids[index]!)) {
      sorted = false;
      break;
    }
  }
  if (sorted) {
    for (let index = 0; index < ids.length; index++) ranks[index] = index;
    return ranks;
  }
  const order = ids.map((_, index) => index).sort((left, right) => compareCodeUnits(ids[left]!, ids[right]!));
  order.forEach((doc, rank) => {
    ranks[doc] = rank;
  });
  return ranks;
}

/** Code-unit order comparison, the tie-break everywhere (never locale-dependent). */
export function compareCodeUnits(left: string, right: string): number {
  return left < right ? -1 : left > right ? 1 : 0;
}

/**
 * The best `topK` touched documents by score descending, rank ascending. A bounded heap keeps the selection
 * O(T log K) instead of sorting every touched document.
 */
function selectTop(
  touched: Int32Array,
  count: number,
  topK: number,
  scores: Float64Array,
  ranks: Int32Array,
): number[] {
  // `worse(a, b)`: a ranks below b.
  const worse = (a: number, b: number): boolean => {
    const difference = scores[a]! - scores[b]!;
    return difference < 0 || (difference === 0 && ranks[a]! > ranks[b]!);
  };
  const limit = Math.min(topK, count);
  const heap: number[] = [];
  for (let index = 0; index < count; index++) {
    const doc = touched[index]!;
    if (heap.length < limit) {
      heap.push(doc);
      let child = heap.length - 1;
      while (child > 0) {
        const parent = (child - 1) >> 1;
        if (!worse(heap[child]!, heap[parent]!)) break;
        [heap[child], heap[parent]] = [heap[parent]!, heap[child]!];
        child = parent;
      }
    } else if (worse(heap[0]!, doc)) {
      heap[0] = doc;
      let parent = 0;
      for (;;) {
        const left = parent * 2 + 1;
        const right = left + 1;
        let smallest = parent;
        if (left < limit && worse(heap[left]!, heap[smallest]!)) smallest = left;
        if (right < limit && worse(heap[right]!, heap[smallest]!)) smallest = right;
        if (smallest === parent) break;
        [heap[smallest], heap[parent]] = [heap[parent]!, heap[smallest]!];
        parent = smallest;
      }
    }
  }
  return heap.sort((a, b) => (worse(a, b) ? 1 : worse(b, a) ? -1 : 0));
}

/** Internal, compiled companions of a snapshot built here: dense entries and precomputed lookups. */
export type CompiledSnapshot = {
  lexical: KnowledgeLexicalIndex;
  /** Entries by dense id. */
  entries: NormalizedKnowledgeEntry[];
  /** Active entries with no integrations (eligible in every scope unless their domain is blocked). */
  universalMask: Uint8Array;
  /** Lowercased integration → dense ids of active entries bound to it. */
  activeByIntegration: Map<string, Int32Array>;
  /** Domain → dense ids. */
  byDomain: Map<string, Int32Array>;
  /** The exact and alias phrase keys as a token trie (phrase lookup). */
  phraseTrie: PhraseTrie;
  /** Scope key → eligibility mask (bounded LRU). */
  eligibilityCache: Map<string, Uint8Array>;
};

const compiledSnapshots = new WeakMap<KnowledgeIndexSnapshot, CompiledSnapshot>();

/** The compiled companion of a snapshot built by {@link buildIndexSnapshot}, if any. */
export function getCompiledSnapshot(snapshot: KnowledgeIndexSnapshot): CompiledSnapshot | undefined {
  return compiledSnapshots.get(snapshot);
}

/** Registers a compiled companion (used when a snapshot is loaded from an artifact). */
export function registerCompiledSnapshot(snapshot: KnowledgeIndexSnapshot, compiled: CompiledSnapshot): void {
  compiledSnapshots.set(snapshot, compiled);
}

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

function isBuildOptions(value: unknown): value is KnowledgeIndexBuildOptions {
  if (!value || typeof value !== "object") return false;
  return ["fieldWeights", "k1", "b", "analyzer", "scoring"].some((key) => key in value);
}

/** Starts an incremental build; see {@link buildIndexSnapshot}. */
export function startIndexBuild(
  entries: readonly NormalizedKnowledgeEntry[],
  weightsOrOptions?: Partial<KnowledgeFieldWeights> | KnowledgeIndexBuildOptions,
): IndexBuild {
  const options: KnowledgeIndexBuildOptions = isBuildOptions(weightsOrOptions)
    ? weightsOrOptions
    : { fieldWeights: (weightsOrOptions ?? undefined) as Partial<KnowledgeFieldWeights> | undefined };
  const lexical = new KnowledgeLexicalIndex(options.fieldWeights, options);
  // Dense ids follow code-unit order of entry ids, which makes "lower id first" the natural tie-break.
  const sorted = sortById(entries);
  const maps = new SnapshotMaps();
  let next = 0;
  return {
    step(budgetMs: number): boolean {
      const deadline =
        budgetMs === Number.POSITIVE_INFINITY ? Number.POSITIVE_INFINITY : performance.now() + budgetMs;
      while (next < sorted.length) {
        const entry = sorted[next++]!;
        maps.add(entry, normalizePhrases([entry.id, entry.title]));
        lexical.addEntry(entry);
        if (next === RESERVE_AFTER_DOCUMENTS) lexical.reserveFor(sorted.length);
        if ((next & 63) === 0 && performance.now() >= deadline) return false;
      }
      // Then finalize the postings one field at a time, so an async build can yield between fields.
      while (!lexical.finalizeStep()) if (performance.now() >= deadline) return false;
      return true;
    },
    finish(): KnowledgeIndexSnapshot {
      lexical.finalize();
      return maps.finish(lexical, sorted);
    },
  };
}

/** Documents indexed before the build buffers are sized for the whole registry. */
const RESERVE_AFTER_DOCUMENTS = 1024;
/** Most postings reserved in advance over all fields (2^26: 512 MB of term ids and frequencies). */
const MAX_RESERVED_POSTINGS = 1 << 26;

/**
 * The entries in code-unit order of their ids. Manifests written by `lexground build` are already in that order
 * (checked in one pass); otherwise the ids are sorted by the engine's native string sort, which compares code
 * units and is several times faster than a comparator at 100k entries. Duplicate ids (only possible when a
 * caller skips validation) take the comparator path, so the index reports them.
 */
function sortById(entries: readonly NormalizedKnowledgeEntry[]): NormalizedKnowledgeEntry[] {
  let ordered = true;
  for (let index = 1; index < entries.length && ordered; index++)
    ordered = entries[index - 1]!.id < entries[index]!.id;
  if (ordered) return entries.slice();
  const byId = new Map<string, NormalizedKnowledgeEntry>();
  for (const entry of entries) byId.set(entry.id, entry);
  if (byId.size !== entries.length)
    return entries.slice().sort((left, right) => compareCodeUnits(left.id, right.id));
  const ids = entries.map((entry) => entry.id).sort();
  return ids.map((id) => byId.get(id)!);
}

/** The phrase and relation maps of a snapshot, filled entry by entry. */
class SnapshotMaps {
  private readonly entriesById = new Map<string, NormalizedKnowledgeEntry>();
  private readonly exactIndex = new Map<string, Set<string>>();
  private readonly aliasIndex = new Map<string, Set<string>>();
  private readonly relationIndex = new Map<string, string[]>();
  private readonly phraseTrie = new PhraseTrie();

  add(entry: NormalizedKnowledgeEntry, exactKeys: readonly string[]): void {
    this.entriesById.set(entry.id, entry);
    for (const key of exactKeys) this.addKey(this.exactIndex, this.aliasIndex, key, entry.id);
    for (const alias of entry.aliases) {
      const key = phraseKey(alias);
      if (key !== "") this.addKey(this.aliasIndex, this.exactIndex, key, entry.id);
    }
    const relations =
      entry.parentEntryId !== undefined
        ? [...entry.relatedEntryIds, entry.parentEntryId]
        : entry.relatedEntryIds.slice();
    if (relations.length > 0) this.relationIndex.set(entry.id, relations);
  }

  private addKey(
    map: Map<string, Set<string>>,
    otherMap: Map<string, Set<string>>,
    key: string,
    id: string,
  ): void {
    let ids = map.get(key);
    if (!ids) {
      ids = new Set();
      map.set(key, ids);
      // The trie holds each distinct key once, whichever map it is in.
      if (!otherMap.has(key)) this.phraseTrie.add(key);
    }
    ids.add(id);
  }

  /** Freezes the snapshot and registers its compiled companion. */
  finish(
    lexical: KnowledgeLexicalIndex,
    entries: readonly NormalizedKnowledgeEntry[],
  ): KnowledgeIndexSnapshot {
    const snapshot: KnowledgeIndexSnapshot = {
      entriesById: this.entriesById,
      exactIndex: this.exactIndex,
      aliasIndex: this.aliasIndex,
      relationIndex: this.relationIndex,
      lexical,
      entryCount: this.entriesById.size,
    };
    this.phraseTrie.trimToSize();
    compiledSnapshots.set(snapshot, compileSnapshot(lexical, entries, this.phraseTrie));
    return Object.freeze(snapshot);
  }
}

/**
 * Assembles a snapshot around an already finished lexical index (loaded from an artifact): the phrase and
 * relation maps are recomputed from the entries, which is cheap next to indexing their text.
 */
export function assembleSnapshot(
  entries: readonly NormalizedKnowledgeEntry[],
  lexical: KnowledgeLexicalIndex,
): KnowledgeIndexSnapshot {
  const maps = new SnapshotMaps();
  for (const entry of entries) {
    if (lexical.denseIdOf(entry.id) < 0)
      throw new RangeError(`entry ${JSON.stringify(entry.id)} is not in the lexical index`);
    maps.add(entry, normalizePhrases([entry.id, entry.title]));
  }
  if (entries.length !== lexical.size) throw new RangeError("the entries do not match the lexical index");
  return maps.finish(lexical, entries);
}

/** Precomputes the per-scope eligibility building blocks. */
export function compileSnapshot(
  lexical: KnowledgeLexicalIndex,
  entries: readonly NormalizedKnowledgeEntry[],
  phraseTrie: PhraseTrie,
): CompiledSnapshot {
  const count = entries.length;
  const denseEntries: NormalizedKnowledgeEntry[] = new Array(count);
  const universalMask = new Uint8Array(count);
  const integrationLists = new Map<string, number[]>();
  const domainLists = new Map<string, number[]>();
  for (const entry of entries) {
    const doc = lexical.denseIdOf(entry.id);
    denseEntries[doc] = entry;
    let domainList = domainLists.get(entry.domain);
    if (!domainList) {
      domainList = [];
      domainLists.set(entry.domain, domainList);
    }
    domainList.push(doc);
    if (entry.status !== "active") continue;
    if (entry.integrations.length === 0) {
      universalMask[doc] = 1;
      continue;
    }
    const seen = new Set<string>();
    for (const integration of entry.integrations) {
      const key = integration.toLowerCase();
      if (seen.has(key)) continue;
      seen.add(key);
      let list = integrationLists.get(key);
      if (!list) {
        list = [];
        integrationLists.set(key, list);
      }
      list.push(doc);
    }
  }
  const toTyped = (lists: Map<string, number[]>): Map<string, Int32Array> => {
    const typed = new Map<string, Int32Array>();
    for (const [key, list] of lists) typed.set(key, Int32Array.from(list));
    return typed;
  };
  return {
    lexical,
    entries: denseEntries,
    universalMask,
    activeByIntegration: toTyped(integrationLists),
    byDomain: toTyped(domainLists),
    phraseTrie,
    eligibilityCache: new Map(),
  };
}
