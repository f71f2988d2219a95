/**
 * Publishing a generation: its row, tables, rows (binary `COPY`), indexes and the switch to it, in one
 * transaction; reading which generation serves; retiring old ones.
 */
import { type CopyEncoder, copyIn, NO_READ_TIMEOUT } from "./copy.js";
import type { PostgresPoolClient } from "./driver.js";
import type { GenerationData } from "./indexData.js";
import { PublicationPhases } from "./publicationPhases.js";
import {
  createGenerationStatements,
  dropGenerationStatement,
  encodeKey,
  GENERATION_LAYOUT,
  type GenerationTables,
  generationTables,
  indexGenerationStatements,
  quoteIdentifier,
  SCOPE_DOMAIN,
  SCOPE_INTEGRATION,
  SCOPE_RESTRICTED,
} from "./sql.js";
import { encodeWireList } from "./wireLists.js";

export async function writeGeneration(
  schema: string,
  client: PostgresPoolClient,
  data: GenerationData,
  contentKey: string,
  phases: PublicationPhases = new PublicationPhases(),
): Promise<number> {
  return publishGeneration(
    schema,
    client,
    {
      contentKey,
      entryCount: data.documentCount,
      parameters: JSON.stringify(data.parameters),
      statistics: JSON.stringify({
        maxPhraseWords: data.maxPhraseWords,
        documentCount: data.documentCount,
        averageLengths: data.averageLengths,
      }),
      layout: GENERATION_LAYOUT,
    },
    async (tables) => {
      await loadGeneration(client, tables, data, phases);
      return GENERATION_LAYOUT;
    },
    phases,
  );
}

/**
 * Publishes a new generation in one transaction: its row (state `building`), its tables created, filled by
 * `fill` (which returns the layout turns may use), indexed, marked ready and switched to together, so a replica
 * replays all of it or none, and a failure at any step leaves nothing behind, the previous generation serving
 * and the generation recorded as failed with its error.
 */
export async function publishGeneration(
  schema: string,
  client: PostgresPoolClient,
  generationRow: {
    contentKey: string;
    entryCount: number;
    parameters: string;
    statistics: string;
    layout: number;
  },
  fill: (tables: GenerationTables) => Promise<number>,
  phases: PublicationPhases = new PublicationPhases(),
): Promise<number> {
  const s = quoteIdentifier(schema);
  const numbered = await client.query({ text: `select nextval('${s}.generation_numbers') as generation` });
  const generation = Number(numbered.rows[0]!.generation);
  const tables = generationTables(schema, generation);
  const row = [
    generation,
    generationRow.contentKey,
    generationRow.entryCount,
    generationRow.parameters,
    generationRow.statistics,
    generationRow.layout,
  ];
  try {
    phases.start("create tables");
    await client.query({ text: "begin" });
    await client.query({
      text: `insert into ${s}.generations
        (generation, state, content_key, entry_count, parameters, statistics, layout)
        values ($1, 'building', $2, $3, $4, $5, $6)`,
      values: row,
    });
    for (const text of createGenerationStatements(tables)) await client.query({ text });
    const layout = await fill(tables);
    for (const statement of indexGenerationStatements(tables, generation)) {
      phases.start(statement.phase);
      await client.query({ text: statement.text, query_timeout: NO_READ_TIMEOUT });
    }
    phases.start("switch");
    await client.query({
      text: `update ${s}.generations set state = 'ready', published_at = now(), layout = $2
        where generation = $1`,
      values: [generation, layout],
    });
    await client.query({
      text: `insert into ${s}.serving (generation) values ($1)
        on conflict (singleton) do update set generation = excluded.generation, switched_at = now()`,
      values: [generation],
    });
    phases.start("commit");
    await client.query({ text: "commit" });
    phases.end();
    return generation;
  } catch (error) {
    phases.end();
    await client.query({ text: "rollback" }).catch(() => {});
    await client
      .query({
        text: `insert into ${s}.generations
          (generation, state, content_key, entry_count, parameters, statistics, layout, error)
          values ($1, 'failed', $2, $3, $4, $5, $6, $7)
          on conflict (generation) do update set state = 'failed', error = excluded.error`,
        values: [...row, error instanceof Error ? error.message : String(error)],
      })
      .catch(() => {});
    throw error;
  }
}

