/**
 * The exact and alias phrase keys of a snapshot as a trie over their tokens, so that phrase lookup stops
 * extending a query n-gram as soon as no key starts with it: the work is bounded by the prefixes that actually
 * match, never by the length of the longest key (SPEC §5; the straightforward lookup built and hashed every n-gram
 * up to that length, quadratic in the query).
 *
 * Layout (compact at 100k entries, where about 300k keys have about 900k distinct token prefixes but only about
 * 40k of those prefixes are shared by two or more keys): a node exists only for a prefix shared by at least two
 * keys (the root is the empty prefix). Below a node, the next tokens are edges in one open-addressing table of
 * Int32 triples. An edge leads either to the node of a longer shared prefix or, when a single key continues that
 * way, straight to that key ("collapsed leaf"): the rest of the path is read from the key string itself. Tokens
 * are never stored: an edge's token is read from a key under it, at the character offset of its parent's prefix.
 */
import { buildInt32Array } from "./buildMemory.js";
import type { TableBlocks } from "./termDictionary.js";

/** Int32s per edge slot: token hash, parent node + 1 (0 = empty slot), target (node id, or `~keyIndex` for a leaf). */
const SLOT = 3;
const SPACE = 32;
const FNV_OFFSET = 0x811c9dc5;
const FNV_PRIME = 0x01000193;
const GOLDEN = 0x9e3779b1;

/** Hash of the characters `text[start, end)` (FNV-1a, then Murmur3's finalizer for well-mixed low bits). */
function hashRange(text: string, start: number, end: number): number {
  let hash = FNV_OFFSET;
  for (let index = start; index < end; index++) hash = Math.imul(hash ^ text.charCodeAt(index), FNV_PRIME);
  hash ^= hash >>> 16;
  hash = Math.imul(hash, 0x85ebca6b);
  hash ^= hash >>> 13;
  hash = Math.imul(hash, 0xc2b2ae35);
  return hash ^ (hash >>> 16);
}

/** First slot of the edge (parent, token hash). */
function slotOf(tokenHash: number, parent: number, mask: number): number {
  let mixed = Math.imul(tokenHash ^ Math.imul(parent + 1, GOLDEN), 0x85ebca6b);
  mixed ^= mixed >>> 15;
  return mixed & mask;
}

/** Whether `key[offset…]` starts with `text[start, end)` followed by a space or the end of the key. */
function tokenAt(key: string, offset: number, text: string, start: number, end: number): boolean {
  const length = end - start;
  if (key.length < offset + length) return false;
  if (key.length > offset + length && key.charCodeAt(offset + length) !== SPACE) return false;
  for (let index = 0; index < length; index++)
    if (key.charCodeAt(offset + index) !== text.charCodeAt(start + index)) return false;
  return true;
}

/** The arrays of a finished {@link PhraseTrie} (see {@link PhraseTrie.exportParts}). */
export type PhraseTrieParts = {
  /** Every key, by index. */
  keys: readonly string[];
  nodePrefixLength: Int32Array;
  nodeKey: Int32Array;
  nodeSample: Int32Array;
  /** The edge table (Int32 triples); its length is a power of two times three. */
  table: Int32Array;
  edgeCount: number;
};

/**
 * Phrase keys (strings of tokens joined by single spaces) in a token trie; see the module comment. Keys are
 * added one by one, each distinct key once; a query's matching phrases come from {@link PhraseTrie.match}.
 */
