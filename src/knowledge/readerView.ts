/**
 * What tolerant readers see in a piece of text, with a map back to the original. The readers modelled: one that
 * takes the text as it is, NFKC-normalizes it, HTML-decodes it, or does both in either order, and then reads
 * it ignoring case, whitespace, control characters, invisible format characters and combining marks. A view
 * decodes HTML character references (numeric ones in full, named ones from the subset in `htmlReferences.ts`),
 * folds every character (compatibility decomposition, marks and format characters removed, lowercased) and drops
 * whitespace and controls. Whatever character sequence one of those readers sees, one of the two views also contains (they
 * may see more, never less), so a check run on both covers all of those readers at once.
 *
 * Used by the context block to find spellings of its own tags and of citation markers in entry text.
 */
import { NAMED_REFERENCE_ROWS, numericReferenceText } from "./htmlReferences.js";

/** The view: `text[i]` came from the original's code units `starts[i]` (inclusive) to `ends[i]` (exclusive). */
export type ReaderView = { text: string; starts: number[]; ends: number[] };

export { namedReferencesForTests } from "./htmlReferences.js";

const INVISIBLE = /[\p{M}\p{Cf}]/gu;
const DROPPED = /[\s\p{Cc}]/gu;
const NUMERIC_REFERENCE = /#(?:[xX]([0-9A-Fa-f]+)|([0-9]+));?/y;
const NAME_RUN = /[A-Za-z0-9]+/y;
/** Entries kept in each per-code-point cache. */
const CACHE_LIMIT = 65_536;
/** The longest legacy (semicolon-less) name in the table. */
const LEGACY_NAME_MAX_LENGTH = 6;

/** One code point or decoded text as the view holds it: folded, lowercased, whitespace and controls dropped. */
function viewOf(text: string): string {
  return text.normalize("NFKD").replace(INVISIBLE, "").toLowerCase().replace(DROPPED, "");
}

const codePointViews = new Map<number, string>();

/** {@link viewOf} one non-ASCII code point (cached: text repeats its characters). */
function viewOfCodePoint(code: number): string {
  let known = codePointViews.get(code);
  if (known === undefined) {
    known = viewOf(String.fromCodePoint(code));
    if (codePointViews.size < CACHE_LIMIT) codePointViews.set(code, known);
  }
  return known;
}

let namedReferenceViews: ReadonlyMap<string, string> | null = null;

/**
 * Each named reference with its decoded text as the view holds it: made when text first holds a reference, not
 * when the module loads (every process that imports the engine would pay for it at start).
 */
function namedReferences(): ReadonlyMap<string, string> {
  namedReferenceViews ??= new Map(
    NAMED_REFERENCE_ROWS.flatMap(([decoded, names]) =>
      names.split(" ").map((name): [string, string] => [name, viewOf(decoded)]),
    ),
  );
  return namedReferenceViews;
}

/**
 * Decodes the character reference starting at `text[at]` (an `&`): its length in `text` and its text as the
 * view holds it, or undefined when none starts there. Names are matched as HTML does: the full name with `;`, or
 * else the longest legacy name that prefixes the run of letters and digits.
 */
function decodeReference(text: string, at: number): { length: number; text: string } | undefined {
  NUMERIC_REFERENCE.lastIndex = at + 1;
  const numeric = NUMERIC_REFERENCE.exec(text);
  if (numeric) {
    const decoded =
      numeric[1] !== undefined ? numericReferenceText(numeric[1], 16) : numericReferenceText(numeric[2]!, 10);
    return { length: 1 + numeric[0].length, text: viewOf(decoded) };
  }
  NAME_RUN.lastIndex = at + 1;
  const run = NAME_RUN.exec(text)?.[0];
  if (run === undefined) return undefined;
  if (text[at + 1 + run.length] === ";") {
    const decoded = namedReferences().get(`${run};`);
    if (decoded !== undefined) return { length: run.length + 2, text: decoded };
  }
  for (let length = Math.min(run.length, LEGACY_NAME_MAX_LENGTH); length >= 2; length--) {
    const decoded = namedReferences().get(run.slice(0, length));
    if (decoded !== undefined) return { length: length + 1, text: decoded };
  }
  return undefined;
}