/** Drops all but the newest `keepGenerations` published generations (and leftovers of failed builds). */
export async function retireOldGenerations(
  schema: string,
  client: PostgresPoolClient,
  keepGenerations: number,
): Promise<void> {
  const s = quoteIdentifier(schema);
  const result = await client.query({
    text: `select generation from ${s}.generations where state in ('ready', 'failed', 'building')
      and generation not in (select generation from ${s}.generations where state = 'ready'
        order by generation desc limit $1)
      and generation not in (select generation from ${s}.serving)`,
    values: [keepGenerations],
  });
  for (const row of result.rows) {
    const generation = Number(row.generation);
    await client.query({ text: dropGenerationStatement(generationTables(schema, generation)) });
    await client.query({
      text: `update ${s}.generations set state = case when state = 'ready' then 'retired' else state end
        where generation = $1`,
      values: [generation],
    });
  }
}

/**
 * Loads a generation's tables with binary COPY, in the transaction that created them (`freeze`: the rows are
 * written as already visible, so no later pass rewrites them).
 */
async function loadGeneration(
  client: PostgresPoolClient,
  tables: GenerationTables,
  data: GenerationData,
  phases: PublicationPhases,
): Promise<void> {
  const copy = (table: string, columns: string[], produce: (encoder: CopyEncoder) => Promise<void>) =>
    phases.run(`copy ${table.slice(table.lastIndexOf("_") + 1)}`, () =>
      copyIn(client, table, columns, produce, { freeze: true }),
    );
  await copy(tables.entries, ["doc", "id", "entry", "relations", "field_lengths"], async (encoder) => {
    for (const row of data.entries) {
      await encoder.row(5);
      encoder.int4(row.doc);
      encoder.text(JSON.stringify(row.entry.id));
      encoder.text(JSON.stringify(row.entry));
      encoder.int4Array(row.relations);
      encoder.int4Array(row.fieldLengths);
    }
  });
  await copy(
    tables.postings,
    ["term", "field", "document_frequency", "docs", "frequencies", "coded_list"],
    async (encoder) => {
      for (const posting of data.postings()) {
        await encoder.row(6);
        encoder.text(encodeKey(posting.term));
        encoder.int2(posting.field);
        encoder.int4(posting.documentFrequency);
        // The arrays an incremental update reads in SQL (it recomputes every contribution, so the contributions
        // array stays null: turns read the coded lists, see `GenerationTables.postings`).
        encoder.int4Array(posting.docs);
        encoder.int4Array(posting.frequencies);
        encoder.bytes(encodeWireList(posting.docs, posting.contributions));
      }
    },
  );
  await copy(tables.phrases, ["key", "exact", "alias"], async (encoder) => {
    for (const [key, ids] of data.phrases) {
      await encoder.row(3);
      encoder.text(encodeKey(key));
      encoder.int4Array(ids.exact);
      encoder.int4Array(ids.alias);
    }
  });
  await copy(tables.scopes, ["kind", "key", "docs"], async (encoder) => {
    const scope = async (kind: number, key: string, docs: readonly number[]) => {
      await encoder.row(3);
      encoder.int2(kind);
      encoder.text(encodeKey(key));
      encoder.int4Array(docs);
    };
    await scope(SCOPE_RESTRICTED, "", data.restricted);
    for (const [key, docs] of data.byIntegration) await scope(SCOPE_INTEGRATION, key, docs);
    for (const [key, docs] of data.byDomain) await scope(SCOPE_DOMAIN, key, docs);
  });
}
