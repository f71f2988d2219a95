/**
 * Independent models of the readers a context block may pass through before (or inside) the model: as is, NFKC,
 * NFKD with combining marks removed, HTML-decoded, and both in either order. The tests count the block's tags and
 * citation markers in every one of these views; a forged tag or marker has to be invisible in all of them.
 *
 * Written apart from `src/knowledge/readerView.ts` (which folds per code point and maps back to the original):
 * here every view is a whole-string transformation, and the counting is done with its own, looser patterns.
 */
import { type assembleKnowledgeContext, buildOpening, parseKnowledgeCitation } from "../../src/index.js";
import { namedReferencesForTests } from "../../src/knowledge/readerView.js";

const NAMED = namedReferencesForTests();
const LONGEST_NAME = Math.max(...[...NAMED.keys()].map((name) => name.length));
// HTML maps numeric references in 0x80-0x9F through Windows-1252; only the ones a tag or marker can use matter.
const C1_AS_WINDOWS_1252: Record<number, string> = {
  133: "\u2026",
  139: "\u2039",
  150: "\u2013",
  151: "\u2014",
  152: "\u02DC",
  153: "\u2122",
};

/** Decodes HTML character references as a browser does in text (numeric ones, and named ones of the table). */
export function htmlDecode(text: string): string {
  let result = "";
  for (let index = 0; index < text.length; ) {
    if (text[index] !== "&") {
      result += text[index];
      index++;
      continue;
    }
    const numeric = /^&#(?:[xX]([0-9a-fA-F]+)|([0-9]+));?/.exec(text.slice(index, index + 40));
    if (numeric) {
      const value = numeric[1] !== undefined ? Number.parseInt(numeric[1], 16) : Number(numeric[2]);
      const valid = value > 0 && value <= 0x10ffff && !(value >= 0xd800 && value <= 0xdfff);
      result += C1_AS_WINDOWS_1252[value] ?? (valid ? String.fromCodePoint(value) : "\uFFFD");
      index += numeric[0].length;
      continue;
    }
    let matched = false;
    for (let length = Math.min(LONGEST_NAME, text.length - index - 1); length >= 2; length--) {
      const name = text.slice(index + 1, index + 1 + length);
      const decoded = NAMED.get(name);
      if (decoded !== undefined) {
        result += decoded;
        index += 1 + length;
        matched = true;
        break;
      }
    }
    if (!matched) {
      result += "&";
      index++;
    }
  }
  return result;
}

/**
 * The views of a block that the tests check, by name: as is, NFKC, HTML-decoded, and both in either order.
 * {@link countTags} and {@link countMarkers} then read each view leniently.
 */
export function readerViews(text: string): Record<string, string> {
  return {
    raw: text,
    nfkc: text.normalize("NFKC"),
    decoded: htmlDecode(text),
    decodedThenNfkc: htmlDecode(text).normalize("NFKC"),
    nfkcThenDecoded: htmlDecode(text.normalize("NFKC")),
  };
}

/**
 * A view read the way a lenient reader reads it: compatibility forms and accents folded, lowercase, with no
 * whitespace, control characters, invisible format characters or combining marks.
 */
function squeeze(view: string): string {
  return view
    .normalize("NFKD")
    .replace(/[\p{Cf}\p{M}\p{Cc}\s]/gu, "")
    .toLowerCase();
}

/** Opening and closing `knowledge_context` tags in one view, spelled with any separator between the words. */
export function countTags(view: string): { open: number; close: number } {
  const squeezed = squeeze(view);
  return {
    open: squeezed.match(/<knowledge[_\p{Pd}.]*context/gu)?.length ?? 0,
    close: squeezed.match(/<[/\\]+knowledge[_\p{Pd}.]*context/gu)?.length ?? 0,
  };
}

