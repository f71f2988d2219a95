/**
 * Crafting index artifact bytes for tests: a header or a section changed with every checksum over it made to match
 * (crafted files, which only the consistency checks can refuse), the format-4 layout of a format-5 artifact, and
 * the typed-error assertion.
 */
import { expect } from "vitest";
import { KnowledgeArtifactError, readIndexArtifactHeader } from "../../src/knowledge/artifactHeader.js";
import { checksum32 } from "../../src/knowledge/checksum.js";
import { idBlockRange } from "../../src/knowledge/denseIds.js";

/** The artifact with its header JSON changed by `change` (and a matching header checksum): a crafted file. */
export function withHeader(bytes: Uint8Array, change: (header: Record<string, unknown>) => void): Uint8Array {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const headerLength = view.getUint32(12, true);
  const header = JSON.parse(new TextDecoder().decode(bytes.subarray(24, 24 + headerLength)));
  const payload = bytes.subarray(Math.ceil((24 + headerLength) / 8) * 8);
  change(header);
  const headerBytes = new TextEncoder().encode(JSON.stringify(header));
  const payloadStart = Math.ceil((24 + headerBytes.length) / 8) * 8;
  const output = new Uint8Array(payloadStart + payload.length);
  output.set(bytes.subarray(0, 12));
  const outputView = new DataView(output.buffer);
  outputView.setUint32(12, headerBytes.length, true);
  outputView.setUint32(16, checksum32(headerBytes), true);
  output.set(headerBytes, 24);
  output.set(payload, payloadStart);
  return output;
}

export function expectArtifactError(run: () => unknown, code: string): void {
  try {
    run();
    expect.unreachable(`expected a KnowledgeArtifactError with code ${code}`);
  } catch (caught) {
    expect(caught).toBeInstanceOf(KnowledgeArtifactError);
    expect((caught as KnowledgeArtifactError).code).toBe(code);
  }
}

/** The artifact with the bytes of section `name` changed by `change` (and a matching section checksum): a crafted file. */
/** The blocked tables of format 5 (`artifactBlocks.ts`) and their element sizes. */
export function blockedElementBytes(name: string): number | undefined {
  if (name === "phrases.keyOffsets") return 8;
  if (
    /^(lexical\.dictionary\.(table|records)|lexical\.offsets\.\d|phrases\.(table|(exact|alias)(Offsets|Docs)))$/.test(
      name,
    )
  )
    return 4;
  return undefined;
}

/**
 * The artifact with section `name`'s bytes changed by `change`, and every checksum over them made to match (the
 * section's, or for a blocked table its blocks' in `<name>.checksums` and that section's): a crafted file.
 */
export function withSection(
  bytes: Uint8Array,
  name: string,
  change: (section: Uint8Array) => void,
): Uint8Array {
  const header = readIndexArtifactHeader(bytes);
  const section = header.sections[name]!;
  const changed = bytes.slice();
  const payloadStart = bytes.length - header.payloadLength;
  const start = payloadStart + section.offset;
  const content = changed.subarray(start, start + section.length);
  change(content);
  const elementBytes = blockedElementBytes(name);
  const blockChecksums = header.sections[`${name}.checksums`];
  let checksumsContent: Uint8Array | null = null;
  const idStarts = header.sections["lexical.idStarts"];
  if (name === "lexical.idList" && section.lazy && blockChecksums && idStarts) {
    // The format-6 id list: a checksum per block of ids, located by the id starts (see denseIds.ts).
    const startsBytes = changed.slice(
      payloadStart + idStarts.offset,
      payloadStart + idStarts.offset + idStarts.length,
    );
    const starts = new Int32Array(startsBytes.buffer, 0, startsBytes.length / 4);
    const checksumsStart = payloadStart + blockChecksums.offset;
    checksumsContent = changed.subarray(checksumsStart, checksumsStart + blockChecksums.length);
    const view = new DataView(
      checksumsContent.buffer,
      checksumsContent.byteOffset,
      checksumsContent.byteLength,
    );
    for (let block = 0; block * 4 < checksumsContent.length; block++) {
      const range = idBlockRange(starts, content.length, block)!;
      view.setUint32(block * 4, checksum32(content.subarray(range.from, range.to)), true);
    }
  } else if (section.lazy && elementBytes !== undefined && blockChecksums && header.tableBlockElements) {
    const blockBytes = header.tableBlockElements * elementBytes;
    const checksumsStart = payloadStart + blockChecksums.offset;
    checksumsContent = changed.subarray(checksumsStart, checksumsStart + blockChecksums.length);
    const view = new DataView(
      checksumsContent.buffer,
      checksumsContent.byteOffset,
      checksumsContent.byteLength,
    );
    for (let block = 0; block * 4 < checksumsContent.length; block++)
      view.setUint32(
        block * 4,
        checksum32(content.subarray(block * blockBytes, (block + 1) * blockBytes)),
        true,
      );
  }
  return withHeader(changed, (crafted) => {
    const table = crafted.sections as Record<string, { checksum: number; lazy?: boolean }>;
    if (checksumsContent) table[`${name}.checksums`]!.checksum = checksum32(checksumsContent);
    else table[name]!.checksum = checksum32(content);
  });
}

