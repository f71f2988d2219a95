/**
 * What tolerant readers see in a piece of text, with a map back to the original. The readers modelled: one that
 * takes the text as it is, NFKC-normalizes it, HTML-decodes it, or does both in either order, and then reads
 * it ignoring case, whitespace, control characters, invisible format characters and combining marks. A view
 * decodes HTML character references (numeric ones in full, named ones from the subset below), folds every
 * character (compatibility decomposition, marks and format characters removed, lowercased) and drops whitespace
 * and controls. Whatever character sequence one of those readers sees, one of the two views also contains (they
 * may see more, never less), so a check run on both covers all of those readers at once.
 *
 * Used by the context block to find spellings of its own tags and of citation markers in entry text.
 */

/** The view: `text[i]` came from the original's code units `starts[i]` (inclusive) to `ends[i]` (exclusive). */
export type ReaderView = { text: string; starts: number[]; ends: number[] };

/**
 * Named character references (WHATWG HTML) whose decoded text folds to something the block's checks look for:
 * a tag opener `<`, `/`, `\`, `[`, `:`, `_`, `.`, a dash, whitespace, or a letter of `knowledge`, `context` or
 * `kb`. References that decode to anything else cannot help spell a tag or a marker, so a decoder that knows only
 * these finds every spelling a full decoder finds. Names without `;` are the legacy forms HTML decodes without
 * one. Each row: the decoded text, then the names.
 */
