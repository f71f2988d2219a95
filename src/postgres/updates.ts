/** Writing an incremental update's generation from the serving one, inside PostgreSQL (see `update`). */
import type { NormalizedKnowledgeEntry } from "../types/knowledge.js";
import { computeDerivedGeneration, type DerivedGenerationData } from "./changes.js";
import { NO_READ_TIMEOUT } from "./copy.js";
import type { PostgresPoolClient } from "./driver.js";
import type { PostgresIndexParameters } from "./indexData.js";
import { publishGeneration } from "./publication.js";
import {
  encodeKey,
  float8Array,
  type GenerationTables,
  generationTables,
  int4Array,
  SCOPE_DOMAIN,
  SCOPE_INTEGRATION,
  SCOPE_RESTRICTED,
} from "./sql.js";

/** Writes the next generation from the serving one `baseGeneration` (see `PostgresBackend.update`); returns its number. */
export async function writeDerivedGeneration(
  schema: string,
  batchBytes: number,
  pooled: PostgresPoolClient,
  baseGeneration: number,
  entries: readonly NormalizedKnowledgeEntry[],
  options: {
    contentKey: string;
    changedIds: readonly string[];
    previousEntries: readonly NormalizedKnowledgeEntry[];
  },
  parameters: PostgresIndexParameters,
): Promise<number> {
  // Statements that rewrite a whole generation may take longer than the pool's client-side read timeout.
  const client: PostgresPoolClient = {
    query: (config) => pooled.query({ ...config, query_timeout: NO_READ_TIMEOUT }),
    release: (destroy) => pooled.release(destroy),
  };
  const base = generationTables(schema, baseGeneration);
  const baseRows = await client.query({
    text: `select doc, id, field_lengths from ${base.entries} order by doc`,
  });
  const ids: string[] = [];
  const fieldLengths = Array.from({ length: 5 }, () => new Int32Array(baseRows.rows.length));
  baseRows.rows.forEach((row, doc) => {
    if (Number(row.doc) !== doc) throw new Error(`generation ${baseGeneration} has a gap at entry ${doc}`);
    ids.push(JSON.parse(String(row.id)) as string);
    const lengths = row.field_lengths as number[];
    for (let field = 0; field < 5; field++) fieldLengths[field]![doc] = Number(lengths[field]);
  });
  const maxFound = await client.query({
    text: `select coalesce(max(document_frequency), 0) as max from ${base.postings}`,
  });
  const data = computeDerivedGeneration(
    { ids, fieldLengths, maxDocumentFrequency: Number(maxFound.rows[0]!.max) },
    entries,
    new Set(options.changedIds),
    options.previousEntries,
    parameters,
  );
  // Layout 1 (unpruned): the pruning tables stay empty, turns take the full path until the compaction.
  return publishGeneration(
    schema,
    client,
    {
      contentKey: options.contentKey,
      entryCount: data.documentCount,
      parameters: JSON.stringify(parameters),
      statistics: JSON.stringify({
        maxPhraseWords: data.maxPhraseWords,
        documentCount: data.documentCount,
        averageLengths: data.averageLengths,
        derivedFrom: baseGeneration,
      }),
      layout: 1,
    },
    async (tables) => {
      await loadDerivedGeneration(client, base, tables, data, batchBytes);
      return 1;
    },
  );
}

/**
 * Fills an updated generation's tables: the base's unchanged entries and postings copied and renumbered in the
 * database, the changed entries' rows and postings from JavaScript, contributions recomputed per posting as
 * `weightedIdf[df] · ((tf · (k1 + 1)) / (tf + lengthNormalization[doc]))` (`bm25TermScore`'s expression and
 * order; the database's float8 arithmetic is IEEE like JavaScript's), phrases and scopes written in full.
 */
