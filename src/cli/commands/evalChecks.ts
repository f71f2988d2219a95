/** `lexground eval`'s check of the judged ids against the knowledge base, and the warnings it prints. */
import type { EvalCollection } from "../../eval/collection.js";

/** Expected (judged relevant) ids the knowledge base cannot return, with the queries that expect them. */
export type ExpectedIdCheck = {
  /** Ids no entry has. */
  unknown: { id: string; queries: string[] }[];
  /** Ids of draft or deprecated entries, which retrieval never returns. */
  notRetrievable: { id: string; status: string; queries: string[] }[];
  /** Queries none of whose relevant ids can be retrieved: they score 0 in every configuration. */
  unanswerable: string[];
};

/** Checks every relevant id of the judged queries against the knowledge base's entries and their status. */
export function checkExpectedIds(
  collection: Pick<EvalCollection, "entries" | "queries" | "qrels">,
): ExpectedIdCheck {
  const status = new Map(collection.entries.map((entry) => [entry.id, entry.status]));
  const unknown = new Map<string, string[]>();
  const notRetrievable = new Map<string, { status: string; queries: string[] }>();
  const unanswerable: string[] = [];
  for (const query of collection.queries) {
    const judgments = collection.qrels.get(query.id);
    if (!judgments) continue;
    let answerable = false;
    let relevant = 0;
    for (const [id, grade] of judgments) {
      if (grade <= 0) continue;
      relevant++;
      const entryStatus = status.get(id);
      if (entryStatus === undefined) {
        const queries = unknown.get(id) ?? [];
        queries.push(query.id);
        unknown.set(id, queries);
      } else if (entryStatus !== "active") {
        const found = notRetrievable.get(id) ?? { status: entryStatus, queries: [] };
        found.queries.push(query.id);
        notRetrievable.set(id, found);
      } else {
        answerable = true;
      }
    }
    if (relevant > 0 && !answerable) unanswerable.push(query.id);
  }
  return {
    unknown: [...unknown].map(([id, queries]) => ({ id, queries })),
    notRetrievable: [...notRetrievable].map(([id, found]) => ({ id, ...found })),
    unanswerable,
  };
}

/** Ids listed per warning line; the JSON output has them all. */
const WARNING_IDS_SHOWN = 5;

function listed<T>(items: T[], show: (item: T) => string): string {
  const shown = items.slice(0, WARNING_IDS_SHOWN).map(show).join(", ");
  return items.length > WARNING_IDS_SHOWN ? `${shown}, … ${items.length - WARNING_IDS_SHOWN} more` : shown;
}

/** The warning lines `eval` prints on stderr for {@link ExpectedIdCheck} (none when every expected id is fine). */
export function expectedIdWarnings(check: ExpectedIdCheck): string[] {
  const lines: string[] = [];
  const queriesOf = (queries: string[]) =>
    queries.length > 3 ? `${queries.slice(0, 3).join(", ")}, …` : queries.join(", ");
  if (check.unknown.length > 0) {
    lines.push(
      `${check.unknown.length} expected id${check.unknown.length === 1 ? " is" : "s are"} not in the knowledge base (a typo, or a removed entry): ${listed(check.unknown, (item) => `${item.id} (${queriesOf(item.queries)})`)}`,
    );
  }
  if (check.notRetrievable.length > 0) {
    lines.push(
      `${check.notRetrievable.length} expected id${check.notRetrievable.length === 1 ? " is" : "s are"} draft or deprecated, never retrieved: ${listed(check.notRetrievable, (item) => `${item.id} (${item.status}; ${queriesOf(item.queries)})`)}`,
    );
  }
  if (check.unanswerable.length > 0) {
    lines.push(
      `${check.unanswerable.length} quer${check.unanswerable.length === 1 ? "y has" : "ies have"} no retrievable expected entry and score 0 in every configuration: ${listed(check.unanswerable, (id) => id)}`,
    );
  }
  return lines;
}
