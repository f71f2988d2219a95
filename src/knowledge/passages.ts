/**
 * Passages of long entry bodies (`context.passages: "auto"`): a body is cut into passages (Markdown sections, or
 * paragraphs packed up to a size), the passages are scored against the turn's query with BM25 over the body's own
 * passages, and the best ones are rendered verbatim, in document order, with an elision marker wherever text was
 * left out. A passage that is not the start of its section brings its section's heading line along.
 *
 * Cost: a body is segmented and tokenized once (the work is bounded by {@link MAX_PASSAGES_CONSIDERED} and
 * {@link MAX_PASSAGE_SCAN_CHARS}) and the result is kept in a bounded cache keyed by the frozen entry, so a turn
 * only looks up the query's terms in the body's small passage index. Only the bodies of entries being rendered
 * are ever touched.
 */
import type { KnowledgeAnalyzerName } from "../types/knowledge.js";
import { getAnalyzer } from "./analyzer.js";
import {
  MAX_PASSAGE_SCAN_CHARS,
  MAX_PASSAGES_CONSIDERED,
  PASSAGE_BM25_B,
  PASSAGE_BM25_K1,
  PASSAGE_CACHE_MAX_CHARS,
} from "./defaults.js";
import { tokenize } from "./normalize.js";

/** The line that stands for left-out body text between, before or after the included passages. */
export const PASSAGE_ELISION_MARKER = "[…]";

/** One passage: a `[start, end)` range of the body text, and the heading line of its section. */
export type BodyPassage = {
  start: number;
  end: number;
  /** Range of the heading line of the passage's section, or -1 when the section has no heading. */
  headingStart: number;
  headingEnd: number;
};

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

