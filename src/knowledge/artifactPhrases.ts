/**
 * The phrase part of a loaded artifact (see `artifact.ts` for the layout): the phrase keys, decoded a block of
 * 1,024 keys at a time when a walk first compares one (each block checked against its checksum, its part of the
 * key-offset table checked to rise), the phrase trie over its blocked edge table, and the exact/alias lists, each
 * checked when first read.
 */
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
 * entries) when it is first read, instead of every list at load.
 */
class CheckedPhraseListMap extends PhraseListMap {
  constructor(
    trie: PhraseTrie,
    offsets: Int32Array,
    docs: Int32Array,
    ids: EntryIds,
    private readonly name: "exact" | "alias",
  ) {
    super(trie, offsets, docs, ids);
  }
  protected override checkList(index: number): void {
    const start = this.offsets[index]!;
    const end = this.offsets[index + 1]!;
    if (!(start >= 0 && end >= start && end <= this.docs.length))
      throw corrupt(`the ${this.name} phrase lists are out of order`);
    if (!allBelow(this.docs, start, end, this.ids.length))
      throw corrupt(`an ${this.name} phrase names a missing entry`);
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
    const offsets = read.int32(`phrases.${name}Offsets`);
    const docs = read.int32(`phrases.${name}Docs`);
    if (offsets.length !== keyCount + 1 || offsets[0] !== 0 || offsets[keyCount] !== docs.length)
      throw corrupt(`the ${name} phrase lists do not match the keys`);
    return new CheckedPhraseListMap(trie, offsets, docs, ids, name);
  };
  return { trie, exactIndex: phraseLists("exact"), aliasIndex: phraseLists("alias") };
}
