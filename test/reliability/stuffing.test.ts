/**
 * Keyword stuffing (checklist row 40): an entry stuffed with the words people search for, against an honest entry. The gain from
 * stuffing is bounded: BM25 saturates (each field's contribution stays under weight × idf × (k1 + 1) per query
 * term, however often the term is repeated), the alias boost is added once however many aliases match, and the
 * caps refuse more than 1,000 aliases. A stuffed entry that is a draft, deprecated, in a blocked domain or bound to
 * an integration the caller lacks is never retrieved, not even through relation expansion.
 */
import fc from "fast-check";
import { afterAll, describe, expect, it } from "vitest";
import {
  clearKnowledgeIndexCache,
  DEFAULT_ALIAS_BOOST,
  DEFAULT_BM25_K1,
  DEFAULT_EXACT_BOOST,
  DEFAULT_FIELD_WEIGHTS,
  type KnowledgeEntryInput,
  KnowledgeGroundingEngine,
  MAX_ALIASES_PER_ENTRY,
  normalizeAndValidate,
  retrieve,
  tokenize,
} from "../../src/index.js";
import { propertyRuns, propertySeed } from "../property/seed.js";

afterAll(() => clearKnowledgeIndexCache());

const HONEST: KnowledgeEntryInput = {
  id: "billing.refund-policy",
  title: "Refund policy",
  summary: "Refunds are issued within 14 days of a purchase.",
  domain: "billing",
  integrations: [],
  body: "Customers can ask for a refund within 14 days. Refunds go back to the original payment method.",
  aliases: ["money back"],
  keywords: ["refund", "return"],
};
const OTHERS: KnowledgeEntryInput[] = [
  {
    id: "billing.invoices",
    title: "Invoices",
    summary: "Where invoices are listed.",
    domain: "billing",
    integrations: [],
  },
  {
    id: "account.close",
    title: "Closing an account",
    summary: "How to close an account.",
    domain: "account",
    integrations: [],
  },
  {
    id: "account.export",
    title: "Data export",
    summary: "Export account data as CSV.",
    domain: "account",
    integrations: [],
  },
];

function stuffed(
  id: string,
  words: readonly string[],
  repeat: number,
  extra: Partial<KnowledgeEntryInput> = {},
): KnowledgeEntryInput {
  const phrase = words.join(" ");
  return {
    id,
    title: `Special offer ${phrase}`,
    summary: `${phrase} `.repeat(Math.min(repeat, 200)),
    domain: "promo",
    integrations: [],
    body: `${phrase} `.repeat(repeat),
    aliases: Array.from({ length: Math.min(repeat, MAX_ALIASES_PER_ENTRY) }, (_, index) =>
      index === 0 ? phrase : `${phrase} ${index}`,
    ),
    keywords: Array.from({ length: Math.min(repeat, MAX_ALIASES_PER_ENTRY) }, () => phrase),
    ...extra,
  };
}

async function engineOver(entries: KnowledgeEntryInput[], blockedDomains: string[] = []) {
  const engine = new KnowledgeGroundingEngine({
    enabled: true,
    sources: [{ id: "kb", version: "1", entries }],
    blockedDomains,
    timeoutMs: 60_000,
  });
  await engine.ready();
  expect(engine.getStatus().lastError).toBeNull();
  return engine;
}