/** `[KB:` citation openers in one view, in any case or spacing. */
export function countMarkers(view: string): number {
  return squeeze(view).match(/\[kb:/g)?.length ?? 0;
}

/** Tag counts in every view of a block that are not exactly one opening and one closing tag. */
export function tagCountProblems(block: string): string[] {
  const problems: string[] = [];
  for (const [name, view] of Object.entries(readerViews(block))) {
    const { open, close } = countTags(view);
    if (open !== 1 || close !== 1) problems.push(`${name}: ${open} open, ${close} close`);
  }
  return problems;
}

/**
 * Every code point whose NFKC form differs from it and contains one of `characters` (case-insensitively for
 * letters), from the Unicode data of the running Node: the compatibility forms a check has to know about.
 */
export function compatibilityForms(characters: string): Map<string, string[]> {
  const wanted = new Set([...characters].flatMap((character) => [character, character.toUpperCase()]));
  const forms = new Map<string, string[]>([...characters].map((character) => [character, []]));
  for (let code = 0; code <= 0x10ffff; code++) {
    if (code >= 0xd800 && code <= 0xdfff) continue;
    const character = String.fromCodePoint(code);
    const normalized = character.normalize("NFKC");
    if (normalized === character) continue;
    for (const base of [...normalized]) {
      if (!wanted.has(base)) continue;
      const list = forms.get(base.toLowerCase()) ?? forms.get(base);
      if (list && !list.includes(character)) list.push(character);
    }
  }
  return forms;
}

/** Every character some reader ends a line at (Unicode BK/CR/LF/NL classes, and Python's splitlines). */
export const LINE_BREAKS = [
  "\n",
  "\r",
  "\r\n",
  "\v",
  "\f",
  "\u001C",
  "\u001D",
  "\u001E",
  "\u0085",
  "\u2028",
  "\u2029",
];
// biome-ignore lint/suspicious/noControlCharactersInRegex: the control characters that end lines are the point.
export const LINE_SPLIT = /\r\n|[\n\r\v\f\u001C-\u001E\u0085\u2028\u2029]/;

/** Lines of the block after the opening (where entries are), split at every kind of line break. */
export function entryLines(block: string, includeCitations: boolean): string[] {
  return block.slice(buildOpening(includeCitations).length).split(LINE_SPLIT);
}

/**
 * What issue 11 asks of a block, checked on one: in every reader view the `[KB:` openers after the opening are
 * exactly one per citation (none when markers are off); the raw marker lines parse back (parseKnowledgeCitation)
 * to the citations in order; there is exactly one `Title:`, `Kind:` and `Summary:` line per included entry (for
 * blocks whose bodies hold no such line); and every view has one opening and one closing tag.
 */
export function blockProblems(
  result: ReturnType<typeof assembleKnowledgeContext>,
  includeCitations: boolean,
): string[] {
  const block = result.assembledContext;
  if (block === "") return result.citations.length === 0 ? [] : ["citations without a block"];
  const problems: string[] = [];
  const openingMarkers = countMarkers(buildOpening(includeCitations));
  const expected = includeCitations ? result.citations.length : 0;
  for (const [name, view] of Object.entries(readerViews(block))) {
    const found = countMarkers(view) - openingMarkers;
    if (found !== expected) problems.push(`${name}: ${found} markers for ${expected} included entries`);
  }
  const lines = entryLines(block, includeCitations);
  const markerLines = lines.filter((line) => line.startsWith("[KB:"));
  const parsed = markerLines.map(parseKnowledgeCitation);
  const cited = includeCitations ? result.citations : [];
  if (JSON.stringify(parsed) !== JSON.stringify(cited)) {
    problems.push(
      `marker lines ${JSON.stringify(markerLines)} parse to ${JSON.stringify(parsed)}, not ${JSON.stringify(cited)}`,
    );
  }
  for (const header of ["Title: ", "Kind: ", "Summary: "]) {
    const count = lines.filter((line) => line.startsWith(header)).length;
    if (count !== result.citations.length) {
      problems.push(`${count} "${header}" lines for ${result.citations.length} entries`);
    }
  }
  return [...problems, ...tagCountProblems(block)];
}
