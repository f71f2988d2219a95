/**
 * Optional analyzers for BM25 tokens. The default (`"none"`) leaves tokens as the tokenizer produced them, as
 * NeuroLink does. Phrase matching (ids, titles, aliases) never goes through an analyzer.
 *
 * `"english"` removes {@link ENGLISH_STOP_WORDS} and stems the rest with {@link porterStem}, the Porter (1980)
 * stemmer as in Martin Porter's reference implementation, which is also what Lucene's English analyzer (and so
 * Pyserini/Anserini's published BM25 baselines) uses. The stemmer was chosen by measurement against a light plural
 * stemmer and Porter2 (Snowball English); see `research/results/stemmers.md`.
 *
 * `"english-extended"` is the same with {@link ENGLISH_EXTENDED_STOP_WORDS}: also the words of how a question is
 * asked ("how do I", "what can we", "should my") rather than what it is about. Chosen by measurement for the
 * recommended preset (`research/results/recommended-preset.md`).
 */
import type { KnowledgeAnalyzerName } from "../types/knowledge.js";
import { describeChoices, KNOWLEDGE_ANALYZER_NAMES } from "./defaults.js";

/** Maps tokens to analyzed tokens (may drop some). */
export type TokenAnalyzer = (tokens: readonly string[]) => string[];

/**
 * English stop words: Lucene's `EnglishAnalyzer.ENGLISH_STOP_WORDS_SET` (33 words, also Elasticsearch's `_english_`
 * default), plus `s`, the fragment our tokenizer leaves from a possessive (`patient's` → `patient s`), which
 * Lucene's possessive filter removes before stemming. Kept small on purpose: negations such as `no` and `not` are
 * in the list (as in Lucene), pronouns and question words are not.
 */
export const ENGLISH_STOP_WORDS: ReadonlySet<string> = new Set([
  "a",
  "an",
  "and",
  "are",
  "as",
  "at",
  "be",
  "but",
  "by",
  "for",
  "if",
  "in",
  "into",
  "is",
  "it",
  "no",
  "not",
  "of",
  "on",
  "or",
  "s",
  "such",
  "that",
  "the",
  "their",
  "then",
  "there",
  "these",
  "they",
  "this",
  "to",
  "was",
  "will",
  "with",
]);

/**
 * {@link ENGLISH_STOP_WORDS} plus the function words of questions: personal and possessive pronouns, question and
 * relative words, auxiliary and modal verbs, common determiners and quantifiers, common prepositions and
 * conjunctions, and the fragments the tokenizer leaves from contractions (`don't` → `don t`, `I'll` → `i ll`).
 * Particles that carry meaning in product questions (`up`, `down`, `out`, `off`, `over`, `under`: "sign up",
 * "log out", "turn off") are kept, as are negations' meaning carriers beyond Lucene's (`never`, `without`).
 */
export const ENGLISH_EXTENDED_STOP_WORDS: ReadonlySet<string> = new Set([
  ...ENGLISH_STOP_WORDS,
  ...[
    // Pronouns (it, they, their are in Lucene's list).
    "i me my myself we us our ours ourselves you your yours yourself yourselves he him his himself she her hers",
    "herself its itself them theirs themselves",
    // Question and relative words; the demonstrative missing from Lucene's list.
    "what which who whom whose when where why how those",
    // Auxiliary and modal verbs (is, are, was, be, will are in Lucene's list).
    "am were been being have has had having do does did doing can could would should shall may might must",
    // Determiners, quantifiers and degree words.
    "all any both each few more most other some own same so than too very just only also",
    // Prepositions and conjunctions.
    "about against between through during before after above below from until while because again further",
    "once here nor",
    // Contraction fragments.
    "t d ll m re ve",
  ].flatMap((words) => words.split(" ")),
]);

/** Only plain lowercase ASCII words are stemmed; numbers, mixed tokens and other scripts pass through unchanged. */
const STEMMABLE = /^[a-z]+$/;

/**
 * The Porter (1980) stemmer, following Martin Porter's reference C implementation, including its two documented
 * departures from the paper (`-bli` → `-ble` instead of `-abli` → `-able`, and `-logi` → `-log`) and leaving words
 * of one or two letters alone. Input is one lowercase word; anything that is not `[a-z]+` is returned unchanged.
 *
 * Examples: `caresses` → `caress`, `ponies` → `poni`, `relational` → `relat`, `hopping` → `hop`, `generalizations`
 * → `gener`.
 */