const HEADING_LINE = /^ {0,3}#{1,6}(?:[ \t]|$)/;
const FENCE_LINE = /^ {0,3}(?:`{3,}|~{3,})/;
const BLANK_LINE = /^[ \t\r\f\v]*$/;
const WHITESPACE = /\s/;

type Block = { start: number; end: number; heading: boolean };

/** Index just past the last non-whitespace character of `text[start, end)` (or `start`). */
function trimEnd(text: string, start: number, end: number): number {
  while (end > start && WHITESPACE.test(text[end - 1]!)) end--;
  return end;
}

/**
 * Splits text into blocks: runs of non-blank lines, with a heading line always a block of its own and a fenced
 * code block (with any blank lines inside it) kept in one block. Stops at `limit` characters.
 */
function splitBlocks(text: string, limit: number): Block[] {
  const blocks: Block[] = [];
  let blockStart = -1;
  let blockEnd = -1;
  let inFence = false;
  const close = (): void => {
    if (blockStart >= 0)
      blocks.push({ start: blockStart, end: trimEnd(text, blockStart, blockEnd), heading: false });
    blockStart = -1;
  };
  let lineStart = 0;
  const end = Math.min(text.length, limit);
  while (lineStart < end) {
    let lineEnd = text.indexOf("\n", lineStart);
    if (lineEnd < 0 || lineEnd > end) lineEnd = end;
    const line = text.slice(lineStart, lineEnd);
    if (FENCE_LINE.test(line)) {
      inFence = !inFence;
      if (blockStart < 0) blockStart = lineStart;
      blockEnd = lineEnd;
    } else if (inFence) {
      if (blockStart < 0) blockStart = lineStart;
      blockEnd = lineEnd;
    } else if (BLANK_LINE.test(line)) {
      close();
    } else if (HEADING_LINE.test(line)) {
      close();
      const headingEnd = trimEnd(text, lineStart, lineEnd);
      const headingStart = lineStart + (line.length - line.trimStart().length);
      blocks.push({ start: headingStart, end: headingEnd, heading: true });
    } else {
      if (blockStart < 0) blockStart = lineStart + (line.length - line.trimStart().length);
      blockEnd = lineEnd;
    }
    lineStart = lineEnd + 1;
  }
  close();
  return blocks;
}

/**
 * Where to cut `text[from, limit)` so the piece is at most `limit - from` long: after the last line break, else
 * after the last sentence end, else at the last whitespace in the second half of the range; otherwise at `limit`
 * itself (moved back one unit so a surrogate pair is never split).
 */
function pieceEnd(text: string, from: number, limit: number): number {
  const floor = from + Math.floor((limit - from) / 2);
  const newline = text.lastIndexOf("\n", limit - 1);
  if (newline > floor) return newline;
  for (let index = limit - 1; index > floor; index--) {
    const code = text.charCodeAt(index - 1);
    if ((code === 46 || code === 33 || code === 63) && WHITESPACE.test(text[index]!)) return index;
  }
  for (let index = limit - 1; index > floor; index--) if (WHITESPACE.test(text[index]!)) return index;
  const code = text.charCodeAt(limit - 1);
  return code >= 0xd800 && code <= 0xdbff && limit - 1 > from ? limit - 1 : limit;
}

function skipWhitespace(text: string, from: number, end: number): number {
  while (from < end && WHITESPACE.test(text[from]!)) from++;
  return from;
}

/**
 * Cuts text into passages of at most `passageChars` characters: a heading starts a new passage (its section), and
 * consecutive blocks of one section share a passage while they fit; a block longer than a passage is cut at line,
 * sentence or word boundaries. At most `maxPassages` passages, from the first `scanChars` characters.
 */
export function segmentPassages(
  text: string,
  passageChars: number,
  maxPassages = MAX_PASSAGES_CONSIDERED,
  scanChars = MAX_PASSAGE_SCAN_CHARS,
): { passages: BodyPassage[]; complete: boolean } {
  const size = Math.max(1, Math.floor(passageChars));
  const passages: BodyPassage[] = [];
  let headingStart = -1;
  let headingEnd = -1;
  let current: BodyPassage | null = null;
  let headingOnly = false;
  let full = false;
  const close = (): void => {
    if (current && current.end > current.start) {
      if (passages.length >= maxPassages) full = true;
      else passages.push(current);
    }
    current = null;
    headingOnly = false;
  };
  for (const block of splitBlocks(text, scanChars)) {
    if (full) break;
    if (block.heading) {
      close();
      headingStart = block.start;
      headingEnd = Math.min(block.end, block.start + size);
      current = { start: block.start, end: headingEnd, headingStart, headingEnd };
      headingOnly = true;
      continue;
    }
    let from = block.start;
    while (from < block.end && !full) {
      if (current) {
        const room: number = (current as BodyPassage).start + size - from;
        if (block.end - from <= room) {
          (current as BodyPassage).end = block.end;
          headingOnly = false;
          from = block.end;
          break;
        }
        // A lone heading takes the start of an oversized first block rather than standing alone.
        if (headingOnly && room >= size / 4) {
          const cut = pieceEnd(text, from, from + room);
          (current as BodyPassage).end = trimEnd(text, from, cut);
          from = skipWhitespace(text, cut, block.end);
        }
        close();
        continue;
      }
      if (block.end - from <= size) {
        current = { start: from, end: block.end, headingStart, headingEnd };
        from = block.end;
      } else {
        const cut = pieceEnd(text, from, from + size);
        current = { start: from, end: trimEnd(text, from, cut), headingStart, headingEnd };
        close();
        from = skipWhitespace(text, cut, block.end);
      }
    }
  }
  close();
  const complete = !full && text.length <= scanChars;
  return { passages, complete };
}

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
    const idf = Math.log(1 + (count - documentFrequency + 0.5) / (documentFrequency + 0.5));
    for (let position = 0; position < list.length; position += 2) {
      const passage = list[position]!;
      const frequency = list[position + 1]!;
      const norm =
        PASSAGE_BM25_K1 * (1 - PASSAGE_BM25_B + (PASSAGE_BM25_B * index.lengths[passage]!) / average);
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

// A bounded LRU of passage indexes by owner (a frozen entry) and settings.
type CacheSlot = { source: string; index: PassageIndex; chars: number };
const passageCache = new Map<object, Map<string, CacheSlot>>();
let cachedChars = 0;

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
    const slots = passageCache.get(owner);
    const hit = slots?.get(key);
    if (slots && hit && hit.source === body) {
      passageCache.delete(owner);
      passageCache.set(owner, slots);
      return hit.index;
    }
  }
  const scanned = body.length > MAX_PASSAGE_SCAN_CHARS ? body.slice(0, MAX_PASSAGE_SCAN_CHARS) : body;
  const index = buildPassageIndex(prepare(scanned), passageChars, analyzer, scanned.length === body.length);
  if (!cacheable) return index;
  let slots = passageCache.get(owner);
  if (slots) {
    const previous = slots.get(key);
    if (previous) cachedChars -= previous.chars;
    passageCache.delete(owner);
  } else {
    slots = new Map();
  }
  slots.set(key, { source: body, index, chars: scanned.length });
  passageCache.set(owner, slots);
  cachedChars += scanned.length;
  while (cachedChars > PASSAGE_CACHE_MAX_CHARS && passageCache.size > 1) {
    const oldest = passageCache.keys().next().value!;
    for (const slot of passageCache.get(oldest)!.values()) cachedChars -= slot.chars;
    passageCache.delete(oldest);
  }
  return index;
}

/** Empties the passage cache (tests and memory-sensitive hosts). */
export function clearPassageCache(): void {
  passageCache.clear();
  cachedChars = 0;
}
