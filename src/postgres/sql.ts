/**
 * SQL of the PostgreSQL backend: the schema and its migrations, the per-generation tables, the per-turn
 * statements, and the encodings between JavaScript values and PostgreSQL's (text keys that may hold NUL or
 * unpaired surrogates, binary arrays).
 */

/** The schema version this code reads and writes (the `schema_version` table holds the database's). */
export const SCHEMA_VERSION = 2;

/**
 * The table layout of the generations this code publishes (stored in `generations.layout`). Layout 1: entries,
 * postings, phrases, scopes. Layout 2, written by older lexground, added each term's impact-ordered best postings
 * (`impacts`) and each document's postings (`forward`) for a pruned turn that no longer exists: its generations
 * are served like layout 1 (those tables unread) and dropped with them.
 */
export const GENERATION_LAYOUT = 1;

/** A quoted SQL identifier (`"name"`, inner quotes doubled). */
export function quoteIdentifier(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

const ESCAPED_KEY_PREFIX = "\u0001";

/**
 * A string as a PostgreSQL text value: itself when PostgreSQL can hold it, otherwise (a NUL, an unpaired
 * surrogate, or the escape prefix itself at the start) U+0001 followed by its JSON text. Injective, so equal keys
 * stay equal and distinct keys distinct, and comparisons need no decoding.
 */
export function encodeKey(value: string): string {
  if (value.startsWith(ESCAPED_KEY_PREFIX) || value.includes("\u0000") || !value.isWellFormed()) {
    return ESCAPED_KEY_PREFIX + JSON.stringify(value);
  }
  return value;
}

/** Element type ids of the binary array format. */
const INT4_OID = 23;
const FLOAT8_OID = 701;

/**
 * A one-dimensional `int4[]` or `float8[]` in PostgreSQL's binary format (what `array_recv` reads), sent as a
 * binary parameter: no number is formatted or parsed as text.
 */
function binaryArray(values: ArrayLike<number>, oid: number, width: 4 | 8): Buffer {
  const count = values.length;
  const buffer = Buffer.allocUnsafe(20 + count * (4 + width));
  buffer.writeInt32BE(1, 0); // dimensions
  buffer.writeInt32BE(0, 4); // no nulls
  buffer.writeInt32BE(oid, 8);
  buffer.writeInt32BE(count, 12);
  buffer.writeInt32BE(1, 16); // lower bound
  let offset = 20;
  for (let index = 0; index < count; index++) {
    buffer.writeInt32BE(width, offset);
    if (width === 4) buffer.writeInt32BE(values[index]!, offset + 4);
    else buffer.writeDoubleBE(values[index]!, offset + 4);
    offset += 4 + width;
  }
  return buffer;
}

/** An `int4[]` binary parameter (cast the placeholder: `$1::int4[]`). */
export function int4Array(values: ArrayLike<number>): Buffer {
  return binaryArray(values, INT4_OID, 4);
}

/** A `float8[]` binary parameter (cast the placeholder: `$1::float8[]`). */
export function float8Array(values: ArrayLike<number>): Buffer {
  return binaryArray(values, FLOAT8_OID, 8);
}

/** The shared tables: migration N is entry N - 1 (in the backend's schema). */
export function migrationStatements(schema: string): string[][] {
  const s = quoteIdentifier(schema);
  return [
    // Version 1.
    [
      `create table if not exists ${s}.generations (
        generation bigint primary key,
        state text not null check (state in ('building', 'ready', 'failed', 'retired')),
        content_key text not null,
        entry_count integer not null default 0,
        parameters text not null,
        statistics text,
        error text,
        created_at timestamptz not null default now(),
        published_at timestamptz
      )`,
      `create sequence if not exists ${s}.generation_numbers`,
      `create table if not exists ${s}.serving (
        singleton boolean primary key default true check (singleton),
        generation bigint not null references ${s}.generations (generation),
        switched_at timestamptz not null default now()
      )`,
    ],
    // Version 2: generations record their table layout (1 for those published before).
    [`alter table ${s}.generations add column if not exists layout integer not null default 1`],
  ];
}

/** Names of one generation's tables. */
export type GenerationTables = {
  entries: string;
  /**
   * Per term and field: its documents and term frequencies as arrays (what incremental updates read and rewrite in
   * SQL), its contributions as an array (written by incremental updates, which compute them in SQL, and by
   * older publications; null in publications now) and, for turns, `coded_list` (the list in the wire form of
   * `wireLists.ts`: documents as gaps, contributions coded; read whole by the app): written by publications,
   * null in generations written by an incremental update. Generations published before it existed (session 10)
   * have `docs_bytes` and `contribution_bytes` instead (little-endian int32 and float64 values), and older ones
   * neither: turns then read those columns, or the arrays. A row has its contributions in one form at least.
   */
  postings: string;
  phrases: string;
  scopes: string;
  /**
   * Layout 2 only (generations published by older lexground): each term's postings in impact order, and each
   * document's postings (`forward`). Never read; named so that such a generation's tables are dropped with it.
   */
  impacts: string;
  forward: string;
  /**
   * Each entry's postings in the generation's frequent lists (`frequentLists.ts`; doc, postings): written by
   * publications of large generations (their statistics then say `frequent`), absent otherwise.
   */
  frequent: string;
};

/** The quoted, schema-qualified table names of generation `generation` (an integer, so the names are safe). */
export function generationTables(schema: string, generation: number): GenerationTables {
  if (!Number.isSafeInteger(generation) || generation < 0)
    throw new RangeError(`bad generation ${generation}`);
  const s = quoteIdentifier(schema);
  return {
    entries: `${s}.g${generation}_entries`,
    postings: `${s}.g${generation}_postings`,
    phrases: `${s}.g${generation}_phrases`,
    scopes: `${s}.g${generation}_scopes`,
    impacts: `${s}.g${generation}_impacts`,
    forward: `${s}.g${generation}_forward`,
    frequent: `${s}.g${generation}_frequent`,
  };
}

/** Scope rows: entries not eligible everywhere, active entries per integration, entries per domain. */
export const SCOPE_RESTRICTED = 0;
export const SCOPE_INTEGRATION = 1;
export const SCOPE_DOMAIN = 2;

/**
 * The row size up to which an entry stays in its table's own pages (PostgreSQL's largest `toast_tuple_target`)
 * instead of the default 2 KB: a typical entry's JSON (3 KB in the benchmark's registry) was moved out of line
 * whole, each one two TOAST chunks and two index insertions in the TOAST table, most of the server's work when
 * loading the entries (and a second lookup per entry read). Larger entries still go out of line.
 */
export const ENTRY_TUPLE_TARGET = 8160;

/**
 * The statistics target of the entries' key (PostgreSQL's default is 100): ANALYZE samples 300 rows per unit.
 * Lowering it for the postings' or phrases' keys changed the plans of a turn's postings query, so only the
 * entries' is lowered.
 */
export const ENTRY_STATISTICS_TARGET = 10;

/**
 * One generation's tables, created unindexed and unlogged-free (they must survive a crash like the rest), with
 * the large arrays stored uncompressed: compressing floats gains little and every turn would pay to decompress.
 */
export function createGenerationStatements(tables: GenerationTables): string[] {
  return [
    `create table ${tables.entries} (
      doc integer not null,
      id text not null,
      entry text not null,
      relations integer[] not null,
      field_lengths integer[] not null
    ) with (toast_tuple_target = ${ENTRY_TUPLE_TARGET})`,
    // Entries are read a few at a time: compressing them (pglz, on every load) costs more than it saves. Their key's
    // statistics are sampled from 3,000 rows, not 30,000: ANALYZE copies each sampled row whole (3 KB of JSON), and
    // at 100k entries that was most of the publication's ANALYZE (2.6-2.9 s against 0.09-0.11 s at load 10); a
    // unique key's statistics tell the planner nothing more from the larger sample (the plans of a turn's
    // statements were the same, custom and generic; `ENTRY_STATISTICS_TARGET`).
    `alter table ${tables.entries} alter column entry set storage external,
      alter column doc set statistics ${ENTRY_STATISTICS_TARGET}`,
    `create table ${tables.postings} (
      term text not null,
      field smallint not null,
      document_frequency integer not null,
      docs integer[] not null,
      frequencies integer[] not null,
      contributions double precision[],
      coded_list bytea,
      frequent integer,
      header_bytes integer
    )`,
    `alter table ${tables.postings} alter column docs set storage external,
      alter column frequencies set storage external, alter column contributions set storage external,
      alter column coded_list set storage external`,
    `create table ${tables.phrases} (key text not null, exact integer[] not null, alias integer[] not null)`,
    `create table ${tables.scopes} (kind smallint not null, key text not null, docs integer[] not null)`,
    `alter table ${tables.scopes} alter column docs set storage external`,
  ];
}

/**
 * The frequent rows' table (`frequentLists.ts`), created only by publications that write frequent lists, and its key
 * (built once the rows are in).
 */
export function frequentTableStatements(tables: GenerationTables): { create: string[]; index: string } {
  return {
    create: [
      `create table ${tables.frequent} (doc integer not null, postings bytea not null)`,
      // Rows of a few hundred bytes, read a few thousand at a time by the entries' key: never compressed.
      `alter table ${tables.frequent} alter column postings set storage external`,
    ],
    index: `alter table ${tables.frequent} add primary key (doc)`,
  };
}

/** Indexes, built once the data is in (faster than maintaining them row by row), each with its phase name. */
export function indexGenerationStatements(
  tables: GenerationTables,
  generation: number,
): { phase: string; text: string }[] {
  return [
    [
      "index entries",
      `alter table ${tables.entries} add constraint g${generation}_entries_key primary key (doc)`,
    ],
    // Entries by id: what the MCP server's get_entry reads (older generations, without it, scan the table).
    ["index entry ids", `create index g${generation}_entries_id on ${tables.entries} (id)`],
    [
      "index postings",
      `alter table ${tables.postings} add constraint g${generation}_postings_key primary key (term, field)`,
    ],
    [
      "index phrases",
      `alter table ${tables.phrases} add constraint g${generation}_phrases_key primary key (key)`,
    ],
    [
      "index scopes",
      `alter table ${tables.scopes} add constraint g${generation}_scopes_key primary key (kind, key)`,
    ],
    // Statistics of the key columns only: sampling the large array columns costs seconds and no plan uses them.
    ["analyze", `analyze ${tables.entries} (doc)`],
    ["analyze", `analyze ${tables.postings} (term, field)`],
    ["analyze", `analyze ${tables.phrases} (key)`],
    ["analyze", `analyze ${tables.scopes} (kind, key)`],
  ].map(([phase, text]) => ({ phase: phase!, text: text! }));
}

/** Drops a generation's tables (of either layout). */
export function dropGenerationStatement(tables: GenerationTables): string {
  return `drop table if exists ${Object.values(tables).join(", ")}`;
}

/**
 * Where a statement's phrase keys come from: `keys`, a `text[]` of the keys to look up (the n-grams of the query's
 * tokens that the reader does not hold; `ord` is then a key's position in it, 1-based); or, for a query whose
 * n-grams would be too many to spell out (`phraseGrams` returns null), `tokens` (a `text[]`: the query's tokens)
 * and `maxWords` (an integer: the longest phrase key's word count), from which the database builds the n-grams,
 * numbered `size × (tokens + 1) + start` (the in-memory lookup's generation order). Values are SQL expressions.
 */
export type PhraseKeySource = { keys: string } | { tokens: string; maxWords: string };

/**
 * The common table expressions of a query's phrase hits (`hit_docs`: kind 1 exact, 2 alias, `ord` as
 * {@link PhraseKeySource} says, and the dense id). Tokens are letters and digits, so a joined n-gram is its own
 * key encoding. The keys are materialized so that each is built once, and each is looked up alone (lateral, see
 * `entryIdLateral`). Built by the database: one series over every (size, start) pair, not a series of starts per
 * size: with constant tokens (a COPY's, or a custom plan's parameters) the planner then knows how many n-grams
 * there are, where a series per size is always guessed at 1,000 rows.
 */
function phraseHitsCte(tables: GenerationTables, source: PhraseKeySource): string {
  let keys: string;
  if ("keys" in source)
    keys = `select k.ord, k.key from unnest(${source.keys}) with ordinality as k(key, ord)`;
  else {
    const t = source.tokens;
    keys = `select g.size * (cardinality(${t}) + 1) + g.start - 1 as ord,
      array_to_string((${t})[g.start : g.start + g.size - 1], ' ') as key
    from (select i / cardinality(${t}) + 1 as size, i % cardinality(${t}) + 1 as start
      from generate_series(0, least(${source.maxWords}, cardinality(${t})) * cardinality(${t}) - 1) as i) g
    where g.start + g.size - 1 <= cardinality(${t})`;
  }
  return `phrase_keys as materialized (${keys}),
  phrase_hits as (
    select k.ord, p.exact, p.alias from phrase_keys k
    cross join lateral (select p.exact, p.alias from ${tables.phrases} p where p.key = k.key offset 0) p),
  hit_docs as (
    select 1 as kind, h.ord, d.doc from phrase_hits h cross join lateral unnest(h.exact) as d(doc)
    union all
    select 2 as kind, h.ord, d.doc from phrase_hits h cross join lateral unnest(h.alias) as d(doc))`;
}

/**
 * The primary entries ($1, dense ids) with their relations, and every entry those relations name (eligibility
 * is checked by the caller on the entries themselves).
 */
export function selectionEntriesStatement(tables: GenerationTables): string {
  return `with primaries as (select doc, id, entry, relations from ${tables.entries} where doc = any($1::int4[]))
  select doc, id, entry, relations from primaries
  union all
  select e.doc, e.id, e.entry, null from ${tables.entries} e
  where e.doc in (select unnest(relations) from primaries) and not (e.doc = any($1::int4[]))`;
}

/**
 * How a generation's postings table holds the lists turns read: `coded` (`coded_list`, publications since session
 * 11), `packed` (`docs_bytes` and `contribution_bytes`, publications of session 10), or `arrays` only (older).
 */
export type ListForm = "coded" | "packed" | "arrays";

/**
 * A turn's round one, as the query of a binary COPY (see `copyOut.ts`; COPY takes no parameters, so the values
 * come as SQL expressions: `terms`, a `text[]` of the terms whose postings the app does not hold, encoded;
 * and the phrase keys, see {@link PhraseKeySource}). Rows: the phrase hits (kind 1 exact, 2 alias: doc, a null id,
 * ord: see {@link PhraseKeySource}; eligibility left to the caller), then every posting list of those terms (kind
 * 3: ord is the term's position in `terms`, field, then its list in one of three forms, the others null: the
 * coded list (`coded_list`), the packed `docs_bytes` and `contribution_bytes` (little-endian int32 and float64
 * values), or, where a row has neither (written by an incremental update) or the table neither column (`form`,
 * see {@link ListForm}), the `docs` and `contributions` arrays in the binary array format). Each term is looked
 * up alone in the postings' primary key.
 */
export function termPostingsQuery(
  tables: GenerationTables,
  values: { terms: string } & PhraseKeySource,
  form: ListForm,
  frequentHeaders = false,
): string {
  const arrays = (absent: string) =>
    `case when ${absent} then array_send(p.docs) end, case when ${absent} then array_send(p.contributions) end`;
  const lists =
    form === "coded"
      ? `p.coded_list, null::bytea, null::bytea, ${arrays("p.coded_list is null")}`
      : form === "packed"
        ? `null::bytea, p.docs_bytes, p.contribution_bytes, ${arrays("p.docs_bytes is null")}`
        : "null::bytea, null::bytea, null::bytea, array_send(p.docs), array_send(p.contributions)";
  // Frequent lists (a coded generation's, see `frequentLists.ts`): kind 4, their number, and only their header.
  const listRow =
    form === "coded" && frequentHeaders
      ? `case when p.frequent is null then 3 else 4 end, p.frequent::int4, null::text, q.ord::int4, p.field::int4,
    case when p.frequent is null then p.coded_list else substring(p.coded_list from 1 for p.header_bytes) end,
    null::bytea, null::bytea, ${arrays("p.coded_list is null")}`
      : `3, null::int4, null::text, q.ord::int4, p.field::int4, ${lists}`;
  return `with
  ${phraseHitsCte(tables, values)}
  select h.kind::int4, h.doc::int4, null::text, h.ord::int4, null::int4,
    null::bytea, null::bytea, null::bytea, null::bytea, null::bytea
  from hit_docs h
  union all
  select ${listRow}
  from unnest(${values.terms}) with ordinality as q(term, ord)
  cross join lateral (select p.* from ${tables.postings} p where p.term = q.term offset 0) p`;
}

/**
 * Whole coded lists of given terms in given fields (rows as {@link termPostingsQuery}'s kind 3, `ord` the position
 * in the arguments, 1-based): `terms` a `text[]` and `fields` an `int4[]` expression, pairwise.
 */
export function fieldListsQuery(tables: GenerationTables, terms: string, fields: string): string {
  return `select 3, null::int4, null::text, q.ord::int4, q.field::int4,
    p.coded_list, null::bytea, null::bytea, null::bytea, null::bytea
  from unnest(${terms}, ${fields}) with ordinality as q(term, field, ord)
  cross join lateral (
    select p.coded_list from ${tables.postings} p where p.term = q.term and p.field = q.field offset 0) p`;
}

/** The `frequent` rows (doc, postings) of the dense ids `docs` (an `int4[]` expression). */
export function frequentRowsQuery(tables: GenerationTables, docs: string): string {
  return `select doc, postings from ${tables.frequent} where doc = any(${docs})`;
}

/**
 * Phrase hits alone (kind, doc, ord as in {@link termPostingsQuery}), prepared: what a turn whose lists are all in
 * the posting cache reads, for the phrase keys the reader does not hold. Parameter: $1 those keys (`byTokens`:
 * $1 the query's tokens and $2 the longest key's word count, see {@link PhraseKeySource}).
 */
export function phraseHitsStatement(tables: GenerationTables, byTokens = false): string {
  return `with
  ${phraseHitsCte(tables, byTokens ? { tokens: "$1::text[]", maxWords: "$2::integer" } : { keys: "$1::text[]" })}
  select h.kind, h.doc, h.ord from hit_docs h`;
}

/**
 * The entry ids (doc, id) of dense ids $1: a turn's top K and its phrase hits, in one statement after the ranking
 * (by the entries' primary key; as a join inside the phrase statement, the planner, which cannot know how few
 * hits a query has, guessed ten per n-gram and costed long queries above `jit_above_cost`).
 */
export function entryIdsStatement(tables: GenerationTables): string {
  return `select doc, id from ${tables.entries} where doc = any($1::int4[])`;
}

/**
 * The entries whose ids are in $1 (a `text[]` of ids as the `id` column holds them: JSON strings, see
 * `publication.ts`), by the ids' index.
 */
export function entriesByIdStatement(tables: GenerationTables): string {
  return `select entry from ${tables.entries} where id = any($1::text[])`;
}

/** The scope lists (kind, key, docs) of a generation, read once per generation by turns (eligibility). */
export function scopesStatement(tables: GenerationTables): string {
  return `select kind, key, docs from ${tables.scopes}`;
}
