/**
 * A small knowledge base for the integration tests: relations (instant payouts → eligible cards, payout schedule), an
 * integration-bound entry (Shopify), and an internal domain that an engine can block.
 */
import {
  type KnowledgeGroundingConfig,
  KnowledgeGroundingEngine,
  type KnowledgeGroundingInput,
  type KnowledgeGroundingOutcome,
  type KnowledgeSource,
} from "../../src/index.js";
import type { KnowledgeEngineLike } from "../../src/integrations/engine.js";

export const helpCenter: KnowledgeSource = {
  id: "help-center",
  version: "7",
  entries: [
    {
      id: "payouts.instant-payouts",
      title: "Instant Payouts",
      summary: "Instant payouts send available funds to a debit card within minutes for a 1% fee.",
      domain: "payouts",
      integrations: [],
      kind: "configuration",
      body: "Turn on payouts.instantEnabled in Settings → Payouts. Instant payouts are limited to 10,000 USD a day.",
      aliases: ["payouts.instantEnabled"],
      keywords: ["instant", "debit card"],
      relatedEntryIds: ["payouts.eligible-cards", "payouts.payout-schedule"],
    },
    {
      id: "payouts.eligible-cards",
      title: "Eligible Cards",
      summary: "Only Visa and Mastercard debit cards issued in the US qualify.",
      domain: "payouts",
      integrations: [],
      kind: "text",
    },
    {
      id: "payouts.payout-schedule",
      title: "Payout Schedule",
      summary: "Standard payouts run daily, weekly or monthly depending on payouts.interval.",
      domain: "payouts",
      integrations: [],
      kind: "configuration",
      aliases: ["payouts.interval"],
    },
    {
      id: "payments.refund-a-payment",
      title: "Refund a Payment",
      summary: "Refund a captured payment in full or in part from the payment's page.",
      domain: "payments",
      integrations: [],
      kind: "procedure",
      body: "Open the payment, choose Refund, enter the amount and a reason. Refunds take 5-10 days to appear.",
      keywords: ["refund", "money back"],
    },
    {
      id: "integrations.shopify-refunds-not-syncing",
      title: "Shopify Refunds Not Syncing",
      summary: "Refunds made in Shopify appear in Kestrel only when the refund sync permission is granted.",
      domain: "integrations",
      integrations: ["shopify"],
      kind: "troubleshooting",
      body: "Reinstall the Shopify app and grant the write_refunds permission, then retry the refund sync.",
      keywords: ["refund", "sync", "shopify"],
    },
    {
      id: "security.two-factor-authentication",
      title: "Two-Factor Authentication",
      summary: "Require a second factor at sign-in for every team member.",
      domain: "security",
      integrations: [],
      kind: "policy",
      aliases: ["security.requireTwoFactor"],
    },
  ],
};

export const runbooks: KnowledgeSource = {
  id: "runbooks",
  version: "3",
  entries: [
    {
      id: "runbooks.refund-override",
      title: "Refund Override Console",
      summary: "Internal: force a refund through when the dashboard refuses it.",
      domain: "internal-runbooks",
      integrations: [],
      kind: "procedure",
      keywords: ["refund", "override", "payment"],
    },
  ],
};

export const config: KnowledgeGroundingConfig = { enabled: true, sources: [helpCenter, runbooks] };

/** A ready engine over the fixture knowledge base. */
export async function readyEngine(
  overrides: Partial<KnowledgeGroundingConfig> = {},
): Promise<KnowledgeGroundingEngine> {
  const engine = new KnowledgeGroundingEngine({ ...config, ...overrides });
  await engine.ready();
  return engine;
}

/** Wraps an engine and records every `ground()` input, so tests can count retrievals and see what was asked. */
export function recordingEngine(inner: KnowledgeGroundingEngine): KnowledgeEngineLike & {
  inputs: KnowledgeGroundingInput[];
  outcomes: KnowledgeGroundingOutcome[];
} {
  const inputs: KnowledgeGroundingInput[] = [];
  const outcomes: KnowledgeGroundingOutcome[] = [];
  return {
    inputs,
    outcomes,
    async ground(input) {
      inputs.push(structuredClone(input));
      const outcome = await inner.ground(input);
      outcomes.push(outcome);
      return outcome;
    },
    getSnapshot: () => inner.getSnapshot(),
    getResolvedRetrieval: () => inner.getResolvedRetrieval(),
  };
}