export class PhraseTrie {
  /**
   * The keys by index, in insertion order. A trie loaded from parts fills it only when a key is first added
   * (updates: holes decoded on demand from {@link decodeKey}); until then its keys are {@link loadedKeys}.
   */
  private keys: string[] = [];
  /** Decodes a key that is not in {@link keys} yet (a trie loaded from an artifact), or null. */
  private decodeKey: ((index: number) => string) | null = null;
  /**
   * A loaded trie's keys decoded so far, by index, until a key is added: a turn reads a few of them, and an array
   * of every index (31,488 at 10,000 entries, 250 KB; 25 MB at a million) was allocated and cleared at load.
   */
  private loadedKeys: { count: number; decoded: Map<number, string> } | null = null;
  /** Per node: characters of its prefix including the separating space after it (0 for the root). */
  private nodePrefixLength: Int32Array<ArrayBufferLike> = new Int32Array(64);
  /** Per node: index of the key equal to its prefix, or -1. */
  private nodeKey: Int32Array<ArrayBufferLike> = new Int32Array(64).fill(-1);
  /** Per node: index of some key under it (its edge token is read from that key). */
  private nodeSample: Int32Array<ArrayBufferLike> = new Int32Array(64);
  private nodeCount = 1;
  private table: Int32Array<ArrayBufferLike> = new Int32Array(SLOT << 10);
  private mask = (1 << 10) - 1;
  private edgeCount = 0;
  /**
   * Set while the edge table is a loaded artifact's, not yet checked whole (see {@link fromParts}): the error a walk
   * throws when an edge it reads points nowhere. Cleared when the table is checked, before the first key is added.
   */
  private loadedCorrupt: ((message: string) => Error) | null = null;
  /**
   * Set while the edge table is a loaded artifact's read a block at a time (format 5): a walk reads the block of
   * each slot it probes first (see {@link fromParts}).
   */
  private loadedBlocks: TableBlocks | null = null;

  /** Number of keys. */
  get size(): number {
    return this.loadedKeys ? this.loadedKeys.count : this.keys.length;
  }

  /** Adds a key (`""` is ignored: it is no query n-gram); a key added before is not added again. */
  add(key: string): void {
    this.intern(key);
  }

  /**
   * The index of `key`, adding it first when it is not a key yet (indices follow the order keys were first added);
   * -1 for `""`. One walk down the trie whichever the case, so a build files its keys without a second lookup.
   */
  intern(key: string): number {
    if (key === "") return -1;
    if (this.loadedCorrupt) this.checkLoadedEdges(this.loadedCorrupt);
    if (this.loadedKeys) this.keysForAdding(this.loadedKeys);
    const keyIndex = this.keys.length;
    let node = 0;
    let start = 0;
    for (;;) {
      let end = key.indexOf(" ", start);
      if (end < 0) end = key.length;
      const tokenHash = hashRange(key, start, end);
      const slot = this.findSlot(node, tokenHash, key, start, end);
      const table = this.table;
      if (table[slot + 1] === 0) {
        this.keys.push(key);
        this.insertEdge(slot, node, tokenHash, ~keyIndex);
        return keyIndex;
      }
      let target = table[slot + 2]!;
      if (target < 0) {
        const other = ~target;
        const otherKey = this.keyAt(other);
        if (otherKey === key) return other;
        // A single key continued this way: the prefix up to this token is now shared, so it becomes a node
        // and that key hangs below it.
        target = this.addNode(end + 1, other);
        this.table[slot + 2] = target;
        if (otherKey.length === end) this.nodeKey[target] = other;
        else {
          let otherEnd = otherKey.indexOf(" ", end + 1);
          if (otherEnd < 0) otherEnd = otherKey.length;
          const otherHash = hashRange(otherKey, end + 1, otherEnd);
          this.insertEdge(
            this.findSlot(target, otherHash, otherKey, end + 1, otherEnd),
            target,
            otherHash,
            ~other,
          );
        }
      }
      if (end === key.length) {
        const existing = this.nodeKey[target]!;
        if (existing >= 0) return existing;
        this.keys.push(key);
        this.nodeKey[target] = keyIndex;
        return keyIndex;
      }
      node = target;
      start = end + 1;
    }
  }

  /**
   * The keys that occur in `tokens` as contiguous n-grams, each once, in NeuroLink's generation order: by word
   * count, then by the position of the first occurrence. The walk from each start follows the trie and stops
   * where no key continues, so the work is bounded by the query's matching prefixes.
   */
  match(tokens: readonly string[]): string[] {
    return this.matchIndices(tokens).map((index) => this.keyAt(index));
  }