async function loadDerivedGeneration(
  client: PostgresPoolClient,
  base: GenerationTables,
  tables: GenerationTables,
  data: DerivedGenerationData,
  batchBytes: number,
): Promise<void> {
  const relationStarts = new Int32Array(data.documentCount + 1);
  relationStarts.set(data.relationEnds, 1);
  await client.query({
    text: `insert into ${tables.entries} (doc, id, entry, relations, field_lengths)
      select n.doc, e.id, e.entry,
        ($2::int4[])[($3::int4[])[n.doc + 1] + 1 : ($3::int4[])[n.doc + 2]], e.field_lengths
      from ${base.entries} e cross join lateral (select ($1::int4[])[e.doc + 1] as doc) n
      where n.doc >= 0`,
    values: [int4Array(data.map), int4Array(data.relations), int4Array(relationStarts)],
  });
  const batch = new BatchInsert(client, batchBytes);
  batch.start(
    tables.entries,
    ["doc", "id", "entry", "relations", "field_lengths"],
    ["", "", "", "::int4[]", "::int4[]"],
  );
  for (const row of data.added) {
    const id = JSON.stringify(row.entry.id);
    const entry = JSON.stringify(row.entry);
    await batch.add(
      [row.doc, id, entry, int4Array(row.relations), int4Array(row.fieldLengths)],
      id.length + entry.length + 4 * (row.relations.length + 16),
    );
  }
  await batch.flush();
  // The changed entries' postings and the lists they touch (theirs and their previous versions').
  await client.query({
    text: `create temporary table lexground_added (
      term text not null, field smallint not null, docs integer[] not null, frequencies integer[] not null)`,
  });
  await client.query({
    text: "create temporary table lexground_touched (term text not null, field smallint not null)",
  });
  batch.start(
    "pg_temp.lexground_added",
    ["term", "field", "docs", "frequencies"],
    ["", "", "::int4[]", "::int4[]"],
  );
  for (const posting of data.addedPostings) {
    await batch.add(
      [encodeKey(posting.term), posting.field, int4Array(posting.docs), int4Array(posting.frequencies)],
      posting.term.length + 32 + posting.docs.length * 16,
    );
  }
  await batch.flush();
  batch.start("pg_temp.lexground_touched", ["term", "field"], ["", ""]);
  for (const { term, field } of data.touched) await batch.add([encodeKey(term), field], term.length + 16);
  await batch.flush();
  await client.query({ text: "create index on pg_temp.lexground_touched (term, field)" });
  await client.query({ text: "analyze pg_temp.lexground_added" });
  await client.query({ text: "analyze pg_temp.lexground_touched" });
  // Per posting: weightedIdf[field, df] · ((tf · (k1 + 1)) / (tf + lengthNormalization[field, doc])). The field
  // is a smallint: the subscripts are computed as integers (field × entry count exceeds 32,767 from 8,192 entries).
  const contribution = (list: string, documentFrequency: string, frequency: string, doc: string) =>
    `($2::float8[])[${list}.field::int4 * $3::int4 + ${documentFrequency} + 1]
      * ((${frequency} * $4::float8) / (${frequency} + ($5::float8[])[${list}.field::int4 * $6::int4 + ${doc} + 1]))`;
  const values = [
    int4Array(data.map),
    float8Array(data.weightedIdf),
    data.idfStride,
    data.saturation,
    float8Array(data.lengthNormalizations),
    data.documentCount,
  ];
  // Untouched lists: the same documents (renumbered, order kept: the renumbering is increasing) and frequencies,
  // so the same document frequency; only the contributions change. The aggregates read the array's elements in
  // storage order (a plain aggregate over the function scan of unnest, nothing between them that could reorder;
  // the property test compares every list with a full publication's). A removed document in such a list would
  // be a bug: the division by zero fails the update rather than write a wrong list.
  await client.query({
    text: `insert into ${tables.postings} (term, field, document_frequency, docs, frequencies, contributions)
      select p.term, p.field, p.document_frequency, x.docs, p.frequencies, x.contributions
      from ${base.postings} p
      cross join lateral (
        select array_agg(($1::int4[])[u.d + 1]) as docs,
          array_agg(${contribution("p", "p.document_frequency", "u.f", "($1::int4[])[u.d + 1]")}) as contributions,
          min(($1::int4[])[u.d + 1]) as lowest
        from unnest(p.docs, p.frequencies) as u(d, f)
      ) x
      where not exists (select 1 from pg_temp.lexground_touched t where t.term = p.term and t.field = p.field)
        and 1 / (x.lowest >= 0)::int = 1`,
    values,
  });
  // Touched lists: the base's surviving documents merged with the added ones, in document order.
  await client.query({
    text: `insert into ${tables.postings} (term, field, document_frequency, docs, frequencies, contributions)
      select l.term, l.field, cardinality(l.docs), l.docs, l.frequencies,
        array(select ${contribution("l", "cardinality(l.docs)", "x.f", "x.d")}
              from unnest(l.docs, l.frequencies) with ordinality as x(d, f, o) order by x.o)
      from (
        select t.term, t.field, m.docs, m.frequencies
        from pg_temp.lexground_touched t
        left join ${base.postings} p on p.term = t.term and p.field = t.field
        left join pg_temp.lexground_added a on a.term = t.term and a.field = t.field
        cross join lateral (
          select array_agg(x.d order by x.d) as docs, array_agg(x.f order by x.d) as frequencies
          from (
            select ($1::int4[])[u.d + 1] as d, u.f from unnest(p.docs, p.frequencies) as u(d, f)
            union all
            select u.d, u.f from unnest(a.docs, a.frequencies) as u(d, f)
          ) x
          where x.d >= 0
        ) m
      ) l
      where l.docs is not null`,
    values,
  });
  await client.query({ text: "drop table pg_temp.lexground_added, pg_temp.lexground_touched" });
  batch.start(tables.phrases, ["key", "exact", "alias"], ["", "::int4[]", "::int4[]"]);
  for (const [key, ids] of data.phrases) {
    await batch.add([encodeKey(key), int4Array(ids.exact), int4Array(ids.alias)], key.length + 64);
  }
  await batch.flush();
  batch.start(tables.scopes, ["kind", "key", "docs"], ["", "", "::int4[]"]);
  await batch.add([SCOPE_RESTRICTED, "", int4Array(data.restricted)], data.restricted.length * 8);
  for (const [key, docs] of data.byIntegration)
    await batch.add([SCOPE_INTEGRATION, encodeKey(key), int4Array(docs)], key.length + docs.length * 8);
  for (const [key, docs] of data.byDomain)
    await batch.add([SCOPE_DOMAIN, encodeKey(key), int4Array(docs)], key.length + docs.length * 8);
  await batch.flush();
}