/**
 * The format-4 layout of a format-5 artifact: the blocked tables become eager sections checked whole (their block
 * checksums stay in the file, named by no section), no table block size, format 4.
 */
export function asFormat4(bytes: Uint8Array): Uint8Array {
  const header = readIndexArtifactHeader(bytes);
  const payloadStart = bytes.length - header.payloadLength;
  const crafted = withHeader(bytes, (changed) => {
    const table = changed.sections as Record<
      string,
      { offset: number; length: number; checksum: number; lazy?: boolean }
    >;
    for (const name of Object.keys(table)) {
      if (blockedElementBytes(name) === undefined || !table[name]!.lazy) continue;
      const section = table[name]!;
      delete table[`${name}.checksums`];
      table[name] = {
        offset: section.offset,
        length: section.length,
        checksum: checksum32(
          bytes.subarray(payloadStart + section.offset, payloadStart + section.offset + section.length),
        ),
      };
    }
    delete changed.tableBlockElements;
    changed.formatVersion = 4;
  });
  new DataView(crafted.buffer, crafted.byteOffset).setUint32(8, 4, true);
  return crafted;
}

/** Section `name` of `table` made an eager section checked whole (its block checksums stay in the file, unnamed). */
function eagerSection(
  table: Record<string, { offset: number; length: number; checksum: number; lazy?: boolean }>,
  name: string,
  bytes: Uint8Array,
  payloadStart: number,
): void {
  const section = table[name];
  if (!section?.lazy) return;
  delete table[`${name}.checksums`];
  table[name] = {
    offset: section.offset,
    length: section.length,
    checksum: checksum32(
      bytes.subarray(payloadStart + section.offset, payloadStart + section.offset + section.length),
    ),
  };
}

/** `bytes` as an artifact of format `version` (in its header and prefix), its sections changed by `change`. */
function asFormat(
  bytes: Uint8Array,
  version: number,
  change: (
    table: Record<string, { offset: number; length: number; checksum: number; lazy?: boolean }>,
    payloadStart: number,
  ) => void,
): Uint8Array {
  const header = readIndexArtifactHeader(bytes);
  const payloadStart = bytes.length - header.payloadLength;
  const crafted = withHeader(bytes, (changed) => {
    change(changed.sections as never, payloadStart);
    changed.formatVersion = version;
  });
  new DataView(crafted.buffer, crafted.byteOffset).setUint32(8, version, true);
  return crafted;
}

/** The format-6 layout of a format-7 artifact: the exact and alias phrase lists eager sections checked whole. */
export function asFormat6(bytes: Uint8Array): Uint8Array {
  return asFormat(bytes, 6, (table, payloadStart) => {
    for (const kind of ["exact", "alias"])
      for (const part of ["Offsets", "Docs"])
        eagerSection(table, `phrases.${kind}${part}`, bytes, payloadStart);
  });
}

/**
 * The format-5 layout of a format-6 or -7 artifact: also the entry ids an eager section checked whole (the blocks'
 * first ids stay in the file, named by no section).
 */
export function asFormat5(bytes: Uint8Array): Uint8Array {
  const six = asFormat6(bytes);
  return asFormat(six, 5, (table, payloadStart) => {
    delete table["lexical.idFirsts"];
    eagerSection(table, "lexical.idList", six, payloadStart);
  });
}

/** Whether `position` is alignment padding after a section or the header (bytes no checksum covers). */
export function isPadding(bytes: Uint8Array, position: number): boolean {
  const header = readIndexArtifactHeader(bytes);
  const headerEnd = 24 + new DataView(bytes.buffer, bytes.byteOffset).getUint32(12, true);
  const payloadStart = bytes.length - header.payloadLength;
  if (position < payloadStart) return position >= headerEnd;
  const offset = position - payloadStart;
  const covering = Object.values(header.sections).some(
    (section) => offset >= section.offset && offset < section.offset + section.length,
  );
  return !covering && offset < header.entryRecords.offset;
}
