/**
 * Deterministic synthetic registries and queries for the benchmark.
 *
 * Word frequencies follow Zipf's law over a vocabulary of pseudo-words, as in natural text: a few words (the
 * "the"/"of" of this language) occur in almost every body, most words are rare. Field sizes follow a typical
 * product knowledge base: title ~4 tokens, aliases ~3, keywords ~5, summary ~20, body ~200. Everything is drawn
 * from one seeded PRNG, so a given seed and size always give the same registry and queries.
 */
import { KNOWLEDGE_ENTRY_KINDS } from "../src/knowledge/defaults.js";
import type { KnowledgeEntryInput, KnowledgeEntryKind, KnowledgeStatus } from "../src/types/knowledge.js";
import type { BenchQuery } from "./workload.js";

/** mulberry32: a small, fast, well-distributed 32-bit PRNG. Returns floats in [0, 1). */
export function createRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let value = state;
    value = Math.imul(value ^ (value >>> 15), value | 1);
    value ^= value + Math.imul(value ^ (value >>> 7), value | 61);
    return ((value ^ (value >>> 14)) >>> 0) / 4294967296;
  };
}

const ONSETS = [
  "b",
  "c",
  "d",
  "f",
  "g",
  "h",
  "k",
  "l",
  "m",
  "n",
  "p",
  "r",
  "s",
  "t",
  "v",
  "w",
  "z",
  "br",
  "ch",
  "cl",
  "dr",
  "fl",
  "gr",
  "pl",
  "pr",
  "sh",
  "st",
  "tr",
  "th",
  "",
];
const VOWELS = ["a", "e", "i", "o", "u", "ai", "ea", "io", "ou", "y"];
const CODAS = ["", "", "", "n", "r", "s", "t", "l", "m", "x", "nd", "rk", "st"];

/** A vocabulary of distinct pseudo-words, most frequent first, with a Zipf sampler over it. */
export class ZipfVocabulary {
  readonly words: string[];
  private readonly cumulative: Float64Array;

  constructor(size: number, exponent: number, random: () => number) {
    const seen = new Set<string>();
    const words: string[] = [];
    while (words.length < size) {
      // Frequent words are short, as in natural language: the syllable count grows with the rank.
      const syllables = 1 + Math.min(3, Math.floor(Math.log10(words.length + 10) - 1 + random() * 1.5));
      let word = "";
      for (let index = 0; index < syllables; index++) {
        word += pick(ONSETS, random) + pick(VOWELS, random) + pick(CODAS, random);
      }
      if (word.length < 2 || seen.has(word)) continue;
      seen.add(word);
      words.push(word);
    }
    this.words = words;
    this.cumulative = new Float64Array(size);
    let total = 0;
    for (let rank = 0; rank < size; rank++) {
      total += 1 / (rank + 1) ** exponent;
      this.cumulative[rank] = total;
    }
    for (let rank = 0; rank < size; rank++) this.cumulative[rank]! /= total;
  }

  /** A word drawn by Zipf frequency, optionally skipping the `skipTop` most frequent (function-like) words. */
  sample(random: () => number, skipTop = 0): string {
    const floor = skipTop === 0 ? 0 : this.cumulative[skipTop - 1]!;
    const target = floor + random() * (1 - floor);
    let low = skipTop;
    let high = this.cumulative.length - 1;
    while (low < high) {
      const middle = (low + high) >>> 1;
      if (this.cumulative[middle]! < target) low = middle + 1;
      else high = middle;
    }
    return this.words[low]!;
  }

  phrase(random: () => number, count: number, skipTop = 0): string[] {
    const words: string[] = [];
    for (let index = 0; index < count; index++) words.push(this.sample(random, skipTop));
    return words;
  }
}

function pick<T>(items: readonly T[], random: () => number): T {
  return items[Math.floor(random() * items.length)]!;
}

function between(random: () => number, low: number, high: number): number {
  return low + Math.floor(random() * (high - low + 1));
}

