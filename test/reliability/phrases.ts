/**
 * Registries and queries that made phrase lookup quadratic in the query (issue 11, item 3), shared by
 * `phrases.test.ts` (a generous DoS bound), `npm run soak` (section (g), the figures) and `npm run fuzz`.
 *
 * The straightforward lookup walked, from every query token, up to the word count of the longest key starting
 * with that token, building and hashing each n-gram: with 1,024 query tokens and one long key, about 525,000
 * strings of up to 1,024 words. The trie stops where no key continues, so these cases cost what actually matches.
 */
import {
  type KnowledgeEntryInput,
  type KnowledgeSource,
  MAX_ALIASES_PER_ENTRY,
  MAX_FIELD_CHARS,
  MAX_QUERY_TOKENS,
} from "../../src/index.js";

/** One adversarial registry and the query that stresses its phrase keys. */
export type PhraseStressCase = {
  name: string;
  sources: KnowledgeSource[];
  query: string;
  /** Word count of the longest alias. */
  longestAliasWords: number;
};

function entry(id: string, aliases: string[]): KnowledgeEntryInput {
  return {
    id,
    title: `Entry ${id}`,
    summary: "Summary",
    body: "Body",
    domain: "d",
    integrations: [],
    aliases,
  };
}

/** `word` repeated `count` times, separated by single spaces. */
export function repeatWord(word: string, count: number): string {
  return `${word} `.repeat(count).trimEnd();
}

/**
 * The cases. `scale: "full"` puts the second case at the documented limits (4 entries × MAX_ALIASES_PER_ENTRY
 * aliases of MAX_FIELD_CHARS characters, about 40 MB of alias text); `"test"` keeps its shape with 100 aliases.
 */
export function phraseStressCases(scale: "test" | "full"): PhraseStressCase[] {
  const query = (word: string) => `${word} `.repeat(MAX_QUERY_TOKENS);
  // Issue 11: one alias of 5,699 characters, "the" 1,425 times; every n-gram of the query is a prefix of it.
  const theAlias = repeatWord("the", 1425);
  // Aliases of MAX_FIELD_CHARS characters: a run of "t0" of varying length (so the runs share prefixes to every
  // depth and branch all along), a marker word, then "t0" again up to the field limit.
  const entryCount = scale === "full" ? 4 : 1;
  const aliasCount = scale === "full" ? MAX_ALIASES_PER_ENTRY : 100;
  const limitEntries = Array.from({ length: entryCount }, (_, entryIndex) =>
    entry(
      `limits-${entryIndex}`,
      Array.from({ length: aliasCount }, (_, aliasIndex) => {
        const serial = entryIndex * aliasCount + aliasIndex;
        const run = 1 + ((serial * 37) % 1200);
        return `${repeatWord("t0", run)} x${serial} ${"t0 ".repeat(MAX_FIELD_CHARS)}`
          .slice(0, MAX_FIELD_CHARS)
          .trimEnd();
      }),
    ),
  );
  // Every n-gram of the query is a key: "t0" repeated 1 to 1,024 times (1,000 aliases on one entry, the rest on
  // another), so the lookup reports 1,024 phrases of up to 1,024 words.
  const everyLength = Array.from({ length: MAX_QUERY_TOKENS }, (_, index) => repeatWord("t0", index + 1));
  return [
    {
      name: 'one 5,699-character alias ("the" × 1,425), query "the " × 1,024',
      sources: [{ id: "the", entries: [entry("the-alias", [theAlias])] }],
      query: query("the"),
      longestAliasWords: 1425,
    },
    {
      name: `${entryCount} × ${aliasCount.toLocaleString("en-US")} aliases of ${MAX_FIELD_CHARS.toLocaleString("en-US")} characters sharing "t0" prefixes, query "t0 " × 1,024`,
      sources: [{ id: "limits", entries: limitEntries }],
      query: query("t0"),
      longestAliasWords: Math.ceil(MAX_FIELD_CHARS / 3),
    },
    {
      name: 'aliases "t0" × 1 … 1,024 (every n-gram of the query is a key), query "t0 " × 1,024',
      sources: [
        {
          id: "every",
          entries: [
            entry("every-a", everyLength.slice(0, MAX_ALIASES_PER_ENTRY)),
            entry("every-b", everyLength.slice(MAX_ALIASES_PER_ENTRY)),
          ],
        },
      ],
      query: query("t0"),
      longestAliasWords: MAX_QUERY_TOKENS,
    },
  ];
}