describe("keyword stuffing does not outrank an honest entry", () => {
  it("the lexical gain of stuffing is bounded by saturation, and the alias boost is added once", async () => {
    const query = "refund policy";
    const terms = tokenize(query);
    const entries = [HONEST, ...OTHERS, stuffed("promo.refund", terms, 1_000)];
    const engine = await engineOver(entries);
    const outcome = await engine.ground({ query });
    const selection = retrieve(
      engine.getSnapshot()!,
      { query, recentTurns: [], enabledIntegrations: [] },
      engine.getResolvedRetrieval(),
    );
    const spam = selection.candidates.find((candidate) => candidate.id === "promo.refund")!;
    const honest = selection.candidates.find((candidate) => candidate.id === HONEST.id)!;
    // Upper bound of any lexical score for these terms: every field saturated, with the largest possible idf.
    const N = entries.length;
    const maxIdf = Math.log(1 + (N - 1 + 0.5) / (1 + 0.5));
    const weightSum = Object.values(DEFAULT_FIELD_WEIGHTS).reduce((sum, weight) => sum + weight, 0);
    const bound = terms.length * weightSum * maxIdf * (DEFAULT_BM25_K1 + 1);
    expect(spam.lexical).toBeGreaterThan(0);
    expect(spam.lexical).toBeLessThan(bound);
    // The boosts: one alias boost, whatever the number of matching aliases (its title is no phrase of the query).
    expect(spam.score - spam.lexical).toBeCloseTo(DEFAULT_ALIAS_BOOST, 9);
    expect(honest.score - honest.lexical).toBeCloseTo(DEFAULT_EXACT_BOOST, 9);
    // Bounded is not prevented: in this five-entry registry the entry stuffed in all five fields, with an alias
    // equal to the query, outranks the honest title match (about 144 against 116). Entries are host-reviewed
    // content; what must hold is the bound above and that the honest entry stays selected.
    expect(outcome.metadata.selectedIds).toContain(HONEST.id);
    expect(spam.score - honest.score).toBeLessThan(bound + DEFAULT_ALIAS_BOOST - DEFAULT_EXACT_BOOST);
  });

  it("repeating a word more often stops paying: 1,000 repeats gain less than the saturation bound over one", async () => {
    const query = "refund";
    const once = await engineOver([HONEST, ...OTHERS, stuffed("promo.refund", ["refund"], 1)]);
    const many = await engineOver([HONEST, ...OTHERS, stuffed("promo.refund", ["refund"], 1_000)]);
    const request = { query, recentTurns: [], enabledIntegrations: [] };
    const lexicalOf = (engine: KnowledgeGroundingEngine) =>
      retrieve(engine.getSnapshot()!, request, engine.getResolvedRetrieval()).candidates.find(
        (candidate) => candidate.id === "promo.refund",
      )!.lexical;
    const gain = lexicalOf(many) / lexicalOf(once);
    // Each field's BM25 part is at most (k1 + 1) times its tf = 1 value at the same length; a longer field is
    // further discounted by length normalization, so a thousandfold repetition buys at most a factor k1 + 1.
    expect(gain).toBeLessThan(DEFAULT_BM25_K1 + 1);
  });

  it("more than the alias cap is refused at validation, naming the field", () => {
    const entry = {
      ...stuffed("promo.refund", ["refund"], 1),
      aliases: Array.from({ length: MAX_ALIASES_PER_ENTRY + 1 }, (_, index) => `refund ${index}`),
    };
    const { validation } = normalizeAndValidate([{ id: "kb", entries: [HONEST, entry] }], {
      manifestVersion: "1",
    });
    expect(validation.ok).toBe(false);
    expect(validation.issues).toContainEqual(
      expect.objectContaining({ code: "limit-exceeded", path: "sources[0].entries[1].aliases" }),
    );
  });

  it("a stuffed draft, deprecated, blocked or unentitled entry is never retrieved, not even as a relation", async () => {
    const seed = propertySeed("stuffed poisoned entries");
    const words = ["refund", "policy", "money", "back", "invoice", "export", "account", "close"];
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom("draft", "deprecated", "blocked", "unentitled"),
        fc.array(fc.constantFrom(...words), { minLength: 1, maxLength: 4 }),
        fc.array(fc.constantFrom(...words), { minLength: 1, maxLength: 4 }),
        fc.integer({ min: 1, max: 300 }),
        async (poison, stuffedWords, queryWords, repeat) => {
          const extra: Partial<KnowledgeEntryInput> =
            poison === "draft" || poison === "deprecated"
              ? { status: poison }
              : poison === "unentitled"
                ? { integrations: ["premium"] }
                : { domain: "promo" };
          const bad = stuffed("promo.poison", stuffedWords, repeat, extra);
          // The honest entries point at the poisoned one, so expansion would reach it if it skipped the filter.
          const honest = [HONEST, ...OTHERS].map((entry) => ({
            ...entry,
            relatedEntryIds: ["promo.poison"],
            parentEntryId: "promo.poison",
          }));
          const engine = await engineOver([...honest, bad], poison === "blocked" ? ["promo"] : []);
          for (const query of [queryWords.join(" "), stuffedWords.join(" "), "promo.poison", bad.title]) {
            const outcome = await engine.ground({ query, scope: { enabledIntegrations: ["basic"] } });
            expect(outcome.metadata.selectedIds).not.toContain("promo.poison");
            expect(outcome.metadata.expandedIds).not.toContain("promo.poison");
            expect(outcome.ephemeralContext?.content ?? "").not.toContain("promo.poison");
            expect(outcome.ephemeralContext?.content ?? "").not.toContain("Special offer");
          }
        },
      ),
      { seed, numRuns: propertyRuns(40) },
    );
  });
});
