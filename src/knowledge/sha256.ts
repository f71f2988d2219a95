/**
 * SHA-256 (FIPS 180-4) that runs in any JavaScript runtime: Node, browsers, edge and worker runtimes. The engine
 * hashes synchronously (cache keys are computed by a generator that pauses between entries, and artifacts are
 * checked inline), so Web Crypto's asynchronous `digest()` does not fit; this is a small incremental
 * implementation instead. Strings are hashed as their UTF-8 encoding with lone surrogates replaced by U+FFFD,
 * exactly as `node:crypto`'s `update(string)` and `TextEncoder` encode them.
 *
 * Where Node's own `node:crypto` is reachable without a static import (`process.getBuiltinModule`, Node >= 20.16),
 * {@link createSha256} uses it: OpenSSL is several times faster than any JavaScript implementation, and a static
 * `node:` import would keep the root export from bundling for the browser. Both give identical digests (tested).
 */

import { nodeBuiltin } from "./runtime.js";

/** An incremental SHA-256: feed it strings (hashed as UTF-8) or bytes, then take the digest once. */
export type Sha256Hash = {
  /** Adds a string (as UTF-8) or bytes to the hashed input; returns the same hash for chaining. */
  update(data: string | Uint8Array): Sha256Hash;
  /** The 32-byte digest. Call once; the hash cannot be updated afterwards. */
  digest(): Uint8Array;
  /** The digest as 64 lowercase hexadecimal digits. Call once (instead of {@link Sha256Hash.digest}). */
  digestHex(): string;
};

// Int32Array: constants above 2^31 read from a Uint32Array are heap numbers, which slows every round.
const ROUND_CONSTANTS = new Int32Array([
  0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5, 0xd807aa98,
  0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786,
  0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8,
  0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13,
  0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819,
  0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a,
  0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
  0xc67178f2,
]);

const INITIAL_STATE = [
  0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
];

const encoder = new TextEncoder();
/** Shared scratch space for encoding strings; a string longer than a third of it is encoded on its own. */
const scratch = new Uint8Array(64 * 1024);

const HEX = Array.from({ length: 256 }, (_, value) => value.toString(16).padStart(2, "0"));

/** The pure JavaScript SHA-256 (also what {@link createSha256} falls back to outside Node). */
export class PureSha256 implements Sha256Hash {
  private readonly state = new Int32Array(INITIAL_STATE);
  private readonly schedule = new Int32Array(64);
  private readonly block = new Uint8Array(64);
  private blockLength = 0;
  /** Total input length in bytes (a double is exact up to 2^53, far beyond anything hashed here). */
  private totalLength = 0;
  private finished = false;

  update(data: string | Uint8Array): this {
    if (this.finished) throw new Error("SHA-256: update() after digest()");
    if (typeof data !== "string") {
      this.updateBytes(data);
      return this;
    }
    // Every UTF-16 code unit takes at most 3 UTF-8 bytes, so a string of up to a third of the scratch space fits.
    if (data.length * 3 <= scratch.length) {
      const { written } = encoder.encodeInto(data, scratch);
      this.updateBytes(scratch.subarray(0, written));
    } else {
      this.updateBytes(encoder.encode(data));
    }
    return this;
  }

  digest(): Uint8Array {
    if (this.finished) throw new Error("SHA-256: digest() called twice");
    this.finished = true;
    const bitLength = this.totalLength * 8;
    const block = this.block;
    block[this.blockLength++] = 0x80;
    if (this.blockLength > 56) {
      block.fill(0, this.blockLength);
      this.compress(block, 0);
      this.blockLength = 0;
    }
    block.fill(0, this.blockLength, 56);
    const view = new DataView(block.buffer, block.byteOffset, 64);
    view.setUint32(56, Math.floor(bitLength / 0x100000000), false);
    view.setUint32(60, bitLength >>> 0, false);
    this.compress(block, 0);
    const output = new Uint8Array(32);
    const outputView = new DataView(output.buffer);
    for (let index = 0; index < 8; index++) outputView.setInt32(index * 4, this.state[index]!, false);
    return output;
  }

  digestHex(): string {
    const bytes = this.digest();
    let hex = "";
    for (let index = 0; index < bytes.length; index++) hex += HEX[bytes[index]!];
    return hex;
  }