function capitalize(word: string): string {
  return word.charAt(0).toUpperCase() + word.slice(1);
}

/** `enable` + capitalized words: a configuration key such as `enableDraiTrounFlow`. */
function camelKey(words: readonly string[], random: () => number): string {
  const prefix = pick(["enable", "allow", "max", "default", "use", "show"], random);
  return prefix + words.map(capitalize).join("");
}

/** Sentences of roughly `count` words with capitalized starts and full stops, now and then a config key. */
function prose(vocabulary: ZipfVocabulary, random: () => number, count: number, keyRate: number): string {
  const parts: string[] = [];
  let sentenceLength = 0;
  for (let index = 0; index < count; index++) {
    let word = vocabulary.sample(random);
    if (random() < keyRate) word = camelKey(vocabulary.phrase(random, 2, 200), random);
    if (sentenceLength === 0) word = capitalize(word);
    sentenceLength++;
    if (sentenceLength >= 8 && random() < 0.12) {
      word += random() < 0.9 ? "." : ":";
      sentenceLength = 0;
    } else if (random() < 0.04) word += ",";
    parts.push(word);
  }
  // Finish the last sentence before joining, so the text is one flat string as if read from a file.
  const last = parts.length - 1;
  if (last >= 0 && !parts[last]!.endsWith(".")) parts[last] = `${parts[last]!.replace(/[,:]$/, "")}.`;
  return parts.join(" ");
}

const KINDS: readonly KnowledgeEntryKind[] = KNOWLEDGE_ENTRY_KINDS;

/** Parameters of {@link generateSyntheticRegistry}. */
export type SyntheticOptions = {
  size: number;
  seed: number;
  /** Number of distinct words. Default 50,000. */
  vocabularySize?: number;
  /** Zipf exponent. Default 1.0 (natural-language text is close to 1). */
  exponent?: number;
  queryCount: number;
};

/** A generated registry with its queries and the scope settings the queries are run under. */
export type SyntheticWorkload = {
  entries: KnowledgeEntryInput[];
  queries: BenchQuery[];
  /** Queries from the same distribution, drawn separately, used only to warm up each implementation. */
  warmupQueries: BenchQuery[];
  blockedDomains: string[];
  integrations: string[];
};

/** Words of the title that the most frequent ranks are excluded from (titles carry content words). */
const CONTENT_SKIP = 100;