const NAMED_REFERENCE_ROWS: readonly (readonly [string, string])[] = [
  ["\u0009", "Tab;"],
  ["\u000A", "NewLine;"],
  ["\u00A0", "NonBreakingSpace; nbsp nbsp;"],
  ["\u00A8", "Dot; DoubleDot; die; uml uml;"],
  ["\u00AF", "macr macr; strns;"],
  ["\u00B4", "DiacriticalAcute; acute acute;"],
  ["\u00B8", "Cedilla; cedil cedil;"],
  ["\u02D8", "Breve; breve;"],
  ["\u02D9", "DiacriticalDot; dot;"],
  ["\u02DA", "ring;"],
  ["\u02DB", "ogon;"],
  ["\u02DC", "DiacriticalTilde; tilde;"],
  ["\u02DD", "DiacriticalDoubleAcute; dblac;"],
  ["\u2002", "ensp;"],
  ["\u2003", "emsp;"],
  ["\u2004", "emsp13;"],
  ["\u2005", "emsp14;"],
  ["\u2007", "numsp;"],
  ["\u2008", "puncsp;"],
  ["\u2009", "ThinSpace; thinsp;"],
  ["\u200A", "VeryThinSpace; hairsp;"],
  ["\u203E", "OverBar; oline;"],
  ["\u205F", "MediumSpace;"],
  ["\u205F\u200A", "ThickSpace;"],
  [".", "period;"],
  ["\u2025", "nldr;"],
  ["\u2026", "hellip; mldr;"],
  ["/", "sol;"],
  [":", "colon;"],
  ["\u2A74", "Colone;"],
  ["<", "LT LT; lt lt;"],
  ["<\u20D2", "nvlt;"],
  ["\u226E", "NotLess; nless; nlt;"],
  ["[", "lbrack; lsqb;"],
  ["\u005C", "bsol;"],
  ["_", "UnderBar; lowbar;"],
  ["\u212C", "Bernoullis; Bscr; bernou;"],
  ["\u{1D4B7}", "bscr;"],
  ["\u{1D505}", "Bfr;"],
  ["\u{1D51F}", "bfr;"],
  ["\u{1D539}", "Bopf;"],
  ["\u{1D553}", "bopf;"],
  ["\u00C7", "Ccedil Ccedil;"],
  ["\u00E7", "ccedil ccedil;"],
  ["\u0106", "Cacute;"],
  ["\u0107", "cacute;"],
  ["\u0108", "Ccirc;"],
  ["\u0109", "ccirc;"],
  ["\u010A", "Cdot;"],
  ["\u010B", "cdot;"],
  ["\u010C", "Ccaron;"],
  ["\u010D", "ccaron;"],
  ["\u2102", "Copf; complexes;"],
  ["\u212D", "Cayleys; Cfr;"],
  ["\u{1D49E}", "Cscr;"],
  ["\u{1D4B8}", "cscr;"],
  ["\u{1D520}", "cfr;"],
  ["\u{1D554}", "copf;"],
  ["\u2105", "incare;"],
  ["\u010E", "Dcaron;"],
  ["\u010F", "dcaron;"],
  ["\u2145", "CapitalDifferentialD; DD;"],
  ["\u2146", "DifferentialD; dd;"],
  ["\u{1D49F}", "Dscr;"],
  ["\u{1D4B9}", "dscr;"],
  ["\u{1D507}", "Dfr;"],
  ["\u{1D521}", "dfr;"],
  ["\u{1D53B}", "Dopf;"],
  ["\u{1D555}", "dopf;"],
  ["\u00C8", "Egrave Egrave;"],
  ["\u00C9", "Eacute Eacute;"],
  ["\u00CA", "Ecirc Ecirc;"],
  ["\u00CB", "Euml Euml;"],
  ["\u00E8", "egrave egrave;"],
  ["\u00E9", "eacute eacute;"],
  ["\u00EA", "ecirc ecirc;"],
  ["\u00EB", "euml euml;"],
  ["\u0112", "Emacr;"],
  ["\u0113", "emacr;"],
  ["\u0116", "Edot;"],
  ["\u0117", "edot;"],
  ["\u0118", "Eogon;"],
  ["\u0119", "eogon;"],
  ["\u011A", "Ecaron;"],
  ["\u011B", "ecaron;"],
  ["\u212F", "escr;"],
  ["\u2130", "Escr; expectation;"],
  ["\u2147", "ExponentialE; ee; exponentiale;"],
  ["\u{1D508}", "Efr;"],
  ["\u{1D522}", "efr;"],
  ["\u{1D53C}", "Eopf;"],
  ["\u{1D556}", "eopf;"],
  ["\uFB04", "ffllig;"],
  ["\uFB02", "fllig;"],
  ["\u011C", "Gcirc;"],
  ["\u011D", "gcirc;"],
  ["\u011E", "Gbreve;"],
  ["\u011F", "gbreve;"],
  ["\u0120", "Gdot;"],
  ["\u0121", "gdot;"],
  ["\u0122", "Gcedil;"],
  ["\u01F5", "gacute;"],
  ["\u210A", "gscr;"],
  ["\u{1D4A2}", "Gscr;"],
  ["\u{1D50A}", "Gfr;"],
  ["\u{1D524}", "gfr;"],
  ["\u{1D53E}", "Gopf;"],
  ["\u{1D558}", "gopf;"],
  ["\u0136", "Kcedil;"],
  ["\u0137", "kcedil;"],
  ["\u{1D4A6}", "Kscr;"],
  ["\u{1D4C0}", "kscr;"],
  ["\u{1D50E}", "Kfr;"],
  ["\u{1D528}", "kfr;"],
  ["\u{1D542}", "Kopf;"],
  ["\u{1D55C}", "kopf;"],
  ["\u0139", "Lacute;"],
  ["\u013A", "lacute;"],
  ["\u013B", "Lcedil;"],
  ["\u013C", "lcedil;"],
  ["\u013D", "Lcaron;"],
  ["\u013E", "lcaron;"],
  ["\u2112", "Laplacetrf; Lscr; lagran;"],
  ["\u2113", "ell;"],
  ["\u{1D4C1}", "lscr;"],
  ["\u{1D50F}", "Lfr;"],
  ["\u{1D529}", "lfr;"],
  ["\u{1D543}", "Lopf;"],
  ["\u{1D55D}", "lopf;"],
  ["\u013F", "Lmidot;"],
  ["\u0140", "lmidot;"],
  ["\u00D1", "Ntilde Ntilde;"],
  ["\u00F1", "ntilde ntilde;"],
  ["\u0143", "Nacute;"],
  ["\u0144", "nacute;"],
  ["\u0145", "Ncedil;"],
  ["\u0146", "ncedil;"],
  ["\u0147", "Ncaron;"],
  ["\u0148", "ncaron;"],
  ["\u2115", "Nopf; naturals;"],
  ["\u{1D4A9}", "Nscr;"],
  ["\u{1D4C3}", "nscr;"],
  ["\u{1D511}", "Nfr;"],
  ["\u{1D52B}", "nfr;"],
  ["\u{1D55F}", "nopf;"],
  ["\u2116", "numero;"],
  ["\u00BA", "ordm ordm;"],
  ["\u00D2", "Ograve Ograve;"],
  ["\u00D3", "Oacute Oacute;"],
  ["\u00D4", "Ocirc Ocirc;"],
  ["\u00D5", "Otilde Otilde;"],
  ["\u00D6", "Ouml Ouml;"],
  ["\u00F2", "ograve ograve;"],
  ["\u00F3", "oacute oacute;"],
  ["\u00F4", "ocirc ocirc;"],
  ["\u00F5", "otilde otilde;"],
  ["\u00F6", "ouml ouml;"],
  ["\u014C", "Omacr;"],
  ["\u014D", "omacr;"],
  ["\u0150", "Odblac;"],
  ["\u0151", "odblac;"],
  ["\u2134", "order; orderof; oscr;"],
  ["\u{1D4AA}", "Oscr;"],
  ["\u{1D512}", "Ofr;"],
  ["\u{1D52C}", "ofr;"],
  ["\u{1D546}", "Oopf;"],
  ["\u{1D560}", "oopf;"],
  ["\u0162", "Tcedil;"],
  ["\u0163", "tcedil;"],
  ["\u0164", "Tcaron;"],
  ["\u0165", "tcaron;"],
  ["\u{1D4AF}", "Tscr;"],
  ["\u{1D4C9}", "tscr;"],
  ["\u{1D517}", "Tfr;"],
  ["\u{1D531}", "tfr;"],
  ["\u{1D54B}", "Topf;"],
  ["\u{1D565}", "topf;"],
  ["\u2122", "TRADE; trade;"],
  ["\u0174", "Wcirc;"],
  ["\u0175", "wcirc;"],
  ["\u{1D4B2}", "Wscr;"],
  ["\u{1D4CC}", "wscr;"],
  ["\u{1D51A}", "Wfr;"],
  ["\u{1D534}", "wfr;"],
  ["\u{1D54E}", "Wopf;"],
  ["\u{1D568}", "wopf;"],
  ["\u{1D4B3}", "Xscr;"],
  ["\u{1D4CD}", "xscr;"],
  ["\u{1D51B}", "Xfr;"],
  ["\u{1D535}", "xfr;"],
  ["\u{1D54F}", "Xopf;"],
  ["\u{1D569}", "xopf;"],
  ["\u0149", "napos;"],
  ["\u2010", "dash; hyphen;"],
  ["\u2013", "ndash;"],
  ["\u2014", "mdash;"],
  ["\u2015", "horbar;"],
];

