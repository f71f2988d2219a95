/**
 * The phrase part of a loaded artifact (see `artifact.ts` for the layout): the phrase keys, decoded a block of
 * 1,024 keys at a time when a walk first compares one (each block checked against its checksum, its part of the
 * key-offset table checked to rise), the phrase trie over its blocked edge table, and the exact/alias lists, each
 * checked when first read.
 */

import type { BlockedArray } from "./artifactBlocks.js";
import {
  corrupt,
  KEYS_PER_BLOCK,
  type KnowledgeIndexArtifactHeader,
  strictDecoder,
} from "./artifactHeader.js";
import type { SectionReader } from "./artifactLexical.js";
import { allBelow, ascending } from "./artifactPostings.js";
import { checksum32 } from "./checksum.js";
import type { EntryIds } from "./denseIds.js";
import { PhraseListMap } from "./derivedMaps.js";
import { PhraseTrie } from "./phraseTrie.js";

/**
 * The exact or alias lists of a loaded artifact: each key's list is checked (its bounds, and that it names existing
 * entries) when it is first read, instead of every list at load; in format 6 its offsets and entries are read a
 * block at a time then (blocked tables, `artifactBlocks.ts`: at 10,000 synthetic entries the four sections were 383
 * KB of the 740 KB a load read, while a turn reads the lists of a few keys).
 */
class CheckedPhraseListMap extends PhraseListMap {
  constructor(
    trie: PhraseTrie,
    private readonly offsetBlocks: BlockedArray<Int32Array>,
    private readonly docBlocks: BlockedArray<Int32Array>,
    ids: EntryIds,
    private readonly name: "exact" | "alias",
  ) {
    super(trie, offsetBlocks.array, docBlocks.array, ids);
  }
  protected override checkList(index: number): void {
    this.offsetBlocks.ensure(index, index + 2);
    const start = this.offsets[index]!;
    const end = this.offsets[index + 1]!;
    if (!(start >= 0 && end >= start && end <= this.docs.length))
      throw corrupt(`the ${this.name} phrase lists are out of order`);
    this.docBlocks.ensure(start, end);
    if (!allBelow(this.docs, start, end, this.ids.length))
      throw corrupt(`an ${this.name} phrase names a missing entry`);
  }
  override readAll(): void {
    this.offsetBlocks.ensureAll();
    this.docBlocks.ensureAll();
  }
  override has(key: string): boolean {
    if (typeof key !== "string") return false;
    const index = this.trie.indexOf(key);
    if (index >= 0) this.offsetBlocks.ensure(index, index + 2);
    return super.has(key);
  }
  override get size(): number {
    this.offsetBlocks.ensureAll();
    return super.size;
  }
}

/** The phrase trie and the exact/alias lists of a loaded artifact (`ids`: the entry ids by dense id). */
export function readPhrases(
  header: KnowledgeIndexArtifactHeader,
  read: SectionReader,
  ids: EntryIds,
): { trie: PhraseTrie; exactIndex: PhraseListMap; aliasIndex: PhraseListMap } {
  const keyOffsetBlocks = read.blockedFloat64("phrases.keyOffsets");
  const keyOffsets = keyOffsetBlocks.array;
  // The ends, checked here; each block of keys' offsets when the block is first read.
  keyOffsetBlocks.ensure(0, 1);
  keyOffsetBlocks.ensure(header.phraseKeyCount, header.phraseKeyCount + 1);
  const keySection = read.lazy("phrases.keys");
  const keyChecksums = read.uint32("phrases.keys.checksums");
  const keyCount = header.phraseKeyCount;
  if (
    keyOffsets.length !== keyCount + 1 ||
    keyOffsets[0] !== 0 ||
    keyOffsets[keyCount] !== keySection.byteLength ||
    keyChecksums.length !== Math.ceil(keyCount / KEYS_PER_BLOCK)
  )
    throw corrupt("the phrase key table does not match its keys");
  // Filled a block of keys at a time, each checked against its checksum (and its part of the key table checked to
  // rise within the section) before any key of it is decoded.
  const keyBytes = read.zeroed("phrases.keys");
  const keyBlockFilled = new Uint8Array(keyChecksums.length);
  const decodeKey = (index: number): string => {
    const block = Math.floor(index / KEYS_PER_BLOCK);
    if (keyBlockFilled[block] === 0) {
      const firstKey = block * KEYS_PER_BLOCK;
      const endKey = Math.min(keyCount, firstKey + KEYS_PER_BLOCK);
      keyOffsetBlocks.ensure(firstKey, endKey + 1);
      const start = keyOffsets[firstKey]!;
      const end = keyOffsets[endKey]!;
      if (!(start >= 0 && end <= keyBytes.length)) throw corrupt("the phrase key table is out of order");
      if (!ascending(keyOffsets, firstKey, endKey + 1)) throw corrupt("the phrase key table is out of order");
      const target = keyBytes.subarray(start, end);
      keySection.readInto(start, target);
      if (checksum32(target) !== keyChecksums[block])
        throw corrupt(`block ${block} of section phrases.keys does not match its checksum`);
      keyBlockFilled[block] = 1;
    }
    try {
      return strictDecoder.decode(keyBytes.subarray(keyOffsets[index]!, keyOffsets[index + 1]!));
    } catch {
      throw corrupt(`phrase key ${index} is not valid UTF-8`);
    }
  };
  const trieTable = read.blockedInt32("phrases.table");
  const trie = PhraseTrie.fromParts(
    {
      nodePrefixLength: read.int32("phrases.nodePrefixLength"),
      nodeKey: read.int32("phrases.nodeKey"),
      nodeSample: read.int32("phrases.nodeSample"),
      table: trieTable.array,
      edgeCount: header.phraseEdgeCount,
    },
    keyCount,
    decodeKey,
    corrupt,
    trieTable,
  );
  const phraseLists = (name: "exact" | "alias") => {
    // Eager sections checked whole in formats 4 and 5; blocked tables in format 6 (their ends read here).
    const offsetBlocks = read.blockedInt32(`phrases.${name}Offsets`);
    const docBlocks = read.blockedInt32(`phrases.${name}Docs`);
    const offsets = offsetBlocks.array;
    offsetBlocks.ensure(0, 1);
    offsetBlocks.ensure(keyCount, keyCount + 1);
    if (offsets.length !== keyCount + 1 || offsets[0] !== 0 || offsets[keyCount] !== docBlocks.array.length)
      throw corrupt(`the ${name} phrase lists do not match the keys`);
    return new CheckedPhraseListMap(trie, offsetBlocks, docBlocks, ids, name);
  };
  return { trie, exactIndex: phraseLists("exact"), aliasIndex: phraseLists("alias") };
}