/** Builds a registry of `size` entries and `queryCount` queries, identical for identical options. */
export function generateSyntheticRegistry(options: SyntheticOptions): SyntheticWorkload {
  const random = createRandom(options.seed);
  const vocabulary = new ZipfVocabulary(options.vocabularySize ?? 50_000, options.exponent ?? 1.0, random);
  const domains = Array.from({ length: 40 }, (_, index) => `${vocabulary.words[1000 + index]}-${index}`);
  const integrations = Array.from({ length: 12 }, (_, index) => capitalize(vocabulary.words[2000 + index]!));
  const ids: string[] = [];
  const titles: string[][] = [];
  for (let index = 0; index < options.size; index++) {
    const titleWords = vocabulary.phrase(random, between(random, 2, 6), CONTENT_SKIP);
    titles.push(titleWords);
    const domain = domains[Math.min(domains.length - 1, Math.floor(random() ** 2 * domains.length))]!;
    ids.push(`${domain}.${titleWords.join("-")}-${index.toString(36)}`);
  }
  const entries: KnowledgeEntryInput[] = [];
  for (let index = 0; index < options.size; index++) {
    const id = ids[index]!;
    const domain = id.slice(0, id.indexOf("."));
    const aliasCount = random() < 0.15 ? 0 : between(random, 1, 2);
    const aliases: string[] = [];
    for (let alias = 0; alias < aliasCount; alias++) {
      aliases.push(
        random() < 0.3
          ? camelKey(vocabulary.phrase(random, between(random, 1, 3), CONTENT_SKIP), random)
          : vocabulary.phrase(random, between(random, 1, 2), CONTENT_SKIP).join(" "),
      );
    }
    const keywords: string[] = [];
    const keywordCount = between(random, 2, 4);
    for (let keyword = 0; keyword < keywordCount; keyword++) {
      keywords.push(vocabulary.phrase(random, between(random, 1, 2), CONTENT_SKIP).join(" "));
    }
    const integrationRoll = random();
    const entryIntegrations =
      integrationRoll < 0.7
        ? []
        : integrationRoll < 0.9
          ? [pick(integrations, random)]
          : [pick(integrations, random), pick(integrations, random)];
    const statusRoll = random();
    const status: KnowledgeStatus = statusRoll < 0.9 ? "active" : statusRoll < 0.96 ? "deprecated" : "draft";
    const relatedEntryIds: string[] = [];
    const relatedCount = between(random, 0, 3);
    for (let related = 0; related < relatedCount; related++) {
      relatedEntryIds.push(
        random() < 0.05 ? `missing.${index}-${related}` : ids[Math.floor(random() * ids.length)]!,
      );
    }
    const entry: KnowledgeEntryInput = {
      id,
      title: titles[index]!.map(capitalize).join(" "),
      summary: prose(vocabulary, random, between(random, 15, 25), 0),
      domain,
      integrations: entryIntegrations,
      kind: pick(KINDS, random),
      status,
      body: prose(vocabulary, random, between(random, 150, 250), 0.01),
      aliases,
      keywords,
      relatedEntryIds,
    };
    if (random() < 0.2) entry.parentEntryId = ids[Math.floor(random() * ids.length)]!;
    entries.push(entry);
  }
  const makeQueries = (count: number) =>
    Array.from({ length: count }, () => generateQuery(vocabulary, entries, integrations, random));
  return {
    entries,
    queries: makeQueries(options.queryCount),
    warmupQueries: makeQueries(Math.min(50, Math.max(10, Math.floor(options.queryCount / 5)))),
    blockedDomains: [domains[3]!, domains[7]!],
    integrations,
  };
}

/**
 * One query: half free text (2-8 Zipf words), a quarter an entry's title with words around it, a tenth an alias,
 * the rest words from one entry's body. Half the queries carry 1-4 recent turns; scopes enable 0-2 integrations.
 */
function generateQuery(
  vocabulary: ZipfVocabulary,
  entries: readonly KnowledgeEntryInput[],
  integrations: readonly string[],
  random: () => number,
): BenchQuery {
  const roll = random();
  const target = entries[Math.floor(random() * entries.length)]!;
  let words: string[];
  if (roll < 0.5) {
    words = vocabulary.phrase(random, between(random, 2, 8));
  } else if (roll < 0.75) {
    words = [
      ...vocabulary.phrase(random, between(random, 0, 2)),
      target.title,
      ...vocabulary.phrase(random, between(random, 0, 2)),
    ];
  } else if (roll < 0.85 && (target.aliases?.length ?? 0) > 0) {
    words = [...vocabulary.phrase(random, between(random, 1, 3)), pick(target.aliases!, random)];
  } else {
    const bodyWords = (target.body ?? "").split(" ");
    const start = Math.floor(random() * Math.max(1, bodyWords.length - 8));
    words = bodyWords.slice(start, start + between(random, 2, 8));
  }
  const recentTurns: BenchQuery["recentTurns"] = [];
  if (random() < 0.5) {
    const turnCount = between(random, 1, 4);
    for (let turn = 0; turn < turnCount; turn++) {
      recentTurns.push({
        role: turn % 2 === 0 ? "user" : "assistant",
        text: prose(vocabulary, random, between(random, 10, 60), 0),
      });
    }
  }
  const enabledIntegrations = Array.from({ length: between(random, 0, 2) }, () =>
    pick(integrations, random).toLowerCase(),
  );
  return { query: words.join(" "), recentTurns, enabledIntegrations };
}
