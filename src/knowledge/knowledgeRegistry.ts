/**
 * The engine's registry for incremental updates: the entries that serve, grouped by source, with where each id
 * lives. Created from validated source groups or from an artifact's entries; changed only by {@link commitChange},
 * once a change planned in `registryChanges.ts` went live.
 */
import type { KnowledgeEntryInput, KnowledgeSource, NormalizedKnowledgeEntry } from "../types/knowledge.js";
import type { PlannedChange } from "./registryChanges.js";
import type { NormalizedSourceGroup } from "./resolve.js";
import { yieldToEventLoop } from "./runtime.js";

/**
 * One source of the registry: its id, version and entries by id, in order (a replaced entry keeps its place). An
 * entry given as `undefined` is unchanged since the registry was created from an artifact: it is read from
 * {@link KnowledgeRegistry.baseEntries} (decoded on demand) when the registry's sources are materialized.
 */
export type RegistrySource = {
  id: string;
  version: string;
  entries: Map<string, NormalizedKnowledgeEntry | undefined>;
};

/** The entries that serve, grouped by source, with an index of where each id lives. */
export type KnowledgeRegistry = {
  sources: RegistrySource[];
  /** Entry id → index of its source. */
  sourceOf: Map<string, number>;
  /** Unicode-normalized (NFC) id → id, for the ids that are not in NFC themselves (rare). */
  canonicalTwins: Map<string, string>;
  /** The entries of a registry created from an artifact (what `undefined` entries of its sources stand for). */
  baseEntries?: ReadonlyMap<string, NormalizedKnowledgeEntry>;
};

/** Entries indexed between two yields while the registry is first built. */
const ENTRIES_PER_SLICE = 4096;

/** The registry of validated source groups (built once, yielding to the event loop between slices). */
export async function createRegistry(groups: readonly NormalizedSourceGroup[]): Promise<KnowledgeRegistry> {
  const registry: KnowledgeRegistry = { sources: [], sourceOf: new Map(), canonicalTwins: new Map() };
  let handled = 0;
  for (const group of groups) {
    const source: RegistrySource = { id: group.id, version: group.version, entries: new Map() };
    const index = registry.sources.push(source) - 1;
    for (const entry of group.entries) {
      source.entries.set(entry.id, entry);
      registry.sourceOf.set(entry.id, index);
      const canonical = entry.id.normalize("NFC");
      if (canonical !== entry.id) registry.canonicalTwins.set(canonical, entry.id);
      if (++handled % ENTRIES_PER_SLICE === 0) await yieldToEventLoop();
    }
  }
  return registry;
}

/**
 * The registry of an engine started from a self-contained artifact alone, which holds one source: every entry id
 * of the artifact (in `entries`, read lazily: an entry is decoded only when the registry's sources are
 * materialized) lives in it. An artifact of several sources does not say which source each entry belongs to, so
 * it gives no registry (null). Yields to the event loop between slices.
 */
export async function createArtifactRegistry(
  sources: readonly { id: string; version: string }[],
  entries: ReadonlyMap<string, NormalizedKnowledgeEntry>,
): Promise<KnowledgeRegistry | null> {
  if (sources.length !== 1) return null;
  const source: RegistrySource = { id: sources[0]!.id, version: sources[0]!.version, entries: new Map() };
  const registry: KnowledgeRegistry = {
    sources: [source],
    sourceOf: new Map(),
    canonicalTwins: new Map(),
    baseEntries: entries,
  };
  let handled = 0;
  for (const id of entries.keys()) {
    source.entries.set(id, undefined);
    registry.sourceOf.set(id, 0);
    const canonical = id.normalize("NFC");
    if (canonical !== id) registry.canonicalTwins.set(canonical, id);
    if (++handled % ENTRIES_PER_SLICE === 0) await yieldToEventLoop();
  }
  return registry;
}

/** The registry's entries by source (an artifact's unchanged entries decoded now). */
export function registryGroups(registry: KnowledgeRegistry): NormalizedSourceGroup[] {
  return registry.sources.map((source) => ({
    id: source.id,
    version: source.version,
    entries: Array.from(source.entries, ([id, entry]) => entry ?? registry.baseEntries!.get(id)!),
  }));
}

/** The registry as sources (what a full build of it reads). */
export function registrySources(registry: KnowledgeRegistry): KnowledgeSource[] {
  return registryGroups(registry).map((group) => ({
    ...group,
    entries: group.entries as KnowledgeEntryInput[],
  }));
}

/** Applies a planned (valid) change to the registry. */
export function commitChange(registry: KnowledgeRegistry, change: PlannedChange): void {
  for (const id of change.removed) {
    const home = registry.sourceOf.get(id);
    if (home === undefined) continue;
    registry.sources[home]!.entries.delete(id);
    registry.sourceOf.delete(id);
    const canonical = id.normalize("NFC");
    if (canonical !== id) registry.canonicalTwins.delete(canonical);
  }
  for (const { entry, source } of change.upserted) {
    let index: number;
    if (typeof source === "number") index = source;
    else {
      index = registry.sources.findIndex((candidate) => candidate.id === source.id);
      if (index < 0)
        index = registry.sources.push({ id: source.id, version: source.version, entries: new Map() }) - 1;
    }
    registry.sources[index]!.entries.set(entry.id, entry);
    registry.sourceOf.set(entry.id, index);
    const canonical = entry.id.normalize("NFC");
    if (canonical !== entry.id) registry.canonicalTwins.set(canonical, entry.id);
  }
}
