/**
 * Publishing a generation: its row, tables, rows (binary `COPY`), indexes and the switch to it, in one
 * transaction; reading which generation serves; retiring old ones.
 */
import { type CopyEncoder, copyIn, NO_READ_TIMEOUT } from "./copy.js";
import type { PostgresPoolClient } from "./driver.js";
import { COMBINED_FIELD } from "./fieldPairs.js";
import { FrequentRows, type FrequentStatistics, frequentMinimum } from "./frequentLists.js";
import type { GenerationData } from "./indexData.js";
import { PublicationPhases } from "./publicationPhases.js";
import {
  createGenerationStatements,
  dropGenerationStatement,
  encodeKey,
  frequentTableStatements,
  GENERATION_LAYOUT,
  type GenerationTables,
  generationTables,
  indexGenerationStatements,
  quoteIdentifier,
  SCOPE_DOMAIN,
  SCOPE_INTEGRATION,
  SCOPE_RESTRICTED,
} from "./sql.js";
import { encodeWireListParts } from "./wireLists.js";

/**
 * Publishes `data` as a new generation. `frequentListDocuments`: the backend option of that name (see
 * `frequentMinimum` in `frequentLists.ts`: by default frequent lists are written from 262,144 entries on).
 */
export async function writeGeneration(
  schema: string,
  client: PostgresPoolClient,
  data: GenerationData,
  contentKey: string,
  phases: PublicationPhases = new PublicationPhases(),
  frequentListDocuments?: number,
): Promise<number> {
  const statistics = {
    maxPhraseWords: data.maxPhraseWords,
    documentCount: data.documentCount,
    averageLengths: data.averageLengths,
  };
  return publishGeneration(
    schema,
    client,
    {
      contentKey,
      entryCount: data.documentCount,
      parameters: JSON.stringify(data.parameters),
      statistics: JSON.stringify(statistics),
      layout: GENERATION_LAYOUT,
    },
    async (tables) => {
      const frequent = await loadGeneration(
        client,
        tables,
        data,
        phases,
        frequentMinimum(data.documentCount, frequentListDocuments),
      );
      return {
        layout: GENERATION_LAYOUT,
        statistics: JSON.stringify(frequent ? { ...statistics, frequent } : statistics),
      };
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
  fill: (tables: GenerationTables) => Promise<number | { layout: number; statistics: string }>,
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
    const filled = await fill(tables);
    const layout = typeof filled === "number" ? filled : filled.layout;
    const statistics = typeof filled === "number" ? generationRow.statistics : filled.statistics;
    for (const statement of indexGenerationStatements(tables, generation)) {
      phases.start(statement.phase);
      await client.query({ text: statement.text, query_timeout: NO_READ_TIMEOUT });
    }
    phases.start("switch");
    await client.query({
      text: `update ${s}.generations set state = 'ready', published_at = now(), layout = $2, statistics = $3
        where generation = $1`,
      values: [generation, layout, statistics],
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
 * written as already visible, so no later pass rewrites them). Lists of at least `frequentMinimum` documents (null:
 * none) are frequent (`frequentLists.ts`): numbered in the postings table, their postings also written per entry;
 * returns what was written of them (null: none).
 */
async function loadGeneration(
  client: PostgresPoolClient,
  tables: GenerationTables,
  data: GenerationData,
  phases: PublicationPhases,
  frequentMinimum: number | null,
): Promise<FrequentStatistics | null> {
  const frequentRows = frequentMinimum === null ? null : new FrequentRows(data.documentCount);
  const copy = (table: string, columns: string[], produce: (encoder: CopyEncoder) => Promise<void>) =>
    phases.run(`copy ${table.slice(table.lastIndexOf("_") + 1)}`, () =>
      copyIn(client, table, columns, produce, { freeze: true }),
    );
  await copy(tables.entries, ["doc", "id", "entry", "relations", "field_lengths"], async (encoder) => {
    for (const row of data.entryRows()) {
      await encoder.row(5);
      encoder.int4(row.doc);
      encoder.text(JSON.stringify(row.entry.id));
      encoder.text(JSON.stringify(row.entry));
      encoder.int4Array(row.relations);
      encoder.int4Array(row.fieldLengths);
    }
  });
  const postingColumns = ["term", "field", "document_frequency", "docs", "frequencies", "coded_list"];
  await copy(
    tables.postings,
    frequentRows ? [...postingColumns, "frequent", "header_bytes"] : postingColumns,
    async (encoder) => {
      for (const posting of data.postings()) {
        await encoder.row(frequentRows ? 8 : 6);
        encoder.text(encodeKey(posting.term));
        encoder.int2(posting.field);
        encoder.int4(posting.documentFrequency);
        // The arrays an incremental update reads in SQL (it recomputes every contribution, so the contributions
        // array stays null: turns read the coded lists, see `GenerationTables.postings`).
        encoder.int4Array(posting.docs);
        encoder.int4Array(posting.frequencies);
        const list = encodeWireListParts(posting.docs, posting.contributions);
        encoder.bytes(list.bytes);
        if (!frequentRows) continue;
        // BM25F's combined lists are never deferred (turns score them with their per-field lists' breakdown).
        if (
          list.codes !== null &&
          posting.docs.length >= frequentMinimum! &&
          posting.field !== COMBINED_FIELD
        ) {
          encoder.int4(frequentRows.add(posting.docs, list.codes));
          encoder.int4(list.headerBytes);
        } else {
          encoder.null();
          encoder.null();
        }
      }
    },
  );
  let frequent: FrequentStatistics | null = null;
  if (frequentRows) {
    const statements = frequentTableStatements(tables);
    for (const text of statements.create) await client.query({ text });
    await copy(tables.frequent, ["doc", "postings"], async (encoder) => {
      const rows = frequentRows.rows(frequentMinimum!);
      for (;;) {
        const next = rows.next();
        if (next.done) {
          frequent = next.value;
          break;
        }
        await encoder.row(2);
        encoder.int4(next.value.doc);
        encoder.bytes(next.value.bytes);
      }
    });
    await phases.run("index frequent", () =>
      client.query({ text: statements.index, query_timeout: NO_READ_TIMEOUT }),
    );
  }
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
  return frequent;
}
