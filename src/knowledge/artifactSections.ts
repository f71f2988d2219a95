/**
 * How a load reads an artifact's sections (see `artifact.ts` for the layout): eager sections checked against their
 * checksums, lazy ones read from the artifact's byte source on demand (checked per block by their readers), and the
 * blocked tables (`artifactBlocks.ts`) lazy in format 5, eager in format 4.
 */
import { type BlockedArray, eagerBlockedArray, lazyBlockedArray } from "./artifactBlocks.js";
import {
  align8,
  type ByteSource,
  corrupt,
  KnowledgeArtifactError,
  type KnowledgeIndexArtifactHeader,
  strictDecoder,
} from "./artifactHeader.js";
import type { LazySection, SectionReader } from "./artifactLexical.js";
import { checksum32 } from "./checksum.js";
import { SCRATCH_BYTES, scoringBuffer } from "./scoringKernel.js";

/**
 * Without a scoring memory, lazy sections up to this size share one zeroed buffer (see `zeroed` below); larger ones
 * get their own.
 */
const SHARED_ZEROED_MAX_BYTES = 64 * 1024 * 1024;

/**
 * Sections read for a load: eager ones checked against their checksums, lazy ones read from `source` on demand
 * (their reads are checked per block by the lexical index).
 */
export function sectionReader(
  header: KnowledgeIndexArtifactHeader,
  payloadStart: number,
  source: ByteSource,
  fetch: (name: string, offset: number, length: number) => Uint8Array,
): SectionReader {
  const bytes = (name: string): Uint8Array => {
    const found = header.sections[name];
    if (!found) throw corrupt(`section ${name} is missing`);
    if (found.lazy) throw corrupt(`section ${name} is lazy where it should be read at load`);
    const data = fetch(name, found.offset, found.length);
    if (checksum32(data) !== found.checksum) throw corrupt(`section ${name} does not match its checksum`);
    return data;
  };
  const typed = <T>(
    name: string,
    size: number,
    make: (buffer: ArrayBufferLike, offset: number, length: number) => T,
  ): T => {
    const data = bytes(name);
    if (data.byteLength % size !== 0) throw corrupt(`section ${name} has a partial element`);
    return make(data.buffer, data.byteOffset, data.byteLength / size);
  };
  // The zeroed arrays the lazy sections are filled into (see `zeroed` in `SectionReader`), each at an 8-byte
  // aligned offset of one buffer: allocated apart, the smaller ones (under glibc's adaptive mmap threshold, which
  // freeing a large buffer raises) were taken from the heap and cleared byte by byte, committing every page at
  // load (at 10,000 entries about 1.5 MB, ~370 page faults, 5-10 ms under load); one large allocation is mapped
  // zeroed by the kernel, so a page costs only when a block is first read into it.
  // Where WebAssembly is available, every lazy section goes into one WebAssembly memory instead (when they fit in
  // one), after the scoring kernel's scratch: the kernel then reads the postings in place (see `scoringKernel.ts`).
  let shared: { buffer: ArrayBuffer; offsets: Map<string, number> } | null = null;
  const zeroed = (name: string): Uint8Array => {
    const found = header.sections[name];
    if (!found) throw corrupt(`section ${name} is missing`);
    if (!found.lazy) throw corrupt(`section ${name} is read at load where it should be lazy`);
    if (shared === null) {
      let all = 0;
      for (const section of Object.values(header.sections)) if (section.lazy) all += align8(section.length);
      const scoring = scoringBuffer(all);
      const largest = scoring === null ? SHARED_ZEROED_MAX_BYTES : Number.POSITIVE_INFINITY;
      const offsets = new Map<string, number>();
      let total = scoring === null ? 0 : SCRATCH_BYTES;
      for (const [sectionName, section] of Object.entries(header.sections)) {
        if (!section.lazy || section.length > largest) continue;
        offsets.set(sectionName, total);
        total += align8(section.length);
      }
      shared = { buffer: scoring ?? new ArrayBuffer(total), offsets };
    }
    const offset = shared.offsets.get(name);
    return offset === undefined
      ? new Uint8Array(found.length)
      : new Uint8Array(shared.buffer, offset, found.length);
  };
  const lazy = (name: string): LazySection => {
    const found = header.sections[name];
    if (!found) throw corrupt(`section ${name} is missing`);
    if (!found.lazy) throw corrupt(`section ${name} is read at load where it should be lazy`);
    const start = payloadStart + found.offset;
    return {
      byteLength: found.length,
      readInto(byteOffset, target) {
        if (byteOffset < 0 || byteOffset + target.byteLength > found.length)
          throw corrupt(`a read outside section ${name}`);
        try {
          source.readInto(start + byteOffset, target);
        } catch (caught) {
          throw new KnowledgeArtifactError(
            "unreadable",
            `index artifact section ${name} cannot be read: ${caught instanceof Error ? caught.message : String(caught)}`,
          );
        }
      },
    };
  };
  // Lazy in format 5 (its blocks read and checked on demand), eager in format 4 (checked whole here).
  const blocked = <T extends Int32Array | Float64Array>(
    name: string,
    make: (length: number) => T,
    size: number,
    viewOf: (buffer: ArrayBufferLike, offset: number, length: number) => T,
  ): BlockedArray<T> => {
    const found = header.sections[name];
    if (!found?.lazy) return eagerBlockedArray(typed(name, size, viewOf));
    if (header.tableBlockElements === undefined)
      throw corrupt(`section ${name} is lazy without a table block size`);
    return lazyBlockedArray(
      name,
      lazy(name),
      read.uint32(`${name}.checksums`),
      header.tableBlockElements,
      (length) => {
        if (length === 0) return make(0);
        const bytes = zeroed(name);
        return viewOf(bytes.buffer, bytes.byteOffset, length);
      },
      corrupt,
    );
  };
  const read: SectionReader = {
    has: (name) => header.sections[name] !== undefined,
    isLazy: (name) => header.sections[name]?.lazy === true,
    bytes,
    json<T>(name: string): T {
      try {
        return JSON.parse(strictDecoder.decode(bytes(name))) as T;
      } catch (caught) {
        if (KnowledgeArtifactError.isInstance(caught)) throw caught;
        throw corrupt(`section ${name} is not valid JSON`);
      }
    },
    int32: (name) => typed(name, 4, (buffer, offset, length) => new Int32Array(buffer, offset, length)),
    uint32: (name) => typed(name, 4, (buffer, offset, length) => new Uint32Array(buffer, offset, length)),
    float64: (name) => typed(name, 8, (buffer, offset, length) => new Float64Array(buffer, offset, length)),
    blockedInt32: (name) =>
      blocked(
        name,
        (length) => new Int32Array(length),
        4,
        (buffer, offset, length) => new Int32Array(buffer, offset, length),
      ),
    blockedFloat64: (name) =>
      blocked(
        name,
        (length) => new Float64Array(length),
        8,
        (buffer, offset, length) => new Float64Array(buffer, offset, length),
      ),
    lazy,
    zeroed,
    corrupt,
  };
  return read;
}