/** Accumulates rows into multi-row `insert` statements of a bounded size. */
class BatchInsert {
  private table = "";
  private columns: string[] = [];
  private casts: string[] = [];
  private values: unknown[] = [];
  private rows = 0;
  private bytes = 0;

  constructor(
    private readonly client: PostgresPoolClient,
    private readonly batchBytes: number,
  ) {}

  start(table: string, columns: string[], casts: string[]): void {
    this.table = table;
    this.columns = columns;
    this.casts = casts;
    this.values = [];
    this.rows = 0;
    this.bytes = 0;
  }

  async add(row: unknown[], bytes: number): Promise<void> {
    this.values.push(...row);
    this.rows++;
    this.bytes += bytes;
    // PostgreSQL takes at most 65,535 parameters per statement.
    if (this.bytes >= this.batchBytes || this.values.length + row.length > 60_000) await this.flush();
  }

  async flush(): Promise<void> {
    if (this.rows === 0) return;
    const width = this.columns.length;
    const tuples: string[] = [];
    for (let row = 0; row < this.rows; row++) {
      const placeholders = this.casts.map((cast, column) => `$${row * width + column + 1}${cast}`);
      tuples.push(`(${placeholders.join(", ")})`);
    }
    const text = `insert into ${this.table} (${this.columns.join(", ")}) values ${tuples.join(", ")}`;
    const values = this.values;
    this.values = [];
    this.rows = 0;
    this.bytes = 0;
    await this.client.query({ text, values });
  }
}
