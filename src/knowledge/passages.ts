/**
 * Passages of long entry bodies (`context.passages: "auto"`): a body is cut into passages (Markdown sections, or
 * paragraphs packed up to a size), the passages are scored against the turn's query with BM25 over the body's own
 * passages, and the best ones are rendered verbatim, in document order, with an elision marker wherever text was
 * left out. A passage that is not the start of its section brings its section's heading line along.
 *
 * Cost: a body is segmented and tokenized once (the work is bounded by `MAX_PASSAGES_CONSIDERED` and
 * {@link MAX_PASSAGE_SCAN_CHARS}) and the result is kept in a bounded cache keyed by the frozen entry, so a turn
 * only looks up the query's terms in the body's small passage index. Only the bodies of entries being rendered
 * are ever touched.
 */
import type { KnowledgeAnalyzerName } from "../types/knowledge.js";
import { getAnalyzer } from "./analyzer.js";
import { bm25Idf, bm25LengthNormalization } from "./bm25.js";
import {
  MAX_PASSAGE_SCAN_CHARS,
  PASSAGE_BM25_B,
  PASSAGE_BM25_K1,
  PASSAGE_CACHE_MAX_CHARS,
} from "./defaults.js";
import { LruCache } from "./lruCache.js";
import { tokenize } from "./normalize.js";
import { type BodyPassage, segmentPassages, WHITESPACE } from "./passageSegments.js";

export { type BodyPassage, segmentPassages } from "./passageSegments.js";

/** The line that stands for left-out body text between, before or after the included passages. */
export const PASSAGE_ELISION_MARKER = "[…]";

/** A body cut into passages, with an inverted index of the passages' (analyzed) terms. */
export type PassageIndex = {
  /** The text the ranges point into. */
  text: string;
  passages: BodyPassage[];
  /** Analyzed term count of each passage's own text. */
  lengths: Uint32Array;
  averageLength: number;
  /** Term → flat list of (passage index, weighted term frequency) pairs, in passage order. */
  postings: Map<string, number[]>;
  /** False when the body was longer than the scan bound or had more passages than considered. */
  complete: boolean;
};

/** Analyzed tokens of a text (the engine's tokenizer, then the configured analyzer). */
function analyzedTokens(text: string, analyzer: KnowledgeAnalyzerName): string[] {
  const tokens = tokenize(text);
  const analyze = getAnalyzer(analyzer);
  return analyze ? analyze(tokens) : tokens;
}

/** Weight of a section heading's terms in the section's later passages (the passage's own words weigh 1). */
export const PASSAGE_HEADING_WEIGHT = 0.5;

/**
 * Segments a body and indexes its passages' terms; a passage after its section's start also gets the heading's
 * terms at {@link PASSAGE_HEADING_WEIGHT} each (they do not count in its length).
 * `wholeBody` false says `text` is only the start of the body (an elision marker then always ends the excerpt).
 */
export function buildPassageIndex(
  text: string,
  passageChars: number,
  analyzer: KnowledgeAnalyzerName = "none",
  wholeBody = true,
): PassageIndex {
  const segmented = segmentPassages(text, passageChars);
  const passages = segmented.passages;
  const complete = segmented.complete && wholeBody;
  const lengths = new Uint32Array(passages.length);
  const postings = new Map<string, number[]>();
  let headingKey = -1;
  let headingTokens: string[] = [];
  let total = 0;
  passages.forEach((passage, index) => {
    const tokens = analyzedTokens(text.slice(passage.start, passage.end), analyzer);
    lengths[index] = tokens.length;
    total += tokens.length;
    const counts = new Map<string, number>();
    for (const token of tokens) counts.set(token, (counts.get(token) ?? 0) + 1);
    if (passage.headingStart >= 0 && passage.start !== passage.headingStart) {
      if (headingKey !== passage.headingStart) {
        headingKey = passage.headingStart;
        headingTokens = analyzedTokens(text.slice(passage.headingStart, passage.headingEnd), analyzer);
      }
      // The section's heading speaks for the passage too, but less than its own words do: otherwise every
      // passage of a section would share the heading's terms and the shortest one would win.
      for (const token of headingTokens) counts.set(token, (counts.get(token) ?? 0) + PASSAGE_HEADING_WEIGHT);
    }
    for (const [term, count] of counts) {
      const list = postings.get(term);
      if (list) list.push(index, count);
      else postings.set(term, [index, count]);
    }
  });
  return {
    text,
    passages,
    lengths,
    averageLength: passages.length > 0 ? total / passages.length : 0,
    postings,
    complete,
  };
}