/**
 * Text before decoding, as one kind of reader has it, with the original range of each UTF-16 unit: `starts[i]`
 * to `ends[i]`, or, when `starts` is null, the text is the original itself.
 */
type PreparedText = { text: string; starts: Int32Array | null; ends: Int32Array | null };

const markCache = new Map<number, boolean>();
const MARK = /^\p{M}$/u;

/** Whether a code point is a combining mark (U+0300 and above only; cached). */
function isMark(code: number): boolean {
  if (code < 0x300) return false;
  let known = markCache.get(code);
  if (known === undefined) {
    known = MARK.test(String.fromCodePoint(code));
    if (markCache.size < CACHE_LIMIT) markCache.set(code, known);
  }
  return known;
}

const clusterForms = new Map<string, string>();

/** NFKC of a short cluster (cached: text repeats its characters). */
function normalizeCluster(cluster: string): string {
  if (cluster.length > 4) return cluster.normalize("NFKC");
  let known = clusterForms.get(cluster);
  if (known === undefined) {
    known = cluster.normalize("NFKC");
    if (clusterForms.size < CACHE_LIMIT) clusterForms.set(cluster, known);
  }
  return known;
}

/**
 * The text NFKC-normalized (a reader that normalizes first). Composition happens between a character and the
 * combining marks after it, so each such cluster is normalized on its own: the same units as whole-string NFKC
 * wherever an HTML reference can begin or end (references are ASCII, and no composition produces ASCII).
 */
function normalizedByCluster(text: string): PreparedText {
  const pieces: string[] = [];
  let starts = new Int32Array(text.length + 16);
  let ends = new Int32Array(text.length + 16);
  let length = 0;
  for (let index = 0; index < text.length; ) {
    let end = index + (text.codePointAt(index)! > 0xffff ? 2 : 1);
    while (end < text.length) {
      const code = text.codePointAt(end)!;
      if (!isMark(code)) break;
      end += code > 0xffff ? 2 : 1;
    }
    const cluster = text.slice(index, end);
    const piece = cluster.length === 1 && cluster.charCodeAt(0) < 0x80 ? cluster : normalizeCluster(cluster);
    if (length + piece.length > starts.length) {
      const capacity = Math.max(starts.length * 2, length + piece.length);
      const grownStarts = new Int32Array(capacity);
      const grownEnds = new Int32Array(capacity);
      grownStarts.set(starts);
      grownEnds.set(ends);
      starts = grownStarts;
      ends = grownEnds;
    }
    starts.fill(index, length, length + piece.length);
    ends.fill(end, length, length + piece.length);
    length += piece.length;
    pieces.push(piece);
    index = end;
  }
  return { text: pieces.join(""), starts, ends };
}

/** Decodes references in prepared text, folds every character, and keeps the map to the original. */
function decodeAndFold(prepared: PreparedText): ReaderView {
  const { text } = prepared;
  const preparedStarts = prepared.starts;
  const preparedEnds = prepared.ends;
  const startOf = (index: number): number => (preparedStarts ? preparedStarts[index]! : index);
  const endOf = (index: number): number => {
    if (preparedEnds) return preparedEnds[index]!;
    return index + (text.codePointAt(index)! > 0xffff ? 2 : 1);
  };
  const starts: number[] = [];
  const ends: number[] = [];
  const pieces: string[] = [];
  const emit = (piece: string, start: number, end: number): void => {
    for (let offset = 0; offset < piece.length; offset++) {
      starts.push(start);
      ends.push(end);
    }
    pieces.push(piece);
  };
  for (let index = 0; index < text.length; ) {
    const code = text.codePointAt(index)!;
    if (code === 0x26) {
      const reference = decodeReference(text, index);
      if (reference) {
        emit(reference.text, startOf(index), endOf(index + reference.length - 1));
        index += reference.length;
        continue;
      }
    }
    const width = code > 0xffff ? 2 : 1;
    if (code < 0x80) {
      if (code > 0x20 && code !== 0x7f) {
        starts.push(startOf(index));
        ends.push(endOf(index));
        pieces.push(code >= 0x41 && code <= 0x5a ? String.fromCharCode(code + 32) : text[index]!);
      }
    } else {
      emit(viewOfCodePoint(code), startOf(index), endOf(index));
    }
    index += width;
  }
  return { text: pieces.join(""), starts, ends };
}

