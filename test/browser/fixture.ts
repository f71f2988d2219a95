/**
 * A small knowledge base used by the runtime tests: in Node, and bundled for the browser. Its text includes
 * non-ASCII letters, an emoji and a lone surrogate, so the cache key covers every UTF-8 encoding path.
 */
import type { KnowledgeSource } from "../../src/index.js";

export const RUNTIME_SOURCES: KnowledgeSource[] = [
  {
    id: "help-center",
    version: "2026-07-14",
    entries: [
      {
        id: "payouts.instant",
        title: "Instant payouts",
        summary: "Send a payout to a debit card within minutes.",
        domain: "payouts",
        integrations: [],
        aliases: ["payouts.instantEnabled"],
        keywords: ["débit", "carte"],
        body: "Turn on in Settings → Payouts. Fees apply 💸. Stray half: \uD800.",
      },
      {
        id: "payouts.schedule",
        title: "Payout schedule",
        summary: "Standard payouts arrive in two business days.",
        domain: "payouts",
        integrations: [],
        relatedEntryIds: ["payouts.instant"],
        body: "Choose daily, weekly or monthly payouts. Zürich and 東京 accounts follow local bank holidays.",
      },
      {
        id: "refunds.partial",
        title: "Partial refunds",
        summary: "Refund part of a charge from the dashboard.",
        domain: "refunds",
        integrations: ["dashboard"],
        body: "Open the charge, choose Refund, and enter an amount below the original.",
      },
    ],
  },
];

/** The grounded question both runtimes answer. */
export const RUNTIME_QUERY = "what does payouts.instantEnabled do?";