  /** {@link match} as key indices (see {@link keyAt}). */
  matchIndices(tokens: readonly string[]): number[] {
    const count = tokens.length;
    if (count === 0 || this.size === 0) return [];
    const hashes = new Int32Array(count);
    for (let index = 0; index < count; index++) {
      const token = tokens[index]!;
      hashes[index] = hashRange(token, 0, token.length);
    }
    // Hit order key: size × (count + 1) + start, for each key at its first occurrence (the smallest start,
    // since a key's size is fixed and starts are visited in ascending order).
    const seen = new Set<number>();
    const hitOrders: number[] = [];
    const hitKeys: number[] = [];
    const hit = (keyIndex: number, size: number, start: number): void => {
      if (seen.has(keyIndex)) return;
      seen.add(keyIndex);
      hitOrders.push(size * (count + 1) + start);
      hitKeys.push(keyIndex);
    };
    const table = this.table;
    const blocks = this.loadedBlocks;
    const mask = this.mask;
    const nodePrefixLength = this.nodePrefixLength;
    const nodeKey = this.nodeKey;
    const nodeCount = this.nodeCount;
    const keyCount = this.size;
    for (let start = 0; start < count; start++) {
      let node = 0;
      // Once on a collapsed leaf: its key and the offset of the key's next token.
      let leafKey = "";
      let leaf = -1;
      let offset = 0;
      for (let end = start; end < count; end++) {
        const token = tokens[end]!;
        if (leaf >= 0) {
          if (!tokenAt(leafKey, offset, token, 0, token.length)) break;
          offset += token.length;
          if (offset === leafKey.length) {
            hit(leaf, end - start + 1, start);
            break;
          }
          offset++;
          continue;
        }
        const tokenHash = hashes[end]!;
        const prefixLength = nodePrefixLength[node]!;
        let slot = slotOf(tokenHash, node, mask) * SLOT;
        let target = 0;
        let found = false;
        // Probes end at an empty slot; a loaded table is checked as it is read (an edge to nowhere, or no empty
        // slot at all, is a typed error instead of a wrong key or an endless walk).
        for (let probes = 0; ; probes++) {
          blocks?.ensure(slot, slot + SLOT);
          const parent = table[slot + 1]!;
          if (parent === 0) break;
          if (probes > mask) throw this.inconsistent("the edge table has no empty slot");
          if (parent === node + 1 && table[slot] === tokenHash) {
            target = table[slot + 2]!;
            if (target >= nodeCount || ~target >= keyCount)
              throw this.inconsistent("an edge refers to a missing node or key");
            if (tokenAt(this.referenceKey(target), prefixLength, token, 0, token.length)) {
              found = true;
              break;
            }
          }
          slot += SLOT;
          if (slot === table.length) slot = 0;
        }
        if (!found) break;
        if (target >= 0) {
          const keyIndex = nodeKey[target]!;
          if (keyIndex >= 0) hit(keyIndex, end - start + 1, start);
          node = target;
          continue;
        }
        leaf = ~target;
        leafKey = this.keyAt(leaf);
        offset = prefixLength + token.length;
        if (offset === leafKey.length) {
          hit(leaf, end - start + 1, start);
          break;
        }
        offset++;
      }
    }
    const order = hitKeys.map((_, index) => index);
    order.sort((left, right) => hitOrders[left]! - hitOrders[right]!);
    return order.map((index) => hitKeys[index]!);
  }

  /** The index of `key` (a phrase key: tokens joined by single spaces), or -1 when it is not a key. */
  indexOf(key: string): number {
    if (key === "") return -1;
    // One walk down the key's own tokens: linear in its length (phrase maps look up every matched key).
    let node = 0;
    let start = 0;
    for (;;) {
      let end = key.indexOf(" ", start);
      if (end < 0) end = key.length;
      const slot = this.findSlot(node, hashRange(key, start, end), key, start, end);
      if (this.table[slot + 1] === 0) return -1;
      const target = this.table[slot + 2]!;
      if (target < 0) return this.keyAt(~target) === key ? ~target : -1;
      if (end === key.length) return this.nodeKey[target]!;
      node = target;
      start = end + 1;
    }
  }

  /** The key at `index` (keys are indexed in the order they were added). */
  keyAt(index: number): string {
    const loaded = this.loadedKeys;
    if (loaded) {
      let known = loaded.decoded.get(index);
      if (known === undefined) {
        known = this.decodeKey!(index);
        loaded.decoded.set(index, known);
      }
      return known;
    }
    const key = this.keys[index];
    if (key !== undefined) return key;
    const decoded = this.decodeKey!(index);
    this.keys[index] = decoded;
    return decoded;
  }

