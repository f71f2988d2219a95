/**
 * Eligibility of a generation's entries per scope, computed in the app: the generation's scope lists are read
 * once (entries not eligible everywhere, active entries per integration, entries per domain, as the in-memory
 * engine's precomputed lists), and each scope's mask is kept for the next turns with that scope.
 */
import type { KnowledgeCandidateQuery } from "../knowledge/searchBackend.js";
import type { PostgresBackend } from "./backend.js";
import type { GenerationRow } from "./serving.js";
import { encodeKey, SCOPE_DOMAIN, SCOPE_INTEGRATION, SCOPE_RESTRICTED } from "./sql.js";

/**
 * Bytes of eligibility masks kept per generation (one byte per entry per scope), between 4 and 64 scopes: 41 scopes
 * at 100k entries, 4 at a million (a count of 16 held 16 MB there, of a reader's heap meant to stay under 100 MB).
 * A scope not kept costs a copy of the generation's base mask and its own lists, not a pass over every entry.
 */
const MASK_CACHE_BYTES = 4 * 1024 * 1024;
const MIN_MASKS = 4;
const MAX_MASKS = 64;

/** The scope lists of a generation (read once), as the in-memory engine's precomputed lists. */
type ScopeLists = {
  restricted: Int32Array;
  /** Every entry eligible but the restricted ones: the start of every scope's mask (a copy, not a pass). */
  base: Uint8Array;
  byIntegration: Map<string, Int32Array>;
  byDomain: Map<string, Int32Array>;
};

/** One scope's eligibility by dense id. */
export type EligibilityMask = {
  /** 1 = eligible, 0 = not, per dense id. */
  bytes: Uint8Array;
};

/** The eligibility masks of one generation. */
export class GenerationEligibility {
  private scopes: Promise<ScopeLists> | null = null;
  private readonly masks = new Map<string, EligibilityMask>();

  constructor(
    private readonly backend: PostgresBackend,
    private readonly generation: GenerationRow,
    private readonly scopesText: string,
    private readonly statementName: (kind: string) => string,
  ) {}

  /** The scope lists of this generation, read on first use. */
  private scopeLists(): Promise<ScopeLists> {
    if (!this.scopes) {
      this.scopes = this.backend
        .read({ name: this.statementName("scopes"), text: this.scopesText })
        .then((result) => {
          const lists: ScopeLists = {
            restricted: new Int32Array(0),
            base: new Uint8Array(this.generation.entryCount).fill(1),
            byIntegration: new Map(),
            byDomain: new Map(),
          };
          for (const row of result.rows) {
            const docs = Int32Array.from(row.docs as unknown[], Number);
            const kind = Number(row.kind);
            if (kind === SCOPE_RESTRICTED) lists.restricted = docs;
            else if (kind === SCOPE_INTEGRATION) lists.byIntegration.set(String(row.key), docs);
            else if (kind === SCOPE_DOMAIN) lists.byDomain.set(String(row.key), docs);
          }
          for (const doc of lists.restricted) lists.base[doc] = 0;
          return lists;
        });
      this.scopes.catch(() => {
        this.scopes = null;
      });
    }
    return this.scopes;
  }

  /**
   * Eligibility by dense id for the query's scope: restricted entries are out unless active and bound to an
   * enabled integration; entries of blocked domains are out (the in-memory engine's rule). Cached per scope.
   */
  async mask(query: KnowledgeCandidateQuery): Promise<EligibilityMask> {
    const enabled = [...query.enabledIntegrations].map(encodeKey).sort();
    const blocked = [...query.blockedDomains].map(encodeKey).sort();
    const key = JSON.stringify([enabled, blocked]);
    const cached = this.masks.get(key);
    if (cached) {
      this.masks.delete(key);
      this.masks.set(key, cached);
      return cached;
    }
    const lists = await this.scopeLists();
    // The benchmark's 300 queries have 62 scopes, more than the masks kept: a scope's mask is often made again.
    const bytes = lists.base.slice();
    for (const integration of enabled)
      for (const doc of lists.byIntegration.get(integration) ?? []) bytes[doc] = 1;
    for (const domain of blocked) for (const doc of lists.byDomain.get(domain) ?? []) bytes[doc] = 0;
    const mask = { bytes };
    this.masks.set(key, mask);
    const kept = Math.min(
      MAX_MASKS,
      Math.max(MIN_MASKS, Math.floor(MASK_CACHE_BYTES / Math.max(1, bytes.byteLength))),
    );
    while (this.masks.size > kept) this.masks.delete(this.masks.keys().next().value!);
    return mask;
  }
}
