/**
 * Cutting an entry body into passages: Markdown sections (a heading starts one), or paragraphs packed up to a
 * size, with oversized blocks cut at line, sentence or word boundaries (see `passages.ts` for their use).
 */
import { isHighSurrogate, isSentenceEnd } from "./characters.js";
import { MAX_PASSAGE_SCAN_CHARS, MAX_PASSAGES_CONSIDERED } from "./defaults.js";

/** One passage: a `[start, end)` range of the body text, and the heading line of its section. */
export type BodyPassage = {
  start: number;
  end: number;
  /** Range of the heading line of the passage's section, or -1 when the section has no heading. */
  headingStart: number;
  headingEnd: number;
};

const HEADING_LINE = /^ {0,3}#{1,6}(?:[ \t]|$)/;
const FENCE_LINE = /^ {0,3}(?:`{3,}|~{3,})/;
const BLANK_LINE = /^[ \t\r\f\v]*$/;
/** One whitespace character (what trimming and the excerpt's whitespace checks skip). */
export const WHITESPACE = /\s/;

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
    if (isSentenceEnd(code) && WHITESPACE.test(text[index]!)) return index;
  }
  for (let index = limit - 1; index > floor; index--) if (WHITESPACE.test(text[index]!)) return index;
  const code = text.charCodeAt(limit - 1);
  return isHighSurrogate(code) && limit - 1 > from ? limit - 1 : limit;
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
