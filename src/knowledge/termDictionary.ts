/**
 * String-to-id dictionary of index terms that can also look a term up directly from a range of ASCII source
 * text, lowercasing on the fly, without creating a string per token. Building an index touches every token of
 * every entry, and most tokens repeat, so skipping the per-token string allocation and the `Map` hashing of a
 * fresh string roughly halves indexing time. Open addressing over an Int32Array; 32-bit FNV-1a hashes.
 */
const EMPTY = 0;

/** Murmur3's finalizer: FNV-1a alone leaves the low bits (used for the slot) poorly mixed. */
function mix(hash: number): number {
  let value = hash ^ (hash >>> 16);
  value = Math.imul(value, 0x85ebca6b);
  value ^= value >>> 13;
  value = Math.imul(value, 0xc2b2ae35);
  return value ^ (value >>> 16);
}

function hashString(term: string): number {
  let hash = 0x811c9dc5;
  for (let index = 0; index < term.length; index++)
    hash = Math.imul(hash ^ term.charCodeAt(index), 0x01000193);
  return mix(hash);
}

function lowerCode(code: number): number {
  return code >= 65 && code <= 90 ? code + 32 : code;
}

export class TermDictionary {
  // Slots of two Int32s: the hash and id + 1 (0 = empty), side by side so a probe touches one cache line.
  private table = new Int32Array(2 << 12);
  private mask = (1 << 12) - 1;
  private hashes = new Int32Array(1 << 11);
  private readonly terms: string[] = [];

  /** Number of terms. */
  get size(): number {
    return this.terms.length;
  }

  /** The term of an id. */
  term(id: number): string {
    return this.terms[id]!;
  }

  /** Every term, by id. */
  allTerms(): readonly string[] {
    return this.terms;
  }

  /** Id of a term, or -1. */
  get(term: string): number {
    const hash = hashString(term);
    const stored = this.table[2 * this.slotOf(term, hash) + 1]!;
    return stored === EMPTY ? -1 : stored - 1;
  }

  /** Id of a term, adding it when new. */
  intern(term: string): number {
    const hash = hashString(term);
    const slot = this.slotOf(term, hash);
    const stored = this.table[2 * slot + 1]!;
    return stored === EMPTY ? this.insert(term, hash, slot) : stored - 1;
  }

  /** The slot holding `term`, or the empty slot where it would go. */
  private slotOf(term: string, hash: number): number {
    const table = this.table;
    let slot = hash & this.mask;
    for (;;) {
      const stored = table[2 * slot + 1]!;
      if (stored === EMPTY || (table[2 * slot] === hash && this.terms[stored - 1] === term)) return slot;
      slot = (slot + 1) & this.mask;
    }
  }

  /**
   * Id of the lowercased ASCII text `source[start, end)`, adding it when new. The range must hold only ASCII
   * letters and digits (what the ASCII tokenizer produces).
   */
  internRange(source: string, start: number, end: number): number {
    let hash = 0x811c9dc5;
    for (let index = start; index < end; index++)
      hash = Math.imul(hash ^ lowerCode(source.charCodeAt(index)), 0x01000193);
    hash = mix(hash);
    const length = end - start;
    const table = this.table;
    let slot = hash & this.mask;
    for (;;) {
      const stored = table[2 * slot + 1]!;
      if (stored === EMPTY) return this.insert(source.slice(start, end).toLowerCase(), hash, slot);
      const id = stored - 1;
      if (table[2 * slot] === hash) {
        const candidate = this.terms[id]!;
        if (candidate.length === length) {
          let same = true;
          for (let offset = 0; offset < length; offset++) {
            if (candidate.charCodeAt(offset) !== lowerCode(source.charCodeAt(start + offset))) {
              same = false;
              break;
            }
          }
          if (same) return id;
        }
      }
      slot = (slot + 1) & this.mask;
    }
  }

  private insert(term: string, hash: number, slot: number): number {
    const id = this.terms.length;
    this.terms.push(term);
    if (id >= this.hashes.length) {
      const grown = new Int32Array(this.hashes.length * 2);
      grown.set(this.hashes);
      this.hashes = grown;
    }
    this.hashes[id] = hash;
    this.table[2 * slot] = hash;
    this.table[2 * slot + 1] = id + 1;
    // Keep the load factor under one half so probes stay short.
    if (this.terms.length * 2 > this.mask + 1) this.grow();
    return id;
  }

  private grow(): void {
    const slots = (this.mask + 1) * 2;
    const table = new Int32Array(slots * 2);
    const mask = slots - 1;
    for (let id = 0; id < this.terms.length; id++) {
      const hash = this.hashes[id]!;
      let slot = hash & mask;
      while (table[2 * slot + 1] !== EMPTY) slot = (slot + 1) & mask;
      table[2 * slot] = hash;
      table[2 * slot + 1] = id + 1;
    }
    this.table = table;
    this.mask = mask;
  }
}