/** A non-ASCII character: text without one is its own NFKC form. */
const NON_ASCII = /[^\p{ASCII}]/u;
/** Forms of `&`: text without one has no references, so decoding before or after NFKC cannot differ. */
const AMPERSAND_FORMS = /[&\uFE60\uFF06]/;

/**
 * The {@link ReaderView}s of `text`: HTML references decoded in the text as it is, and in its NFKC form (where
 * `＆lt;` is a reference). They differ where a compatibility form or a composition changes where a reference
 * ends; a check that looks at both misses nothing either order of reading shows. One view suffices when the
 * text is ASCII or has no reference (the fold already includes everything NFKC does to a character). Linear in
 * the length of the text.
 */
export function buildReaderViews(text: string): ReaderView[] {
  const asIs = decodeAndFold({ text, starts: null, ends: null });
  if (!AMPERSAND_FORMS.test(text) || !NON_ASCII.test(text)) return [asIs];
  return [asIs, decodeAndFold(normalizedByCluster(text))];
}

/** Folded characters that can appear in a tag or marker spelling after its opener (or in a reference). */
const SPELLING_CHARACTERS = /^[a-z0-9&#;:/\\_.\p{Pd}]*$/u;
/** ASCII code points that can continue a spelling: controls and spaces (ignored), and {@link SPELLING_CHARACTERS}. */
const ASCII_CONTINUES = Uint8Array.from({ length: 0x80 }, (_, code) =>
  code <= 0x20 || code === 0x7f || SPELLING_CHARACTERS.test(String.fromCharCode(code).toLowerCase()) ? 1 : 0,
);
const continuesCache = new Map<number, boolean>();

/** Whether a code point can be part of a spelling after its opener: it folds to nothing or to spelling characters. */
function continuesSpelling(code: number): boolean {
  if (code < 0x80) return ASCII_CONTINUES[code] === 1;
  if (code >= 0xd800 && code <= 0xdfff) return false;
  let known = continuesCache.get(code);
  if (known === undefined) {
    known = SPELLING_CHARACTERS.test(viewOf(String.fromCodePoint(code)));
    if (continuesCache.size < CACHE_LIMIT) continuesCache.set(code, known);
  }
  return known;
}

/**
 * Where `pattern` matches in either reader view of `text`: for each match, the original range of the view
 * character it starts with. Only the spans that can hold a spelling are viewed: each starts at a match of
 * `openers` (every code point the pattern's first character can come from, directly or as the `&` of a
 * reference) and runs over the characters that can continue one, plus the first that cannot (its folded form
 * may still begin with the spelling's last characters, as `⩴` does with `::=`), so ordinary text costs a scan
 * for openers. `needle` is a string every match contains (a cheap test before matching). `openers` and `pattern`
 * must be global.
 */
export function findInReaderViews(
  text: string,
  openers: RegExp,
  pattern: RegExp,
  needle: string,
): [number, number][] {
  const ranges: [number, number][] = [];
  let spanStart = -1;
  let spanEnd = -1;
  // Where the last run stopped: the first character after an opener that could not continue a spelling.
  let stoppedAt = -1;
  const search = (): void => {
    if (spanStart < 0) return;
    for (const view of buildReaderViews(text.slice(spanStart, spanEnd))) {
      if (!view.text.includes(needle)) continue;
      for (const match of view.text.matchAll(pattern)) {
        ranges.push([spanStart + view.starts[match.index]!, spanStart + view.ends[match.index]!]);
      }
    }
  };
  for (const opener of text.matchAll(openers)) {
    const start = opener.index;
    // An opener before the last stop is inside the current span, whose run already reaches as far as its own.
    if (start < stoppedAt) continue;
    if (start > spanEnd) {
      search();
      spanStart = start;
    }
    let end = start + opener[0].length;
    while (end < text.length) {
      const code = text.codePointAt(end)!;
      if (!continuesSpelling(code)) break;
      end += code > 0xffff ? 2 : 1;
    }
    stoppedAt = end;
    spanEnd = end < text.length ? end + (text.codePointAt(end)! > 0xffff ? 2 : 1) : end;
  }
  search();
  return ranges;
}
