/**
 * A fast 32-bit checksum for index artifacts: it detects accidental corruption (a flipped byte, a truncated or
 * partly overwritten file), not tampering: whoever can change the file can recompute it, so a cryptographic hash
 * would add cost (SHA-256 reads about 1 GB/s here) without adding protection. Four independent lanes of
 * multiply-rotate over little-endian 32-bit words (in the spirit of xxHash32, written here), folded with the
 * length and Murmur3's finalizer; it reads several gigabytes per second, which keeps loading an artifact cheap.
 */

const PRIME_1 = 0x9e3779b1;
const PRIME_2 = 0x85ebca77;
const PRIME_3 = 0xc2b2ae3d;
const PRIME_4 = 0x27d4eb2f;

function rotate(value: number, bits: number): number {
  return (value << bits) | (value >>> (32 - bits));
}

/** The checksum of `bytes` (an unsigned 32-bit integer); equal bytes give equal checksums on every host. */
export function checksum32(bytes: Uint8Array): number {
  const length = bytes.byteLength;
  let lane1 = PRIME_1;
  let lane2 = PRIME_2;
  let lane3 = PRIME_3;
  let lane4 = PRIME_4;
  let index = 0;
  // The bulk as 32-bit words when the view is 4-byte aligned (artifact sections are); bytes otherwise.
  const stripes = length >>> 4;
  if (stripes > 0 && bytes.byteOffset % 4 === 0) {
    const words = new Int32Array(bytes.buffer, bytes.byteOffset, stripes * 4);
    for (let word = 0; word < words.length; word += 4) {
      lane1 = Math.imul(rotate(lane1 + Math.imul(words[word]!, PRIME_2), 13), PRIME_1);
      lane2 = Math.imul(rotate(lane2 + Math.imul(words[word + 1]!, PRIME_2), 13), PRIME_1);
      lane3 = Math.imul(rotate(lane3 + Math.imul(words[word + 2]!, PRIME_2), 13), PRIME_1);
      lane4 = Math.imul(rotate(lane4 + Math.imul(words[word + 3]!, PRIME_2), 13), PRIME_1);
    }
    index = stripes * 16;
  } else if (stripes > 0) {
    for (; index + 16 <= length; index += 16) {
      lane1 = Math.imul(rotate(lane1 + Math.imul(readWord(bytes, index), PRIME_2), 13), PRIME_1);
      lane2 = Math.imul(rotate(lane2 + Math.imul(readWord(bytes, index + 4), PRIME_2), 13), PRIME_1);
      lane3 = Math.imul(rotate(lane3 + Math.imul(readWord(bytes, index + 8), PRIME_2), 13), PRIME_1);
      lane4 = Math.imul(rotate(lane4 + Math.imul(readWord(bytes, index + 12), PRIME_2), 13), PRIME_1);
    }
  }
  let hash = (rotate(lane1, 1) + rotate(lane2, 7) + rotate(lane3, 12) + rotate(lane4, 18)) | 0;
  hash = (hash + length) | 0;
  for (; index < length; index++) {
    hash = Math.imul(rotate(hash + Math.imul(bytes[index]!, PRIME_4), 11), PRIME_1);
  }
  hash ^= hash >>> 15;
  hash = Math.imul(hash, PRIME_2);
  hash ^= hash >>> 13;
  hash = Math.imul(hash, PRIME_3);
  hash ^= hash >>> 16;
  return hash >>> 0;
}

function readWord(bytes: Uint8Array, index: number): number {
  return bytes[index]! | (bytes[index + 1]! << 8) | (bytes[index + 2]! << 16) | (bytes[index + 3]! << 24);
}
