/**
 * Stemmer candidates measured against the engine's Porter (1980) stemmer when choosing the English analyzer (see
 * `research/results/stemmers.md`): a light plural stemmer and Porter2. They are not used by the engine; they stay
 * here so the measurement can be repeated.
 *
 * @module
 */

const STEMMABLE = /^[a-z]+$/;

/**
 * Harman's (1991) "S" stemmer: only plural endings. `-ies` → `-y` (not after e or a), `-es` → `-e` (not after a, e
 * or o), `-s` → `` (not after u or s); the first applicable rule wins.
 */
export function sStem(word: string): string {
  if (word.length <= 3 || !STEMMABLE.test(word)) return word;
  if (word.endsWith("ies") && !word.endsWith("eies") && !word.endsWith("aies")) {
    return `${word.slice(0, -3)}y`;
  }
  if (word.endsWith("es") && !word.endsWith("aes") && !word.endsWith("ees") && !word.endsWith("oes")) {
    return word.slice(0, -1);
  }
  if (word.endsWith("s") && !word.endsWith("us") && !word.endsWith("ss")) return word.slice(0, -1);
  return word;
}

const EXCEPTIONS: Readonly<Record<string, string>> = {
  skis: "ski",
  skies: "sky",
  dying: "die",
  lying: "lie",
  tying: "tie",
  idly: "idl",
  gently: "gentl",
  ugly: "ugli",
  early: "earli",
  only: "onli",
  singly: "singl",
  sky: "sky",
  news: "news",
  howe: "howe",
  atlas: "atlas",
  cosmos: "cosmos",
  bias: "bias",
  andes: "andes",
};
const AFTER_STEP1A_INVARIANT = new Set([
  "inning",
  "outing",
  "canning",
  "herring",
  "earring",
  "proceed",
  "exceed",
  "succeed",
]);
const DOUBLES = new Set(["bb", "dd", "ff", "gg", "mm", "nn", "pp", "rr", "tt"]);
const LI_ENDINGS = new Set(["c", "d", "e", "g", "h", "k", "m", "n", "r", "t"]);

/** Porter2 vowels; a `Y` (consonant y, marked by the algorithm) is not one. */
function isVowel(letter: string | undefined): boolean {
  return (
    letter === "a" || letter === "e" || letter === "i" || letter === "o" || letter === "u" || letter === "y"
  );
}

/** Start of the region after the first non-vowel that follows a vowel, from `from`. */
function regionStart(word: string, from: number): number {
  for (let index = from + 1; index < word.length; index++) {
    if (!isVowel(word[index]) && isVowel(word[index - 1])) return index + 1;
  }
  return word.length;
}

/** Whether `word` ends in a short syllable. */
function endsInShortSyllable(word: string): boolean {
  const length = word.length;
  if (length === 2) return isVowel(word[0]) && !isVowel(word[1]);
  if (length < 3) return false;
  const last = word[length - 1]!;
  return (
    !isVowel(word[length - 3]) &&
    isVowel(word[length - 2]) &&
    !isVowel(last) &&
    last !== "w" &&
    last !== "x" &&
    last !== "Y"
  );
}

/** The longest suffix of `word` among `suffixes`, or undefined. */
function longestSuffix(word: string, suffixes: readonly string[]): string | undefined {
  let best: string | undefined;
  for (const suffix of suffixes) {
    if (word.endsWith(suffix) && (best === undefined || suffix.length > best.length)) best = suffix;
  }
  return best;
}

const STEP2: Readonly<Record<string, string>> = {
  tional: "tion",
  enci: "ence",
  anci: "ance",
  abli: "able",
  entli: "ent",
  izer: "ize",
  ization: "ize",
  ational: "ate",
  ation: "ate",
  ator: "ate",
  alism: "al",
  aliti: "al",
  alli: "al",
  fulness: "ful",
  ousli: "ous",
  ousness: "ous",
  iveness: "ive",
  iviti: "ive",
  biliti: "ble",
  bli: "ble",
  ogi: "og",
  fulli: "ful",
  lessli: "less",
  li: "",
};
const STEP2_SUFFIXES = Object.keys(STEP2);
const STEP3: Readonly<Record<string, string>> = {
  tional: "tion",
  ational: "ate",
  alize: "al",
  icate: "ic",
  iciti: "ic",
  ical: "ic",
  ful: "",
  ness: "",
  ative: "",
};
const STEP3_SUFFIXES = Object.keys(STEP3);
const STEP4_SUFFIXES = [
  "al",
  "ance",
  "ence",
  "er",
  "ic",
  "able",
  "ible",
  "ant",
  "ement",
  "ment",
  "ent",
  "ism",
  "ate",
  "iti",
  "ous",
  "ive",
  "ize",
  "ion",
];

