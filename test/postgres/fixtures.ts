/** The small registry and query the PostgreSQL fleet and replica tests publish and ask. */
import type { KnowledgeSource } from "../../src/index.js";

/** Two related payout entries as one source at `version`; `title` renames the first (a changed generation). */
export function sources(version: string, title = "Instant payouts"): KnowledgeSource[] {
  return [
    {
      id: "help",
      version,
      entries: [
        {
          id: "payouts.instant",
          title,
          summary: "Send a payout to a debit card within minutes.",
          domain: "payouts",
          integrations: [],
          relatedEntryIds: ["payouts.schedule"],
        },
        {
          id: "payouts.schedule",
          title: "Payout schedule",
          summary: "Payouts run daily, weekly or monthly.",
          domain: "payouts",
          integrations: [],
        },
      ],
    },
  ];
}

/** A query both entries answer. */
export const QUERY = { query: "instant payouts" };