/**
 * BM25 score of every passage that holds at least one of the query's terms (distinct analyzed terms), with IDF
 * over the body's passages: `ln(1 + (N − df + 0.5) / (df + 0.5))`, k1 {@link PASSAGE_BM25_K1}, b
 * {@link PASSAGE_BM25_B}. Returns passage index → score.
 */
export function scorePassages(index: PassageIndex, queryTerms: Iterable<string>): Map<number, number> {
  const scores = new Map<number, number>();
  const count = index.passages.length;
  const average = index.averageLength || 1;
  for (const term of new Set(queryTerms)) {
    const list = index.postings.get(term);
    if (!list) continue;
    const documentFrequency = list.length / 2;
    const idf = bm25Idf(count, documentFrequency);
    for (let position = 0; position < list.length; position += 2) {
      const passage = list[position]!;
      const frequency = list[position + 1]!;
      const norm = bm25LengthNormalization(PASSAGE_BM25_K1, PASSAGE_BM25_B, index.lengths[passage]!, average);
      // Not bm25TermScore: this order (idf · tf · (k1 + 1) first) is the one passage choices were made with, and
      // a different rounding could reorder passages that score alike.
      const gain = (idf * frequency * (PASSAGE_BM25_K1 + 1)) / (frequency + norm);
      scores.set(passage, (scores.get(passage) ?? 0) + gain);
    }
  }
  return scores;
}

/** The chosen excerpt of a body: its text and which passages it holds. */
export type PassageExcerpt = {
  /** The passages (and heading lines) joined in document order, with {@link PASSAGE_ELISION_MARKER} lines between. */
  text: string;
  /** Indexes of the chosen passages, in document order. */
  passages: number[];
};

/** Whether `text[from, to)` is only whitespace. */
function onlyWhitespace(text: string, from: number, to: number): boolean {
  for (let index = from; index < to; index++) if (!WHITESPACE.test(text[index]!)) return false;
  return true;
}

/**
 * Renders chosen passages in document order: each with its section's heading line when the passage does not
 * start its section, ranges separated only by whitespace merged (verbatim, the whitespace kept), and an elision
 * marker line wherever non-blank text was left out, at the start and end included.
 */
export function renderExcerpt(index: PassageIndex, chosen: readonly number[]): string {
  const ranges: [number, number][] = [];
  for (const passageIndex of [...chosen].sort((left, right) => left - right)) {
    const passage = index.passages[passageIndex]!;
    if (passage.headingStart >= 0 && passage.start !== passage.headingStart) {
      const last = ranges[ranges.length - 1];
      if (!last || last[1] <= passage.headingStart) ranges.push([passage.headingStart, passage.headingEnd]);
    }
    ranges.push([passage.start, passage.end]);
  }
  const text = index.text;
  const parts: string[] = [];
  let cursor = 0;
  let openStart = -1;
  let openEnd = -1;
  const flush = (): void => {
    if (openStart >= 0) parts.push(text.slice(openStart, openEnd));
  };
  for (const [start, end] of ranges) {
    if (openStart >= 0 && onlyWhitespace(text, openEnd, start)) {
      openEnd = end;
      continue;
    }
    flush();
    if (!onlyWhitespace(text, cursor, start)) parts.push(PASSAGE_ELISION_MARKER);
    openStart = start;
    openEnd = end;
    cursor = end;
  }
  flush();
  if (openEnd >= 0 && (!index.complete || !onlyWhitespace(text, openEnd, text.length))) {
    parts.push(PASSAGE_ELISION_MARKER);
  }
  return parts.join("\n");
}

