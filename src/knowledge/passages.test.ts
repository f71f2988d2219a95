import { describe, expect, it } from "vitest";
import { MAX_PASSAGE_SCAN_CHARS } from "./defaults.js";
import {
  buildPassageIndex,
  clearPassageCache,
  PASSAGE_ELISION_MARKER,
  passageIndexFor,
  passageQueryTerms,
  scorePassages,
  segmentPassages,
  selectPassages,
} from "./passages.js";

const THREE_PARAGRAPHS = "Alpha beta.\n\nGamma delta gamma.\n\nAlpha gamma.";
const SECTIONS =
  "# Setup\n\nInstall the tool.\n\n## Keys\n\nCreate a key in settings.\n\nRotate the key every month.";

function passageTexts(text: string, passageChars: number): string[] {
  return segmentPassages(text, passageChars).passages.map((passage) =>
    text.slice(passage.start, passage.end),
  );
}

describe("segmentPassages", () => {
  it("keeps paragraphs apart when two do not fit in one passage", () => {
    // 11 + 2 + 18 = 31 > 20 characters, so each paragraph is a passage of its own.
    expect(passageTexts(THREE_PARAGRAPHS, 20)).toEqual(["Alpha beta.", "Gamma delta gamma.", "Alpha gamma."]);
  });

  it("packs consecutive paragraphs of one section while they fit", () => {
    expect(passageTexts(THREE_PARAGRAPHS, 31)).toEqual(["Alpha beta.\n\nGamma delta gamma.", "Alpha gamma."]);
    expect(passageTexts(THREE_PARAGRAPHS, 45)).toEqual([THREE_PARAGRAPHS]);
  });

  it("starts a passage at every heading and keeps the heading with its section", () => {
    const { passages } = segmentPassages(SECTIONS, 40);
    expect(passages.map((passage) => SECTIONS.slice(passage.start, passage.end))).toEqual([
      "# Setup\n\nInstall the tool.",
      "## Keys\n\nCreate a key in settings.",
      "Rotate the key every month.",
    ]);
    // The third passage belongs to the "## Keys" section (characters 28 to 35).
    expect(passages.map((passage) => [passage.headingStart, passage.headingEnd])).toEqual([
      [0, 7],
      [28, 35],
      [28, 35],
    ]);
    // Even when everything would fit in one passage, sections stay apart.
    expect(passageTexts(SECTIONS, 1000)).toEqual([
      "# Setup\n\nInstall the tool.",
      "## Keys\n\nCreate a key in settings.\n\nRotate the key every month.",
    ]);
  });

  it("keeps a fenced code block with blank lines and # lines in one block", () => {
    const text = "Intro.\n\n```sh\n# not a heading\n\nmake\n```\n\nAfter.";
    // "# not a heading" inside the fence starts no section, and its blank line does not end the block.
    expect(passageTexts(text, 31)).toEqual(["Intro.", "```sh\n# not a heading\n\nmake\n```", "After."]);
    expect(passageTexts(text, 100)).toEqual([text]);
  });

  it("cuts an over-long paragraph at sentence ends, else at spaces, never inside a surrogate pair", () => {
    expect(passageTexts("One two. Three four. Five six.", 12)).toEqual([
      "One two.",
      "Three four.",
      "Five six.",
    ]);
    expect(passageTexts("aaaa bbbb cccc dddd", 10)).toEqual(["aaaa bbbb", "cccc dddd"]);
    const pairs = "😀".repeat(5); // 10 UTF-16 units, no boundary at all
    const pieces = passageTexts(pairs, 3);
    expect(pieces.join("")).toBe(pairs);
    for (const piece of pieces) expect(piece.toWellFormed()).toBe(piece);
  });

  it("considers at most the given number of passages and characters", () => {
    const text = Array.from({ length: 10 }, (_, index) => `Paragraph ${index}.`).join("\n\n");
    const bounded = segmentPassages(text, 12, 4);
    expect(bounded.passages).toHaveLength(4);
    expect(bounded.complete).toBe(false);
    const scanned = segmentPassages(text, 12, 100, 30);
    expect(scanned.passages.map((passage) => text.slice(passage.start, passage.end))).toEqual([
      "Paragraph 0.",
      "Paragraph 1.",
      "Pa",
    ]);
    expect(scanned.complete).toBe(false);
    expect(segmentPassages(text, 12).complete).toBe(true);
  });

  it("gives no passage for an empty or blank body", () => {
    expect(segmentPassages("", 10).passages).toEqual([]);
    expect(segmentPassages(" \n\n\t\n", 10).passages).toEqual([]);
  });
});