export function porterStem(word: string): string {
  if (word.length <= 2 || !STEMMABLE.test(word)) return word;
  const b = word.split("");
  // k: index of the last letter of the current word; j: end of the stem before a matched suffix.
  let k = b.length - 1;
  let j = 0;

  const isConsonant = (index: number): boolean => {
    switch (b[index]) {
      case "a":
      case "e":
      case "i":
      case "o":
      case "u":
        return false;
      case "y":
        return index === 0 ? true : !isConsonant(index - 1);
      default:
        return true;
    }
  };
  /** Number of vowel-consonant sequences in b[0..j]. */
  const measure = (): number => {
    let count = 0;
    let index = 0;
    for (;;) {
      if (index > j) return count;
      if (!isConsonant(index)) break;
      index++;
    }
    index++;
    for (;;) {
      for (;;) {
        if (index > j) return count;
        if (isConsonant(index)) break;
        index++;
      }
      index++;
      count++;
      for (;;) {
        if (index > j) return count;
        if (!isConsonant(index)) break;
        index++;
      }
      index++;
    }
  };
  const vowelInStem = (): boolean => {
    for (let index = 0; index <= j; index++) if (!isConsonant(index)) return true;
    return false;
  };
  const doubleConsonant = (index: number): boolean =>
    index >= 1 && b[index] === b[index - 1] && isConsonant(index);
  /** consonant-vowel-consonant ending at `index`, the last consonant not w, x or y. */
  const cvc = (index: number): boolean => {
    if (index < 2 || !isConsonant(index) || isConsonant(index - 1) || !isConsonant(index - 2)) return false;
    const letter = b[index];
    return letter !== "w" && letter !== "x" && letter !== "y";
  };
  const ends = (suffix: string): boolean => {
    const length = suffix.length;
    if (length > k + 1) return false;
    for (let index = 0; index < length; index++) {
      if (b[k - length + 1 + index] !== suffix[index]) return false;
    }
    j = k - length;
    return true;
  };
  const setTo = (replacement: string): void => {
    for (let index = 0; index < replacement.length; index++) b[j + 1 + index] = replacement[index]!;
    k = j + replacement.length;
  };
  const replaceIfMeasured = (replacement: string): void => {
    if (measure() > 0) setTo(replacement);
  };

  // Step 1ab: plurals and -ed / -ing.
  if (b[k] === "s") {
    if (ends("sses")) k -= 2;
    else if (ends("ies")) setTo("i");
    else if (b[k - 1] !== "s") k--;
  }
  if (ends("eed")) {
    if (measure() > 0) k--;
  } else if ((ends("ed") || ends("ing")) && vowelInStem()) {
    k = j;
    if (ends("at")) setTo("ate");
    else if (ends("bl")) setTo("ble");
    else if (ends("iz")) setTo("ize");
    else if (doubleConsonant(k)) {
      k--;
      const letter = b[k];
      if (letter === "l" || letter === "s" || letter === "z") k++;
    } else {
      j = k;
      if (measure() === 1 && cvc(k)) setTo("e");
    }
  }
  // Step 1c: terminal y → i when there is another vowel in the stem.
  if (ends("y") && vowelInStem()) b[k] = "i";
  // Step 2: double suffixes to single ones.
  if (k >= 1) {
    const rules = STEP2[b[k - 1]!];
    if (rules) {
      for (const [suffix, replacement] of rules) {
        if (ends(suffix)) {
          replaceIfMeasured(replacement);
          break;
        }
      }
    }
  }
  // Step 3: -ic-, -full, -ness, etc.
  {
    const rules = STEP3[b[k]!];
    if (rules) {
      for (const [suffix, replacement] of rules) {
        if (ends(suffix)) {
          replaceIfMeasured(replacement);
          break;
        }
      }
    }
  }
  // Step 4: remove -ant, -ence, etc. in context <c>vcvc<v>.
  if (k >= 1) {
    const suffixes = STEP4[b[k - 1]!];
    let matched = false;
    if (suffixes) {
      for (const suffix of suffixes) {
        if (suffix === "ion") {
          if (ends("ion") && j >= 0 && (b[j] === "s" || b[j] === "t")) {
            matched = true;
            break;
          }
        } else if (ends(suffix)) {
          matched = true;
          break;
        }
      }
    }
    if (matched && measure() > 1) k = j;
  }
  // Step 5: remove a final -e, and -ll → -l, when the measure allows.
  j = k;
  if (b[k] === "e") {
    const m = measure();
    if (m > 1 || (m === 1 && !cvc(k - 1))) k--;
  }
  if (b[k] === "l" && doubleConsonant(k) && measure() > 1) k--;
  return b.slice(0, k + 1).join("");
}