/**
 * Chooses the passages that best answer the query within `maxChars` characters of rendered excerpt: passages by
 * descending score (ties in document order), each kept when the excerpt still fits, until `maxPassages` are kept.
 * When no passage holds a query term, the leading passages are taken in document order instead. Returns null
 * when not even one passage fits.
 */
export function selectPassages(
  index: PassageIndex,
  queryTerms: Iterable<string>,
  maxPassages: number,
  maxChars: number,
): PassageExcerpt | null {
  if (index.passages.length === 0 || maxPassages < 1 || maxChars <= 0) return null;
  const scores = scorePassages(index, queryTerms);
  let ranked: number[];
  if (scores.size > 0) {
    ranked = [...scores.keys()].sort((left, right) => scores.get(right)! - scores.get(left)! || left - right);
  } else {
    ranked = index.passages.map((_, passageIndex) => passageIndex);
  }
  const chosen: number[] = [];
  let text = "";
  for (const candidate of ranked) {
    if (chosen.length >= maxPassages) break;
    // Every remaining candidate costs at least its own length.
    const passage = index.passages[candidate]!;
    if (passage.end - passage.start > maxChars) continue;
    chosen.push(candidate);
    const rendered = renderExcerpt(index, chosen);
    if (rendered.length <= maxChars) text = rendered;
    else chosen.pop();
  }
  if (chosen.length === 0) return null;
  return { text, passages: chosen.sort((left, right) => left - right) };
}

/** Analyzed, distinct terms of a query, for {@link selectPassages}. */
export function passageQueryTerms(queryTokens: readonly string[], analyzer: KnowledgeAnalyzerName): string[] {
  const analyze = getAnalyzer(analyzer);
  return [...new Set(analyze ? analyze(queryTokens) : queryTokens)];
}

// Passage indexes by owner (a frozen entry) and settings, bounded by the characters they were cut from.
type CacheSlot = { source: string; index: PassageIndex; chars: number };
const passageCache = new LruCache<object, ReadonlyMap<string, CacheSlot>>(
  PASSAGE_CACHE_MAX_CHARS,
  undefined,
  (slots) => {
    let chars = 0;
    for (const slot of slots.values()) chars += slot.chars;
    return chars;
  },
);

/**
 * The passage index of a body for an owner object (a frozen entry), from the cache when present. Only the first
 * {@link MAX_PASSAGE_SCAN_CHARS} characters of `body` are considered; `prepare` turns them into the text passages
 * are cut from (the block's well-formed, delimiter-safe form), once per cached index. The cache holds at most
 * {@link PASSAGE_CACHE_MAX_CHARS} characters of scanned text; least recently used owners go first. Owners that are
 * not frozen are not cached (their text could change).
 */
export function passageIndexFor(
  owner: object,
  body: string,
  passageChars: number,
  analyzer: KnowledgeAnalyzerName,
  prepare: (text: string) => string,
): PassageIndex {
  const cacheable = Object.isFrozen(owner);
  const key = `${analyzer}:${passageChars}`;
  if (cacheable) {
    const hit = passageCache.get(owner)?.get(key);
    if (hit && hit.source === body) return hit.index;
  }
  const scanned = body.length > MAX_PASSAGE_SCAN_CHARS ? body.slice(0, MAX_PASSAGE_SCAN_CHARS) : body;
  const index = buildPassageIndex(prepare(scanned), passageChars, analyzer, scanned.length === body.length);
  if (!cacheable) return index;
  // A new map (the cache weighs an owner's slots when they are set).
  const slots = new Map(passageCache.peek(owner));
  slots.set(key, { source: body, index, chars: scanned.length });
  passageCache.set(owner, slots);
  return index;
}

/** Empties the passage cache (tests and memory-sensitive hosts). */
export function clearPassageCache(): void {
  passageCache.clear();
}