  /** The finished trie's arrays, for an index artifact (the arrays are the trie's own: do not modify them). */
  exportParts(): PhraseTrieParts {
    this.loadedBlocks?.ensureAll();
    const keys: string[] = new Array(this.size);
    for (let index = 0; index < keys.length; index++) keys[index] = this.keyAt(index);
    return {
      keys,
      nodePrefixLength: this.nodePrefixLength.subarray(0, this.nodeCount),
      nodeKey: this.nodeKey.subarray(0, this.nodeCount),
      nodeSample: this.nodeSample.subarray(0, this.nodeCount),
      table: this.table,
      edgeCount: this.edgeCount,
    };
  }

  /**
   * A finished trie over arrays written by {@link exportParts}; its keys are decoded on demand by `decodeKey`
   * (a query decodes only the keys its walk reads). The sizes and the nodes are checked here (a RangeError, or
   * `corrupt(...)` when given); the edge table is not walked at load (what makes loading cheap) but checked where
   * it is read: a walk that meets an edge to a missing node or key, or a table with no empty slot, throws
   * `corrupt(...)`, so a damaged artifact never makes a walk read out of bounds, loop or answer wrongly. Before the
   * first key is added (updates), the table is checked whole.
   */
  static fromParts(
    parts: Omit<PhraseTrieParts, "keys">,
    keyCount: number,
    decodeKey: (index: number) => string,
    corrupt: (message: string) => Error = (message) => new RangeError(message),
    tableBlocks: TableBlocks | null = null,
  ): PhraseTrie {
    const { nodePrefixLength, nodeKey, nodeSample, table, edgeCount } = parts;
    const nodeCount = nodePrefixLength.length;
    const capacity = table.length / SLOT;
    if (
      nodeCount < 1 ||
      nodeKey.length !== nodeCount ||
      nodeSample.length !== nodeCount ||
      !Number.isInteger(capacity) ||
      capacity < 1 ||
      (capacity & (capacity - 1)) !== 0 ||
      !Number.isInteger(edgeCount) ||
      edgeCount < 0 ||
      edgeCount * 4 > capacity * 3 ||
      !Number.isInteger(keyCount) ||
      keyCount < 0
    ) {
      throw corrupt("phrase trie parts are inconsistent");
    }
    // The nodes are few (prefixes shared by two keys or more): checked here, so a walk reads them as they are.
    for (let node = 0; node < nodeCount; node++) {
      const key = nodeKey[node]!;
      const sample = nodeSample[node]!;
      if (
        key < -1 ||
        key >= keyCount ||
        sample < 0 ||
        (keyCount > 0 && sample >= keyCount) ||
        nodePrefixLength[node]! < 0
      )
        throw corrupt("phrase trie parts are inconsistent: a node refers to a missing key");
    }
    const trie = new PhraseTrie();
    trie.loadedKeys = { count: keyCount, decoded: new Map() };
    trie.decodeKey = decodeKey;
    trie.nodePrefixLength = nodePrefixLength;
    trie.nodeKey = nodeKey;
    trie.nodeSample = nodeSample;
    trie.nodeCount = nodeCount;
    trie.table = table;
    trie.mask = capacity - 1;
    trie.edgeCount = edgeCount;
    trie.loadedCorrupt = corrupt;
    trie.loadedBlocks = tableBlocks;
    return trie;
  }

  /**
   * Checks a loaded edge table whole (every edge names an existing parent and target, and there are as many as the
   * artifact says, so that adding keys grows the table in time); throws `corrupt(...)` otherwise. Once, before the
   * first key is added.
   */
  private checkLoadedEdges(corrupt: (message: string) => Error): void {
    this.loadedBlocks?.ensureAll();
    this.loadedBlocks = null;
    const table = this.table;
    const nodeCount = this.nodeCount;
    const keyCount = this.size;
    let used = 0;
    for (let slot = 0; slot < table.length; slot += SLOT) {
      const parent = table[slot + 1]!;
      if (parent === 0) continue;
      used++;
      const target = table[slot + 2]!;
      if (parent < 0 || parent > nodeCount || (target >= 0 ? target >= nodeCount : ~target >= keyCount))
        throw corrupt("phrase trie parts are inconsistent: an edge refers to a missing node or key");
    }
    if (used !== this.edgeCount) throw corrupt("phrase trie parts are inconsistent: wrong edge count");
    this.loadedCorrupt = null;
  }