type Rules = Readonly<Record<string, readonly (readonly [string, string])[]>>;

/** Step 2 rules keyed by the penultimate letter, in the reference implementation's order. */
const STEP2: Rules = {
  a: [
    ["ational", "ate"],
    ["tional", "tion"],
  ],
  c: [
    ["enci", "ence"],
    ["anci", "ance"],
  ],
  e: [["izer", "ize"]],
  l: [
    ["bli", "ble"],
    ["alli", "al"],
    ["entli", "ent"],
    ["eli", "e"],
    ["ousli", "ous"],
  ],
  o: [
    ["ization", "ize"],
    ["ation", "ate"],
    ["ator", "ate"],
  ],
  s: [
    ["alism", "al"],
    ["iveness", "ive"],
    ["fulness", "ful"],
    ["ousness", "ous"],
  ],
  t: [
    ["aliti", "al"],
    ["iviti", "ive"],
    ["biliti", "ble"],
  ],
  g: [["logi", "log"]],
};

/** Step 3 rules keyed by the last letter. */
const STEP3: Rules = {
  e: [
    ["icate", "ic"],
    ["ative", ""],
    ["alize", "al"],
  ],
  i: [["iciti", "ic"]],
  l: [
    ["ical", "ic"],
    ["ful", ""],
  ],
  s: [["ness", ""]],
};

/** Step 4 suffixes keyed by the penultimate letter (`ion` only after s or t). */
const STEP4: Readonly<Record<string, readonly string[]>> = {
  a: ["al"],
  c: ["ance", "ence"],
  e: ["er"],
  i: ["ic"],
  l: ["able", "ible"],
  n: ["ant", "ement", "ment", "ent"],
  o: ["ion", "ou"],
  s: ["ism"],
  t: ["ate", "iti"],
  u: ["ous"],
  v: ["ive"],
  z: ["ize"],
};

/** A bounded memo: corpora repeat words constantly, and stemming is the analyzer's only real cost. */
function memoize(stem: (word: string) => string, limit = 200_000): (word: string) => string {
  let cache = new Map<string, string>();
  return (word) => {
    let stemmed = cache.get(word);
    if (stemmed === undefined) {
      stemmed = stem(word);
      if (cache.size >= limit) cache = new Map();
      cache.set(word, stemmed);
    }
    return stemmed;
  };
}

/** Options of {@link createEnglishAnalyzer}. */
export type EnglishAnalyzerOptions = {
  /** Maps one token to its stem. Default {@link porterStem}. */
  stem?: (word: string) => string;
  /** Tokens removed before stemming. Default {@link ENGLISH_STOP_WORDS}. */
  stopWords?: ReadonlySet<string>;
};

/** Builds an English analyzer: drop stop words, stem the rest (memoized). */
export function createEnglishAnalyzer(options: EnglishAnalyzerOptions = {}): TokenAnalyzer {
  const stem = memoize(options.stem ?? porterStem);
  const stopWords = options.stopWords ?? ENGLISH_STOP_WORDS;
  return (tokens) => {
    const analyzed: string[] = [];
    for (const token of tokens) {
      if (stopWords.has(token)) continue;
      analyzed.push(stem(token));
    }
    return analyzed;
  };
}

let english: TokenAnalyzer | null = null;
let englishExtended: TokenAnalyzer | null = null;

/** The analyzer for a name, or null for `"none"`. */
export function getAnalyzer(name: KnowledgeAnalyzerName): TokenAnalyzer | null {
  if (name === "none") return null;
  if (name === "english") {
    english ??= createEnglishAnalyzer();
    return english;
  }
  if (name === "english-extended") {
    englishExtended ??= createEnglishAnalyzer({ stopWords: ENGLISH_EXTENDED_STOP_WORDS });
    return englishExtended;
  }
  throw new RangeError(
    `unknown analyzer ${JSON.stringify(name)}; expected ${describeChoices(KNOWLEDGE_ANALYZER_NAMES)}`,
  );
}
