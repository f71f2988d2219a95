/** A small knowledge registry for the client tests (same shape as SPEC §14's fixtures). */
import type { KnowledgeSource } from "../../../src/index.js";
import type { NeuroLinkLogger } from "../../../src/neurolink/index.js";

export const settingsSource: KnowledgeSource = {
  id: "account-settings",
  version: "1",
  entries: [
    {
      id: "settings.multi-step-flow",
      title: "Multi-Step Flow",
      summary: "Controls whether guided workflow steps are shown to new accounts.",
      domain: "account-settings",
      integrations: ["integration-a"],
      kind: "configuration",
      body: "When on, onboarding is split into guided workflow steps.",
      aliases: ["enableMultiStepFlow"],
      relatedEntryIds: ["settings.progress-indicator"],
    },
    {
      id: "settings.progress-indicator",
      title: "Progress Indicator",
      summary: "Shows a progress bar during onboarding.",
      domain: "account-settings",
      integrations: [],
      kind: "configuration",
    },
  ],
};

export const policiesSource: KnowledgeSource = {
  id: "access-policies",
  version: "1",
  entries: [
    {
      id: "access.policy-types",
      title: "Policy Types",
      summary: "The kinds of access policy an administrator can assign.",
      domain: "access-policies",
      integrations: [],
      kind: "policy",
      body: "There are three policy types: owner, editor and viewer.",
    },
  ],
};

export const SOURCES: KnowledgeSource[] = [settingsSource, policiesSource];

/** A query that grounds on the multi-step-flow entry with scope integration-a. */
export const GROUNDED_QUERY = "How do I enable multi step flow?";
export const SCOPE = { enabledIntegrations: ["integration-a"] };

/** A logger that records instead of printing. */
export function recordingLogger(): NeuroLinkLogger & { warnings: unknown[][]; debugs: unknown[][] } {
  const warnings: unknown[][] = [];
  const debugs: unknown[][] = [];
  return {
    warnings,
    debugs,
    warn: (...args: unknown[]) => {
      warnings.push(args);
    },
    debug: (...args: unknown[]) => {
      debugs.push(args);
    },
  };
}
