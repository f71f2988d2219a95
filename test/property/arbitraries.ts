/**
 * fast-check generators of registries, queries and scopes that exercise the awkward cases: prototype-named ids
 * and tokens, Unicode that folds (fullwidth, ligatures, diacritics, dotted capital I), camelCase identifiers,
 * empty fields, shared titles and aliases, relations to missing or unauthorized entries.
 */
import fc from "fast-check";
import type {
  KnowledgeEntryInput,
  KnowledgeResolvedRetrieval,
  KnowledgeRetrievalRequest,
} from "../../src/index.js";
import { resolveRetrieval } from "../../src/index.js";

export const WORDS = [
  "account",
  "policy",
  "types",
  "multi",
  "step",
  "flow",
  "enable",
  "checkout",
  "payment",
  "refund",
  "access",
  "__proto__",
  "constructor",
  "toString",
  "hasOwnProperty",
  "Café",
  "cafe",
  "ＡＢＣ",
  "abc",
  "ﬁle",
  "file",
  "İstanbul",
  "straße",
  "日本語",
  "enableMultiStepFlow",
  "HTTPServer",
  "v2",
  "3",
  "a",
];

export const ID_POOL = [
  "__proto__",
  "constructor",
  "toString",
  "hasOwnProperty",
  "valueOf",
  "account.multi-step-flow",
  "settings.multi-step-flow",
  "policy.types",
  "a",
  "b",
  "z.last",
  "Zeta",
  "café.entry",
  "ＡＢＣ",
  "日本",
  "x1",
  "x10",
  "x2",
];

const word = fc.constantFrom(...WORDS);
export const phrase = (maxWords: number) =>
  fc.array(word, { minLength: 0, maxLength: maxWords }).map((words) => words.join(" "));
const separatorPhrase = fc
  .tuple(fc.array(word, { minLength: 1, maxLength: 4 }), fc.constantFrom(" ", "-", "_", ".", "  "))
  .map(([words, separator]) => words.join(separator));

export const entryArbitrary = (id: string): fc.Arbitrary<KnowledgeEntryInput> =>
  fc.record(
    {
      id: fc.constant(id),
      title: fc.oneof(separatorPhrase, fc.constant(id)),
      summary: separatorPhrase,
      domain: fc.constantFrom("d1", "d2", "d3"),
      integrations: fc.subarray(["a", "B", "c"]),
      kind: fc.constantFrom("concept", "text", "configuration", "policy"),
      status: fc.constantFrom("active", "active", "active", "draft", "deprecated"),
      body: phrase(30),
      aliases: fc.array(fc.oneof(separatorPhrase, fc.constant("")), { maxLength: 3 }),
      keywords: fc.array(phrase(2), { maxLength: 3 }),
      relatedEntryIds: fc.subarray([...ID_POOL, "missing.entry"], { maxLength: 3 }),
      parentEntryId: fc.constantFrom(...ID_POOL, "missing.parent"),
    },
    { requiredKeys: ["id", "title", "summary", "domain", "integrations"] },
  );

/** Entries drawn from a tiny vocabulary, so that equal scores (and the id tie-break) are common. */
export const tiedEntryArbitrary = (id: string): fc.Arbitrary<KnowledgeEntryInput> =>
  fc.record(
    {
      id: fc.constant(id),
      title: fc.constantFrom("account", "policy types", "account flow"),
      summary: fc.constantFrom("account", "account policy"),
      domain: fc.constantFrom("d1", "d2"),
      integrations: fc.constantFrom([], ["a"]),
      body: fc.constantFrom("", "flow"),
      relatedEntryIds: fc.subarray(ID_POOL.slice(0, 6), { maxLength: 2 }),
    },
    { requiredKeys: ["id", "title", "summary", "domain", "integrations"] },
  );

/** 1–12 entries with distinct ids from the pool; some registries are built for ties. */
export const registryArbitrary: fc.Arbitrary<KnowledgeEntryInput[]> = fc
  .tuple(fc.uniqueArray(fc.constantFrom(...ID_POOL), { minLength: 1, maxLength: 12 }), fc.boolean())
  .chain(([ids, tied]) => fc.tuple(...ids.map((id) => (tied ? tiedEntryArbitrary(id) : entryArbitrary(id)))));

