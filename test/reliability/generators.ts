/**
 * fast-check generators for the reliability suites: registries whose entries differ in status, domain and
 * integrations (so entitlements matter), each carrying a unique secret word in its body (so a leak into the
 * rendered block can be seen), and queries aimed at the entries the caller may not see.
 */
import fc from "fast-check";
import type { KnowledgeEntryInput, KnowledgeRetrievalRequest } from "../../src/index.js";

/** A small vocabulary, so that terms are shared and scores tie; prototype names included. */
export const VOCABULARY = [
  "refund",
  "policy",
  "account",
  "billing",
  "export",
  "report",
  "flow",
  "step",
  "admin",
  "token",
  "__proto__",
  "constructor",
  "toString",
  "hasOwnProperty",
  "Café",
  "İstanbul",
  "ＡＢＣ",
];

export const ENTRY_ID_POOL = [
  "__proto__",
  "constructor",
  "toString",
  "valueOf",
  "billing.refund-policy",
  "billing.export",
  "admin.tokens",
  "admin.audit",
  "account.flow",
  "a",
  "b",
  "Z",
  "café",
  "x1",
  "x10",
  "x2",
  "report@v",
  'quote"id',
];

export const DOMAINS = ["d1", "d2", "d3", "D1"];
export const INTEGRATIONS = ["a", "B", "c"];
/** Integrations a caller may enable: case variants and one no entry uses. */
export const SCOPE_INTEGRATIONS = ["a", "A", "b", "C", "x"];

/** The secret word of the entry at `index`: one token, unique, found in no other entry or instruction. */
export function secretOf(index: number): string {
  return `zsecret${index}q`;
}

const word = fc.constantFrom(...VOCABULARY);
const words = (min: number, max: number) =>
  fc.array(word, { minLength: min, maxLength: max }).map((list) => list.join(" "));

function entryArbitrary(id: string, index: number): fc.Arbitrary<KnowledgeEntryInput> {
  return fc
    .record({
      id: fc.constant(id),
      title: words(1, 3),
      summary: words(1, 6),
      domain: fc.constantFrom(...DOMAINS),
      integrations: fc.subarray(INTEGRATIONS, { maxLength: 2 }),
      status: fc.constantFrom("active", "active", "active", "draft", "deprecated") as fc.Arbitrary<
        "active" | "draft" | "deprecated"
      >,
      body: fc
        .tuple(words(0, 12), words(0, 12))
        .map(([before, after]) => `${before} ${secretOf(index)} ${after}`),
      aliases: fc.array(words(1, 3), { maxLength: 2 }),
      keywords: fc.array(words(1, 2), { maxLength: 2 }),
      relatedEntryIds: fc.subarray([...ENTRY_ID_POOL, "missing.entry"], { maxLength: 3 }),
      parentEntryId: fc.option(fc.constantFrom(...ENTRY_ID_POOL), { nil: undefined }),
    })
    .map((entry) => {
      const result: KnowledgeEntryInput = { ...entry };
      if (entry.parentEntryId === undefined) delete result.parentEntryId;
      return result;
    });
}

/** 1-18 entries with distinct ids. */
export const entitlementRegistryArbitrary: fc.Arbitrary<KnowledgeEntryInput[]> = fc
  .uniqueArray(fc.constantFrom(...ENTRY_ID_POOL), { minLength: 1, maxLength: 18 })
  .chain((ids) => fc.tuple(...ids.map((id, index) => entryArbitrary(id, index))));

/** Entitlements of one caller: enabled integrations (any case) and the engine's blocked domains. */
export const scopeArbitrary = fc.subarray(SCOPE_INTEGRATIONS);
export const blockedDomainsArbitrary = fc.subarray(DOMAINS);

/**
 * A query aimed at the registry: free words, or the id, title, alias or secret word of some entry (often one the
 * caller may not see), with optional recent turns.
 */
export function queryFor(registry: readonly KnowledgeEntryInput[]): fc.Arbitrary<KnowledgeRetrievalRequest> {
  const target = fc.integer({ min: 0, max: registry.length - 1 });
  const aimed = target.chain((index) => {
    const entry = registry[index]!;
    const options = [entry.id, entry.title, secretOf(index), ...(entry.aliases ?? [])];
    return fc.tuple(words(0, 2), fc.constantFrom(...options), words(0, 2)).map((parts) => parts.join(" "));
  });
  return fc.record({
    query: fc.oneof({ weight: 2, arbitrary: words(1, 5) }, { weight: 3, arbitrary: aimed }),
    recentTurns: fc.array(
      fc.record({
        role: fc.constantFrom("user" as const, "assistant" as const),
        text: fc.oneof(words(0, 4), aimed),
      }),
      { maxLength: 2 },
    ),
    enabledIntegrations: scopeArbitrary,
  });
}