  private updateBytes(bytes: Uint8Array): void {
    this.totalLength += bytes.length;
    let offset = 0;
    const block = this.block;
    const length = bytes.length;
    // Byte loops rather than `set(subarray())`: most updates are short, and a subarray per update is an allocation.
    if (this.blockLength > 0) {
      let filled = this.blockLength;
      while (filled < 64 && offset < length) block[filled++] = bytes[offset++]!;
      this.blockLength = filled;
      if (filled < 64) return;
      this.compress(block, 0);
      this.blockLength = 0;
    }
    // Whole blocks straight from the input, no copy.
    for (; offset + 64 <= length; offset += 64) this.compress(bytes, offset);
    let filled = 0;
    while (offset < length) block[filled++] = bytes[offset++]!;
    this.blockLength = filled;
  }

  private compress(bytes: Uint8Array, offset: number): void {
    const w = this.schedule;
    for (let index = 0; index < 16; index++) {
      const at = offset + index * 4;
      w[index] = (bytes[at]! << 24) | (bytes[at + 1]! << 16) | (bytes[at + 2]! << 8) | bytes[at + 3]!;
    }
    for (let index = 16; index < 64; index++) {
      const w15 = w[index - 15]!;
      const w2 = w[index - 2]!;
      const sigma0 = ((w15 >>> 7) | (w15 << 25)) ^ ((w15 >>> 18) | (w15 << 14)) ^ (w15 >>> 3);
      const sigma1 = ((w2 >>> 17) | (w2 << 15)) ^ ((w2 >>> 19) | (w2 << 13)) ^ (w2 >>> 10);
      w[index] = (w[index - 16]! + sigma0 + w[index - 7]! + sigma1) | 0;
    }
    const state = this.state;
    let a = state[0]!;
    let b = state[1]!;
    let c = state[2]!;
    let d = state[3]!;
    let e = state[4]!;
    let f = state[5]!;
    let g = state[6]!;
    let h = state[7]!;
    for (let index = 0; index < 64; index++) {
      const sum1 = ((e >>> 6) | (e << 26)) ^ ((e >>> 11) | (e << 21)) ^ ((e >>> 25) | (e << 7));
      const choose = (e & f) ^ (~e & g);
      const temp1 = (h + sum1 + choose + ROUND_CONSTANTS[index]! + w[index]!) | 0;
      const sum0 = ((a >>> 2) | (a << 30)) ^ ((a >>> 13) | (a << 19)) ^ ((a >>> 22) | (a << 10));
      const majority = (a & b) ^ (a & c) ^ (b & c);
      const temp2 = (sum0 + majority) | 0;
      h = g;
      g = f;
      f = e;
      e = (d + temp1) | 0;
      d = c;
      c = b;
      b = a;
      a = (temp1 + temp2) | 0;
    }
    state[0] = (state[0]! + a) | 0;
    state[1] = (state[1]! + b) | 0;
    state[2] = (state[2]! + c) | 0;
    state[3] = (state[3]! + d) | 0;
    state[4] = (state[4]! + e) | 0;
    state[5] = (state[5]! + f) | 0;
    state[6] = (state[6]! + g) | 0;
    state[7] = (state[7]! + h) | 0;
  }
}

/** The part of `node:crypto`'s Hash used here. */
type NodeHash = {
  update(data: string | Uint8Array): NodeHash;
  digest(): Uint8Array;
  digest(encoding: "hex"): string;
};
type NodeCrypto = { createHash(algorithm: "sha256"): NodeHash };

/** `node:crypto` when the host is Node and exposes it without an import, otherwise null (looked up once). */
function lookUpNodeCrypto(): NodeCrypto | null {
  const found = nodeBuiltin<Partial<NodeCrypto>>("node:crypto");
  return typeof found?.createHash === "function" ? (found as NodeCrypto) : null;
}

let nodeCrypto: NodeCrypto | null | undefined;

class NodeSha256 implements Sha256Hash {
  constructor(private readonly hash: NodeHash) {}
  update(data: string | Uint8Array): this {
    this.hash.update(data);
    return this;
  }
  digest(): Uint8Array {
    const bytes = this.hash.digest();
    return new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  }
  digestHex(): string {
    return this.hash.digest("hex");
  }
}

/**
 * A new SHA-256: Node's native one when reachable without a static import, the pure JavaScript one elsewhere.
 * Pass `{ pure: true }` to force the pure one (tests compare both).
 */
export function createSha256(options: { pure?: boolean } = {}): Sha256Hash {
  if (!options.pure) {
    if (nodeCrypto === undefined) nodeCrypto = lookUpNodeCrypto();
    if (nodeCrypto) return new NodeSha256(nodeCrypto.createHash("sha256"));
  }
  return new PureSha256();
}

/** Whether {@link createSha256} uses Node's native SHA-256 in this runtime (for diagnostics and tests). */
export function usesNativeSha256(): boolean {
  if (nodeCrypto === undefined) nodeCrypto = lookUpNodeCrypto();
  return nodeCrypto !== null;
}