/**
 * Porter2, the Snowball English stemmer (the classic definition, with the `gener`/`commun`/`arsen` R1 exceptions).
 * Input is one lowercase word without apostrophes; anything that is not `[a-z]+` is returned unchanged.
 */
export function porter2Stem(input: string): string {
  if (input.length <= 2 || !STEMMABLE.test(input)) return input;
  const exception = EXCEPTIONS[input];
  if (exception !== undefined) return exception;
  // Mark consonant y: at the start, or after a vowel.
  let word = "";
  for (let index = 0; index < input.length; index++) {
    const letter = input[index]!;
    word += letter === "y" && (index === 0 || isVowel(word[index - 1])) ? "Y" : letter;
  }
  let r1: number;
  if (word.startsWith("gener") || word.startsWith("arsen")) r1 = 5;
  else if (word.startsWith("commun")) r1 = 6;
  else r1 = regionStart(word, 0);
  const r2 = regionStart(word, r1);

  // Step 1a.
  const step1a = longestSuffix(word, ["sses", "ied", "ies", "s", "us", "ss"]);
  if (step1a === "sses") word = `${word.slice(0, -4)}ss`;
  else if (step1a === "ied" || step1a === "ies")
    word = word.length > 4 ? word.slice(0, -2) : word.slice(0, -1);
  else if (step1a === "s") {
    const before = word.slice(0, -2);
    if ([...before].some(isVowel)) word = word.slice(0, -1);
  }
  if (AFTER_STEP1A_INVARIANT.has(word)) return word;

  // Step 1b.
  const step1b = longestSuffix(word, ["eed", "eedly", "ed", "edly", "ing", "ingly"]);
  if (step1b === "eed" || step1b === "eedly") {
    if (word.length - step1b.length >= r1) word = `${word.slice(0, -step1b.length)}ee`;
  } else if (step1b !== undefined) {
    const stem = word.slice(0, -step1b.length);
    if ([...stem].some(isVowel)) {
      word = stem;
      if (word.endsWith("at") || word.endsWith("bl") || word.endsWith("iz")) word += "e";
      else if (DOUBLES.has(word.slice(-2))) word = word.slice(0, -1);
      else if (r1 >= word.length && endsInShortSyllable(word)) word += "e";
    }
  }

  // Step 1c.
  const last = word[word.length - 1];
  if ((last === "y" || last === "Y") && word.length > 2 && !isVowel(word[word.length - 2])) {
    word = `${word.slice(0, -1)}i`;
  }

  // Step 2.
  const step2 = longestSuffix(word, STEP2_SUFFIXES);
  if (step2 !== undefined && word.length - step2.length >= r1) {
    const stem = word.slice(0, -step2.length);
    if (step2 === "ogi") {
      if (stem.endsWith("l")) word = `${stem}og`;
    } else if (step2 === "li") {
      if (LI_ENDINGS.has(stem[stem.length - 1] ?? "")) word = stem;
    } else {
      word = stem + STEP2[step2]!;
    }
  }

  // Step 3.
  const step3 = longestSuffix(word, STEP3_SUFFIXES);
  if (step3 !== undefined && word.length - step3.length >= r1) {
    if (step3 === "ative") {
      if (word.length - step3.length >= r2) word = word.slice(0, -step3.length);
    } else {
      word = word.slice(0, -step3.length) + STEP3[step3]!;
    }
  }

  // Step 4.
  const step4 = longestSuffix(word, STEP4_SUFFIXES);
  if (step4 !== undefined && word.length - step4.length >= r2) {
    const stem = word.slice(0, -step4.length);
    if (step4 !== "ion" || stem.endsWith("s") || stem.endsWith("t")) word = stem;
  }

  // Step 5.
  if (word.endsWith("e")) {
    const stem = word.slice(0, -1);
    if (stem.length >= r2 || (stem.length >= r1 && !endsInShortSyllable(stem))) word = stem;
  } else if (word.endsWith("ll") && word.length - 1 >= r2) {
    word = word.slice(0, -1);
  }
  return word.replace(/Y/g, "y");
}