  /** A loaded trie's keys as {@link keys} (the ones not decoded yet as holes), before its first key is added. */
  private keysForAdding(loaded: { count: number; decoded: Map<number, string> }): void {
    const keys: string[] = new Array(loaded.count);
    for (const [index, key] of loaded.decoded) keys[index] = key;
    this.keys = keys;
    this.loadedKeys = null;
  }

  /** The error of a walk that finds the edge table inconsistent (only a loaded table can be). */
  private inconsistent(detail: string): Error {
    const message = `phrase trie parts are inconsistent: ${detail}`;
    return this.loadedCorrupt ? this.loadedCorrupt(message) : new RangeError(message);
  }

  /** Releases the spare capacity of the key list and node arrays once every key is added (the table stays). */
  trimToSize(): void {
    if (this.decodeKey) return;
    this.keys = this.keys.slice();
    this.nodePrefixLength = this.nodePrefixLength.slice(0, this.nodeCount);
    this.nodeKey = this.nodeKey.slice(0, this.nodeCount);
    this.nodeSample = this.nodeSample.slice(0, this.nodeCount);
  }

  /** A key under an edge's target, from which the edge's token is read. */
  private referenceKey(target: number): string {
    return this.keyAt(target >= 0 ? this.nodeSample[target]! : ~target);
  }

  /** The slot of edge (node, key[start, end)), or the empty slot where it would go. */
  private findSlot(node: number, tokenHash: number, key: string, start: number, end: number): number {
    const table = this.table;
    const prefixLength = this.nodePrefixLength[node]!;
    let slot = slotOf(tokenHash, node, this.mask) * SLOT;
    // Checked as in `matchIndices` (a loaded table is not walked at load).
    const blocks = this.loadedBlocks;
    for (let probes = 0; ; probes++) {
      blocks?.ensure(slot, slot + SLOT);
      const parent = table[slot + 1]!;
      if (parent === 0) return slot;
      if (probes > this.mask) throw this.inconsistent("the edge table has no empty slot");
      if (parent === node + 1 && table[slot]! === tokenHash) {
        const target = table[slot + 2]!;
        if (target >= this.nodeCount || ~target >= this.size)
          throw this.inconsistent("an edge refers to a missing node or key");
        if (tokenAt(this.referenceKey(target), prefixLength, key, start, end)) return slot;
      }
      slot = slot + SLOT === table.length ? 0 : slot + SLOT;
    }
  }

  private insertEdge(slot: number, node: number, tokenHash: number, target: number): void {
    this.table[slot] = tokenHash;
    this.table[slot + 1] = node + 1;
    this.table[slot + 2] = target;
    this.edgeCount++;
    // Linear probing stays short up to three quarters full.
    if (this.edgeCount * 4 > (this.mask + 1) * 3) this.grow();
  }

  private grow(): void {
    const previous = this.table;
    const capacity = (this.mask + 1) * 2;
    const table = buildInt32Array(capacity * SLOT);
    const mask = capacity - 1;
    for (let slot = 0; slot < previous.length; slot += SLOT) {
      const parent = previous[slot + 1]!;
      if (parent === 0) continue;
      let next = slotOf(previous[slot]!, parent - 1, mask) * SLOT;
      while (table[next + 1] !== 0) next = next + SLOT === table.length ? 0 : next + SLOT;
      table[next] = previous[slot]!;
      table[next + 1] = parent;
      table[next + 2] = previous[slot + 2]!;
    }
    this.table = table;
    this.mask = mask;
  }

  private addNode(prefixLength: number, sample: number): number {
    if (this.nodeCount === this.nodePrefixLength.length) {
      const capacity = this.nodeCount * 2;
      const grow = (array: Int32Array, fill: number): Int32Array => {
        const next = buildInt32Array(capacity).fill(fill);
        next.set(array);
        return next;
      };
      this.nodePrefixLength = grow(this.nodePrefixLength, 0);
      this.nodeKey = grow(this.nodeKey, -1);
      this.nodeSample = grow(this.nodeSample, 0);
    }
    const node = this.nodeCount++;
    this.nodePrefixLength[node] = prefixLength;
    this.nodeKey[node] = -1;
    this.nodeSample[node] = sample;
    return node;
  }
}