describe("scorePassages (BM25 over one body's passages, k1 1.2, b 0.75)", () => {
  const index = buildPassageIndex(THREE_PARAGRAPHS, 20);

  it("indexes lengths and postings", () => {
    expect([...index.lengths]).toEqual([2, 3, 2]);
    expect(index.averageLength).toBeCloseTo(7 / 3, 12);
    expect(index.postings.get("gamma")).toEqual([1, 2, 2, 1]);
  });

  it("matches hand-computed scores", () => {
    // gamma: df 2 of N 3, idf = ln(1 + 1.5 / 2.5) = 0.470004.
    // passage 1: tf 2, length 3: 0.470004 · 2 · 2.2 / (2 + 1.2 · (0.25 + 0.75 · 3 / (7/3))) = 0.598186
    // passage 2: tf 1, length 2: 0.470004 · 2.2 / (1 + 1.2 · (0.25 + 0.75 · 2 / (7/3))) = 0.499176
    const gamma = scorePassages(index, ["gamma"]);
    expect([...gamma.keys()]).toEqual([1, 2]);
    expect(gamma.get(1)).toBeCloseTo(0.598186, 5);
    expect(gamma.get(2)).toBeCloseTo(0.499176, 5);
    // beta: df 1, idf = ln(1 + 2.5 / 1.5) = 0.980829; passage 0 = alpha 0.499176 + beta 1.041708.
    const alphaBeta = scorePassages(index, ["alpha", "beta", "beta"]);
    expect(alphaBeta.get(0)).toBeCloseTo(1.540885, 5);
    expect(alphaBeta.get(2)).toBeCloseTo(0.499176, 5);
    expect(scorePassages(index, ["missing"]).size).toBe(0);
  });

  it("credits a section's heading to its later passages at half weight", () => {
    const sections = buildPassageIndex(SECTIONS, 40);
    // Own lengths 4, 6, 5 (average 5); "keys": df 2 of 3, idf ln(1.6) = 0.470004.
    // passage 1 holds the heading: tf 1, 0.470004 · 2.2 / (1 + 1.2 · (0.25 + 0.75 · 6/5)) = 0.434458
    // passage 2 gets it at weight 0.5: 0.470004 · 0.5 · 2.2 / (0.5 + 1.2 · (0.25 + 0.75 · 5/5)) = 0.304120
    expect([...sections.lengths]).toEqual([4, 6, 5]);
    const keys = scorePassages(sections, ["keys"]);
    expect([...keys.keys()]).toEqual([1, 2]);
    expect(keys.get(1)).toBeCloseTo(0.434458, 5);
    expect(keys.get(2)).toBeCloseTo(0.30412, 5);
  });

  it("uses the configured analyzer for passages and query alike", () => {
    const english = buildPassageIndex("Rotating keys.\n\nOther text.", 15, "english");
    const terms = passageQueryTerms(["how", "to", "rotate", "a", "key"], "english");
    expect(terms).toEqual(["how", "rotat", "kei"]);
    expect([...scorePassages(english, terms).keys()]).toEqual([0]);
    const plain = buildPassageIndex("Rotating keys.\n\nOther text.", 15, "none");
    expect(scorePassages(plain, passageQueryTerms(["rotate", "key"], "none")).size).toBe(0);
  });
});

