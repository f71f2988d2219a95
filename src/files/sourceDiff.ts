/** Comparing two reads of a knowledge base, so that a watcher applies only what changed (see `watch.ts`). */
import type { KnowledgeSource } from "../types/knowledge.js";

/**
 * The entries that differ between two reads of a knowledge base: per source, the entries that are new or changed
 * (compared by their JSON text) and the ids that are gone, with a map from the paths of the upsert's issues back
 * to the paths of the full read (so they locate at `file:line`). Null when the sources themselves changed (a source
 * added, removed, reordered or re-versioned): then the whole set is rebuilt.
 */
export function diffSources(
  previous: readonly KnowledgeSource[],
  next: readonly KnowledgeSource[],
): {
  upsert: KnowledgeSource[];
  remove: string[];
  originalPath: (path: string | undefined) => string | undefined;
} | null {
  if (previous.length !== next.length) return null;
  const upsert: KnowledgeSource[] = [];
  const remove: string[] = [];
  const origins: [number, number][][] = [];
  const nextIds = new Set<string>();
  for (const source of next) for (const entry of source.entries) nextIds.add(entry.id);
  for (let index = 0; index < next.length; index++) {
    const before = previous[index]!;
    const after = next[index]!;
    if (before.id !== after.id || before.version !== after.version) return null;
    const known = new Map(before.entries.map((entry) => [entry.id, entry]));
    const changed: KnowledgeSource["entries"] = [];
    const changedOrigins: [number, number][] = [];
    after.entries.forEach((entry, entryIndex) => {
      const old = known.get(entry.id);
      if (old === undefined || JSON.stringify(old) !== JSON.stringify(entry)) {
        changed.push(entry);
        changedOrigins.push([index, entryIndex]);
      }
    });
    for (const entry of before.entries) if (!nextIds.has(entry.id)) remove.push(entry.id);
    if (changed.length > 0) {
      upsert.push({
        id: after.id,
        ...(after.version === undefined ? {} : { version: after.version }),
        entries: changed,
      });
      origins.push(changedOrigins);
    }
  }
  // An entry that moved to another source is removed there and upserted here, in the same change.
  const previousHome = new Map<string, string>();
  for (const source of previous) for (const entry of source.entries) previousHome.set(entry.id, source.id);
  for (const source of upsert)
    for (const entry of source.entries) {
      const home = previousHome.get(entry.id);
      if (home !== undefined && home !== source.id && !remove.includes(entry.id)) remove.push(entry.id);
    }
  return {
    upsert,
    remove,
    originalPath: (path) => {
      const match = path?.match(/^sources\[(\d+)\]\.entries\[(\d+)\](.*)$/);
      const origin = match ? origins[Number(match[1])]?.[Number(match[2])] : undefined;
      return origin && match ? `sources[${origin[0]}].entries[${origin[1]}]${match[3]}` : path;
    },
  };
}
