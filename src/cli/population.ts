/**
 * Who a knowledge base serves: its entries by status and by scope (domain and integrations), counted from the
 * entries or from an artifact's scope lists, and what a turn's scope excludes.
 */
import { KNOWLEDGE_STATUSES } from "../knowledge/defaults.js";
import { getCompiledSnapshot } from "../knowledge/knowledgeIndex.js";
import type {
  KnowledgeIndexSnapshot,
  KnowledgeStatus,
  NormalizedKnowledgeEntry,
} from "../types/knowledge.js";

export type { CliGroundingConfig } from "./config.js";

import type { PreparedKnowledgeBase } from "./session.js";

/** Active entries that share a domain and a set of integrations (lowercased, sorted). */
export type KnowledgeScopeGroup = { domain: string; integrations: string[]; count: number };

/** The knowledge base's entries counted by what decides whether a turn may retrieve them. */
export type KnowledgePopulation = {
  statuses: Record<KnowledgeStatus, number>;
  /** Active entries grouped by (domain, integrations): a scope's exclusions are counted per group, not per entry. */
  scopeGroups: KnowledgeScopeGroup[];
};

/** Counts the entries per status and groups the active ones by scope, once per knowledge base. */
export function countPopulation(entries: readonly NormalizedKnowledgeEntry[]): KnowledgePopulation {
  const statuses: Record<KnowledgeStatus, number> = { active: 0, draft: 0, deprecated: 0 };
  const groups = new Map<string, KnowledgeScopeGroup>();
  for (const entry of entries) {
    statuses[entry.status] += 1;
    if (entry.status !== "active") continue;
    const integrations = [...new Set(entry.integrations.map((name) => name.toLowerCase()))].sort();
    const key = JSON.stringify([entry.domain, integrations]);
    const group = groups.get(key);
    if (group) group.count += 1;
    else groups.set(key, { domain: entry.domain, integrations, count: 1 });
  }
  return { statuses, scopeGroups: [...groups.values()] };
}

const populations = new WeakMap<PreparedKnowledgeBase, KnowledgePopulation>();

/** The population of a prepared knowledge base, counted on first use (a cold start that never asks pays nothing). */
export function populationOf(prepared: PreparedKnowledgeBase): KnowledgePopulation {
  let population = populations.get(prepared);
  if (!population) {
    population = countPopulation(prepared.entries);
    populations.set(prepared, population);
  }
  return population;
}

/** Records the population of a knowledge base counted without its entries (an artifact's, from its scope lists). */
export function setPopulation(prepared: PreparedKnowledgeBase, population: KnowledgePopulation): void {
  populations.set(prepared, population);
}

/** How many entries a turn could never retrieve, and why. */
export type KnowledgeExclusions = {
  draft: number;
  deprecated: number;
  /** Active entries in a blocked domain. */
  blockedDomain: number;
  /** Active entries, outside blocked domains, bound only to integrations the turn does not enable. */
  integrations: number;
};

/**
 * Counts what a scope excludes from the precomputed population: one pass over the scope groups (a handful for a
 * typical knowledge base), never over the entries, and never in the engine's retrieval path.
 */
export function countExclusions(
  population: KnowledgePopulation,
  scope: { enabledIntegrations: readonly string[]; blockedDomains: readonly string[] },
): KnowledgeExclusions {
  const enabled = new Set(scope.enabledIntegrations.map((name) => name.toLowerCase()));
  const blocked = new Set(scope.blockedDomains);
  let blockedDomain = 0;
  let integrations = 0;
  for (const group of population.scopeGroups) {
    if (blocked.has(group.domain)) blockedDomain += group.count;
    else if (group.integrations.length > 0 && !group.integrations.some((name) => enabled.has(name)))
      integrations += group.count;
  }
  return {
    draft: population.statuses.draft,
    deprecated: population.statuses.deprecated,
    blockedDomain,
    integrations,
  };
}

/**
 * The population of a loaded artifact from its scope lists (which entries are active, in which domain, bound to
 * which integrations) and its status counts, without decoding any entry.
 */
export function artifactPopulation(
  snapshot: KnowledgeIndexSnapshot,
  statusCounts: Record<KnowledgeStatus, number> | undefined,
): KnowledgePopulation | undefined {
  const compiled = getCompiledSnapshot(snapshot);
  if (!compiled || typeof statusCounts !== "object" || statusCounts === null) return undefined;
  if (!KNOWLEDGE_STATUSES.every((status) => Number.isSafeInteger(statusCounts[status]))) return undefined;
  const count = snapshot.entryCount;
  const domainOf: string[] = new Array(count);
  for (const [domain, docs] of compiled.byDomain) for (const doc of docs) domainOf[doc] = domain;
  const integrationsOf: string[][] = new Array(count);
  for (const [integration, docs] of compiled.activeByIntegration) {
    for (const doc of docs) {
      const list = integrationsOf[doc];
      if (list) list.push(integration);
      else integrationsOf[doc] = [integration];
    }
  }
  const groups = new Map<string, KnowledgeScopeGroup>();
  for (let doc = 0; doc < count; doc++) {
    const bound = integrationsOf[doc];
    if (compiled.universalMask[doc] !== 1 && !bound) continue;
    const integrations = bound ? [...bound].sort() : [];
    const key = JSON.stringify([domainOf[doc], integrations]);
    const group = groups.get(key);
    if (group) group.count += 1;
    else groups.set(key, { domain: domainOf[doc]!, integrations, count: 1 });
  }
  return { statuses: { ...statusCounts }, scopeGroups: [...groups.values()] };
}