describe("selectPassages", () => {
  const index = buildPassageIndex(THREE_PARAGRAPHS, 20);

  it("keeps the best passage, with elision markers where text was left out", () => {
    expect(selectPassages(index, ["gamma"], 1, 100)).toEqual({
      text: `${PASSAGE_ELISION_MARKER}\nGamma delta gamma.\n${PASSAGE_ELISION_MARKER}`,
      passages: [1],
    });
  });

  it("merges adjacent passages verbatim and marks only real gaps", () => {
    // Passages 1 and 2 are separated by a blank line only: one verbatim range, no marker at the end.
    expect(selectPassages(index, ["gamma"], 2, 100)).toEqual({
      text: `${PASSAGE_ELISION_MARKER}\nGamma delta gamma.\n\nAlpha gamma.`,
      passages: [1, 2],
    });
    // Passages 0 and 2 (alpha 0.499, alpha+beta 1.541) in document order, one marker between.
    expect(selectPassages(index, ["alpha", "beta"], 2, 100)).toEqual({
      text: `Alpha beta.\n${PASSAGE_ELISION_MARKER}\nAlpha gamma.`,
      passages: [0, 2],
    });
  });

  it("stays within the character budget, skipping passages that do not fit", () => {
    // 26 characters with passage 1 alone; 36 with passage 2 added.
    expect(selectPassages(index, ["gamma"], 2, 35)?.passages).toEqual([1]);
    expect(selectPassages(index, ["gamma"], 2, 26)?.text).toHaveLength(26);
    // Passage 1 (26 rendered) does not fit in 25, passage 2 ("[…]\nAlpha gamma." = 16) does.
    expect(selectPassages(index, ["gamma"], 2, 25)).toEqual({
      text: `${PASSAGE_ELISION_MARKER}\nAlpha gamma.`,
      passages: [2],
    });
    expect(selectPassages(index, ["gamma"], 2, 15)).toBeNull();
    expect(selectPassages(index, ["gamma"], 0, 100)).toBeNull();
  });

  it("takes the leading passages when no passage holds a query term", () => {
    expect(selectPassages(index, ["zeta"], 1, 100)).toEqual({
      text: `Alpha beta.\n${PASSAGE_ELISION_MARKER}`,
      passages: [0],
    });
  });

  it("brings the section heading along, marked off from the section's skipped text", () => {
    const sections = buildPassageIndex(SECTIONS, 40);
    expect(selectPassages(sections, ["rotate"], 3, 1000)).toEqual({
      text: `${PASSAGE_ELISION_MARKER}\n## Keys\n${PASSAGE_ELISION_MARKER}\nRotate the key every month.`,
      passages: [2],
    });
    // With the section's first passage chosen too, the heading is not repeated and the section is contiguous.
    expect(selectPassages(sections, ["rotate", "create"], 3, 1000)?.text).toBe(
      `${PASSAGE_ELISION_MARKER}\n## Keys\n\nCreate a key in settings.\n\nRotate the key every month.`,
    );
  });
});

describe("passageIndexFor (cache)", () => {
  it("reuses the index of a frozen owner and rebuilds for other settings", () => {
    clearPassageCache();
    const owner = Object.freeze({});
    let prepared = 0;
    const prepare = (text: string) => {
      prepared++;
      return text;
    };
    const first = passageIndexFor(owner, THREE_PARAGRAPHS, 20, "none", prepare);
    expect(passageIndexFor(owner, THREE_PARAGRAPHS, 20, "none", prepare)).toBe(first);
    expect(prepared).toBe(1);
    expect(passageIndexFor(owner, THREE_PARAGRAPHS, 40, "none", prepare)).not.toBe(first);
    expect(passageIndexFor(owner, THREE_PARAGRAPHS, 20, "english", prepare)).not.toBe(first);
    expect(prepared).toBe(3);
    const unfrozen = {};
    passageIndexFor(unfrozen, THREE_PARAGRAPHS, 20, "none", prepare);
    passageIndexFor(unfrozen, THREE_PARAGRAPHS, 20, "none", prepare);
    expect(prepared).toBe(5);
  });

  it("scans only the start of a huge body and always marks its end as elided", () => {
    clearPassageCache();
    const body = `Needle here.\n\n${"filler words here. ".repeat(70_000)}`;
    expect(body.length).toBeGreaterThan(MAX_PASSAGE_SCAN_CHARS);
    const index = passageIndexFor(Object.freeze({}), body, 800, "none", (text) => text);
    expect(index.text.length).toBe(MAX_PASSAGE_SCAN_CHARS);
    expect(index.complete).toBe(false);
    expect(selectPassages(index, ["needle"], 1, 10_000)?.text).toMatch(/^Needle here\.[\s\S]*\n\[…\]$/);
  });
});
