/**
 * What the hand-assembled WebAssembly kernels (`checksum.ts`, `scoringKernel.ts`) share: the binary format's
 * integer encodings and section framing, used by their tests to build the modules from named opcodes, and the
 * hexadecimal decoding of the bytes a process compiles.
 */

/** Unsigned LEB128: the binary format's sizes, counts, indexes and memory offsets. */
export function unsignedLeb128(value: number): number[] {
  const out: number[] = [];
  let rest = value;
  do {
    let byte = rest & 0x7f;
    rest >>>= 7;
    if (rest !== 0) byte |= 0x80;
    out.push(byte);
  } while (rest !== 0);
  return out;
}

/** Signed LEB128: `i32.const` operands. */
export function signedLeb128(value: number): number[] {
  const out: number[] = [];
  let rest = value;
  for (;;) {
    const byte = rest & 0x7f;
    rest >>= 7;
    if ((rest === 0 && (byte & 0x40) === 0) || (rest === -1 && (byte & 0x40) !== 0)) {
      out.push(byte);
      return out;
    }
    out.push(byte | 0x80);
  }
}

/** The magic number and version every module starts with. */
export const MODULE_PREAMBLE: readonly number[] = [0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00];

/** A section: its id, its content's length, its content. */
export function moduleSection(id: number, content: number[]): number[] {
  return [id, ...unsignedLeb128(content.length), ...content];
}

/** The code section (id 10) of function `bodies`, each a body's bytes (locals, then instructions, then `end`). */
export function codeSection(...bodies: number[][]): number[] {
  const content = unsignedLeb128(bodies.length);
  for (const body of bodies) content.push(...unsignedLeb128(body.length), ...body);
  return moduleSection(10, content);
}

/** A name (of an export or an import) as the binary format writes it: its length, then its ASCII bytes. */
export function moduleName(text: string): number[] {
  return [text.length, ...Array.from(text, (character) => character.charCodeAt(0))];
}

/** The bytes a hexadecimal string spells (two digits a byte). */
export function bytesFromHex(hex: string): Uint8Array {
  const bytes = new Uint8Array(hex.length / 2);
  for (let index = 0; index < bytes.length; index++)
    bytes[index] = Number.parseInt(hex.slice(2 * index, 2 * index + 2), 16);
  return bytes;
}