export const queryArbitrary: fc.Arbitrary<string> = fc.oneof(
  { weight: 6, arbitrary: phrase(8) },
  { weight: 2, arbitrary: fc.constantFrom(...ID_POOL).map((id) => `how does ${id} work`) },
  { weight: 1, arbitrary: fc.constant("") },
  { weight: 1, arbitrary: fc.string({ maxLength: 20 }) },
  { weight: 1, arbitrary: phrase(4).map((text) => `${text} `.repeat(600)) },
);

export const requestArbitrary: fc.Arbitrary<KnowledgeRetrievalRequest> = fc.record({
  query: queryArbitrary,
  recentTurns: fc.array(
    fc.record({ role: fc.constantFrom("user" as const, "assistant" as const), text: phrase(6) }),
    {
      maxLength: 4,
    },
  ),
  enabledIntegrations: fc.subarray(["a", "b", "C", "x"]),
});

export const resolvedArbitrary: fc.Arbitrary<KnowledgeResolvedRetrieval> = fc
  .record({
    candidateLimit: fc.oneof(fc.integer({ min: 0, max: 2 }), fc.integer({ min: 0, max: 10 })),
    resultLimit: fc.integer({ min: 0, max: 8 }),
    relationLimit: fc.integer({ min: 0, max: 4 }),
    exactBoost: fc.constantFrom(100, 0, 7.5),
    aliasBoost: fc.constantFrom(60, 0, 3),
    weights: fc.record({
      title: fc.constantFrom(5, 0, 1.5),
      aliases: fc.constantFrom(5, 0),
      keywords: fc.constantFrom(3, 0),
      summary: fc.constantFrom(3, 0.25),
      body: fc.constantFrom(1, 0),
    }),
    k1: fc.constantFrom(1.5, 0, 0.9),
    b: fc.constantFrom(0.75, 0, 1, 0.4),
  })
  .map((value) => ({
    ...resolveRetrieval({
      candidateLimit: value.candidateLimit,
      resultLimit: value.resultLimit,
      relationLimit: value.relationLimit,
      exactBoost: value.exactBoost,
      aliasBoost: value.aliasBoost,
      fieldWeights: value.weights,
      k1: value.k1,
      b: value.b,
    }),
  }));

export const blockedArbitrary = fc.subarray(["d1", "d2", "D3"]);

/** One incremental update of a registry drawn from {@link ID_POOL}: an upsert of entries, or a removal of ids. */
export type UpdateOperation =
  | { kind: "upsert"; entries: KnowledgeEntryInput[] }
  | { kind: "remove"; ids: string[] };

/** An upsert of 1 to 4 entries of the id pool (all of them tied, or all varied). */
export const upsertOperationArbitrary: fc.Arbitrary<UpdateOperation> = fc
  .tuple(fc.uniqueArray(fc.constantFrom(...ID_POOL), { minLength: 1, maxLength: 4 }), fc.boolean())
  .chain(([ids, tied]) => fc.tuple(...ids.map((id) => (tied ? tiedEntryArbitrary(id) : entryArbitrary(id)))))
  .map((entries) => ({ kind: "upsert", entries }));

/** A removal of 1 to 6 ids, one of which may never have existed. */
export const removeOperationArbitrary: fc.Arbitrary<UpdateOperation> = fc
  .uniqueArray(fc.constantFrom(...ID_POOL, "never.there"), { minLength: 1, maxLength: 6 })
  .map((ids) => ({ kind: "remove", ids }));

/** Sequences of 1 to `maxLength` updates, upserts twice as likely as removals. */
export function updateOperationsArbitrary(maxLength: number): fc.Arbitrary<UpdateOperation[]> {
  return fc.array(fc.oneof(upsertOperationArbitrary, upsertOperationArbitrary, removeOperationArbitrary), {
    minLength: 1,
    maxLength,
  });
}