/** Windows-1252 meanings HTML gives numeric references in 0x80–0x9F (the others there stay C1 controls). */
const WINDOWS_1252: Readonly<Record<number, number>> = {
  128: 0x20ac,
  130: 0x201a,
  131: 0x0192,
  132: 0x201e,
  133: 0x2026,
  134: 0x2020,
  135: 0x2021,
  136: 0x02c6,
  137: 0x2030,
  138: 0x0160,
  139: 0x2039,
  140: 0x0152,
  142: 0x017d,
  145: 0x2018,
  146: 0x2019,
  147: 0x201c,
  148: 0x201d,
  149: 0x2022,
  150: 0x2013,
  151: 0x2014,
  152: 0x02dc,
  153: 0x2122,
  154: 0x0161,
  155: 0x203a,
  156: 0x0153,
  158: 0x017e,
  159: 0x0178,
};

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

/** The named references of the table, with their decoded text (for tests). */
export function namedReferencesForTests(): ReadonlyMap<string, string> {
  return new Map(
    NAMED_REFERENCE_ROWS.flatMap(([decoded, names]) =>
      names.split(" ").map((name): [string, string] => [name, decoded]),
    ),
  );
}

/** What a numeric reference decodes to, as HTML defines it (out-of-range, surrogate and NUL give U+FFFD). */
function numericReferenceText(digits: string, radix: 10 | 16): string {
  const value = Number.parseInt(digits, radix);
  if (!(value > 0 && value <= 0x10ffff) || (value >= 0xd800 && value <= 0xdfff)) return "\uFFFD";
  return String.fromCodePoint(WINDOWS_1252[value] ?? value);
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
