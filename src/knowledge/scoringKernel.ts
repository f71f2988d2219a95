/**
 * The pruned scorer's per-posting loop, and its pass over a window's documents, in WebAssembly, for posting lists
 * that live in a WebAssembly memory (a loaded artifact's lazily read postings, see `artifactSections.ts`). At a cold
 * start the JavaScript loops run interpreted (a 10k-entry first turn reads 17,777 postings and passes over 3,298
 * documents), allocate a heap number per posting read (about half a megabyte there) and are compiled by TurboFan on
 * another thread while they run; WebAssembly runs compiled (baseline) from its first call and allocates nothing.
 * The same additions and comparisons in the same order, so the same totals and selections bit for bit.
 *
 * The memory starts with the kernel's scratch (the window's totals, marks, touched documents and mask slice, the
 * pass's heap, see {@link SCRATCH_BYTES}); the artifact's lazy sections follow it.
 */
import { WINDOW_DOCUMENTS } from "./scoringList.js";
import {
  bytesFromHex,
  codeSection,
  MODULE_PREAMBLE,
  moduleName,
  moduleSection,
  signedLeb128,
  unsignedLeb128,
} from "./webAssemblyBytes.js";

/** Byte offsets of the scratch at the start of a scoring memory. */
const TOTALS = 0;
const MARKS = TOTALS + WINDOW_DOCUMENTS * 8;
const TOUCHED = MARKS + WINDOW_DOCUMENTS;
const MASK = TOUCHED + WINDOW_DOCUMENTS * 4;
const STATE = MASK + WINDOW_DOCUMENTS;
const HEAP = STATE + 8;
/** The most documents {@link selectBody}'s heap holds. */
export const SELECT_MAX_K = 1024;
/** Bytes a scoring memory holds before the lazy sections (8-byte aligned). */
export const SCRATCH_BYTES = HEAP + SELECT_MAX_K * 8;
const PAGE_BYTES = 65536;
/** The largest memory a 32-bit WebAssembly memory can hold, in pages. */
const MAXIMUM_PAGES = 65536;

const I32 = 0x7f;
const F64 = 0x7c;
const VOID = 0x40;
const get = (local: number) => [0x20, local];
const set = (local: number) => [0x21, local];
const tee = (local: number) => [0x22, local];
const constant = (value: number) => [0x41, ...signedLeb128(value)];
const I32_EQZ = 0x45;
const I32_GE_S = 0x4e;
const I32_LT_S = 0x48;
const I32_ADD = 0x6a;
const I32_SUB = 0x6b;
const I32_SHL = 0x74;
const I32_SHR_S = 0x75;
const F64_LT = 0x63;
const F64_LE = 0x65;
const F64_GE = 0x66;
const F64_ADD = 0xa0;
const F64_MUL = 0xa2;
const F64_MAX = 0xa5;
const SELECT = 0x1b;
/** Memory access with alignment `align` (log2) and offset `offset`. */
const access = (opcode: number, align: number, offset: number) => [opcode, align, ...unsignedLeb128(offset)];
const loadByte = (offset: number) => access(0x2d, 0, offset);
const storeByte = (offset: number) => access(0x3a, 0, offset);
const loadInt = (offset: number) => access(0x28, 2, offset);
const storeInt = (offset: number) => access(0x36, 2, offset);
const loadFloat = (offset: number) => access(0x2b, 3, offset);
const storeFloat = (offset: number) => access(0x39, 3, offset);
/** `value << shift` of a local. */
const shifted = (local: number, shift: number) => [...get(local), ...constant(shift), I32_SHL];
const increment = (local: number) => [...get(local), ...constant(1), I32_ADD, ...set(local)];
/** `block { loop { body } }`: inside `body`, `br 1` leaves and `br 0` continues. */
const loop = (body: number[]) => [0x02, VOID, 0x03, VOID, ...body, 0x0b, 0x0b];
/** `if (condition on the stack) { body }` (a label of its own: `br 0` leaves it). */
const when = (body: number[]) => [0x04, VOID, ...body, 0x0b];
/** `if (condition on the stack) { then } else { otherwise }`. */
const choose = (then: number[], otherwise: number[]) => [0x04, VOID, ...then, 0x05, ...otherwise, 0x0b];
const branch = (depth: number) => [0x0c, depth];
const branchIf = (depth: number) => [0x0d, depth];

/**
 * `sparse(docs, contributions, position, end, windowStart, windowEnd, masked, count)`: the sparse window loop of
 * `scoreLists` over one list whose document ids start at byte `docs` and contributions at byte `contributions`:
 * from `position` while below `end` and the document below `windowEnd`, a document whose mask byte (when
 * `masked`: the window's slice at {@link MASK}) is 0 is passed over, else marked and appended to the touched list
 * on its first posting, and its contribution added to its total. Returns the touched count; stores the position
 * reached at {@link STATE}.
 */
function sparseBody(): number[] {
  const [DOCS, CONTRIBUTIONS, POSITION, END, WINDOW_START, WINDOW_END, MASKED, COUNT, LOCAL] = [
    0, 1, 2, 3, 4, 5, 6, 7, 8,
  ];
  return [
    1,
    1,
    I32,
    ...loop([
      ...get(POSITION),
      ...get(END),
      I32_GE_S,
      ...branchIf(1),
      // local = docs[position]; if (local >= windowEnd) break; local -= windowStart
      ...get(DOCS),
      ...shifted(POSITION, 2),
      I32_ADD,
      ...loadInt(0),
      ...tee(LOCAL),
      ...get(WINDOW_END),
      I32_GE_S,
      ...branchIf(1),
      ...get(LOCAL),
      ...get(WINDOW_START),
      I32_SUB,
      ...set(LOCAL),
      // block $skip: if (masked && mask[local] === 0) skip
      0x02,
      VOID,
      ...get(MASKED),
      ...when([...get(LOCAL), ...loadByte(MASK), I32_EQZ, ...branchIf(1)]),
      // if (marks[local] === 0) { marks[local] = 1; touched[count++] = local }
      ...get(LOCAL),
      ...loadByte(MARKS),
      I32_EQZ,
      ...when([
        ...get(LOCAL),
        ...constant(1),
        ...storeByte(MARKS),
        ...shifted(COUNT, 2),
        ...get(LOCAL),
        ...storeInt(TOUCHED),
        ...increment(COUNT),
      ]),
      // totals[local] += contributions[position]
      ...shifted(LOCAL, 3),
      ...shifted(LOCAL, 3),
      ...loadFloat(TOTALS),
      ...get(CONTRIBUTIONS),
      ...shifted(POSITION, 3),
      I32_ADD,
      ...loadFloat(0),
      F64_ADD,
      ...storeFloat(TOTALS),
      0x0b,
      ...increment(POSITION),
      ...branch(0),
    ]),
    ...constant(STATE),
    ...get(POSITION),
    ...storeInt(0),
    ...get(COUNT),
    0x0b,
  ];
}

/**
 * `select(count, shift, scale, bar, k, below)`: keeps in `touched[0, count)` (in order) the documents whose
 * `(total + shift) * scale` is at least the bar (with `below`: is not below it, which keeps a NaN, as the probing
 * loop's test does), clearing the total and mark of the others; returns how many are kept. The bar is `bar`, or with `k > 0` the larger of `bar` and the k-th largest total of the documents before
 * (kept or not; a min-heap of k doubles at {@link HEAP}): see `scoreLists`, where this passes over the documents its
 * loop would turn away.
 */
function selectBody(): number[] {
  const [COUNT, SHIFT, SCALE, BAR, K, BELOW] = [0, 1, 2, 3, 4, 5];
  const [INDEX, KEPT, LOCAL, SIZE] = [6, 7, 8, 9];
  const [TOTAL, LIMIT, VALUE] = [10, 11, 12];
  return [
    2,
    4,
    I32,
    3,
    F64,
    ...loop([
      ...get(INDEX),
      ...get(COUNT),
      I32_GE_S,
      ...branchIf(1),
      // local = touched[index]; total = totals[local]
      ...shifted(INDEX, 2),
      ...loadInt(TOUCHED),
      ...tee(LOCAL),
      ...constant(3),
      I32_SHL,
      ...loadFloat(TOTALS),
      ...set(TOTAL),
      // limit = size === k && k > 0 ? max(bar, heap[0]) : bar
      ...get(BAR),
      ...constant(HEAP),
      ...loadFloat(0),
      F64_MAX,
      ...get(BAR),
      ...get(SIZE),
      ...get(K),
      I32_GE_S,
      ...get(K),
      ...constant(0),
      0x47, // i32.ne
      0x71, // i32.and
      SELECT,
      ...set(LIMIT),
      // value = (total + shift) * scale; kept when below ? !(value < limit) : value >= limit (they differ for NaN)
      ...get(TOTAL),
      ...get(SHIFT),
      F64_ADD,
      ...get(SCALE),
      F64_MUL,
      ...set(VALUE),
      ...get(VALUE),
      ...get(LIMIT),
      F64_LT,
      I32_EQZ,
      ...get(VALUE),
      ...get(LIMIT),
      F64_GE,
      ...get(BELOW),
      SELECT,
      // if (kept) touched[kept++] = local; else clear its total and mark
      ...choose(
        [...shifted(KEPT, 2), ...get(LOCAL), ...storeInt(TOUCHED), ...increment(KEPT)],
        [
          ...shifted(LOCAL, 3),
          0x44,
          0,
          0,
          0,
          0,
          0,
          0,
          0,
          0,
          ...storeFloat(TOTALS),
          ...get(LOCAL),
          ...constant(0),
          ...storeByte(MARKS),
        ],
      ),
      // The k largest totals so far (see `heapOfferBody`), when the total enters them.
      ...get(K),
      ...when([
        ...get(SIZE),
        ...get(K),
        I32_LT_S,
        ...constant(HEAP),
        ...loadFloat(0),
        ...get(TOTAL),
        F64_LT,
        0x72, // i32.or
        ...when([...get(TOTAL), ...get(K), ...get(SIZE), 0x10, 2, ...set(SIZE)]),
      ]),
      ...increment(INDEX),
      ...branch(0),
    ]),
    ...get(KEPT),
    0x0b,
  ];
}

/**
 * `heapOffer(total, k, size)`: adds `total` to the min-heap of the k largest totals at {@link HEAP} holding `size`
 * (sifted up while fewer than k; else, when above the smallest, it replaces it and sifts down); returns the new
 * size. A function of its own, called only when the total enters the heap: `select`'s loop stays short.
 */
function heapOfferBody(): number[] {
  const [TOTAL, K, SIZE, SLOT, CHILD] = [0, 1, 2, 3, 4];
  const heapAt = (local: number) => [...shifted(local, 3), ...loadFloat(HEAP)];
  // Both sifts: heap[slot] = heap[child]; slot = child; continue the loop. And, once it stops: heap[slot] = total.
  const moveChildToSlot = [
    ...shifted(SLOT, 3),
    ...heapAt(CHILD),
    ...storeFloat(HEAP),
    ...get(CHILD),
    ...set(SLOT),
    ...branch(0),
  ];
  const placeTotal = [...shifted(SLOT, 3), ...get(TOTAL), ...storeFloat(HEAP)];
  return [
    1,
    2,
    I32,
    ...get(SIZE),
    ...get(K),
    I32_LT_S,
    ...choose(
      [
        ...get(SIZE),
        ...set(SLOT),
        ...increment(SIZE),
        ...loop([
          ...get(SLOT),
          I32_EQZ,
          ...branchIf(1),
          // child = parent = (slot - 1) >> 1; if (heap[parent] <= total) break
          ...get(SLOT),
          ...constant(1),
          I32_SUB,
          ...constant(1),
          I32_SHR_S,
          ...tee(CHILD),
          ...constant(3),
          I32_SHL,
          ...loadFloat(HEAP),
          ...get(TOTAL),
          F64_LE,
          ...branchIf(1),
          ...moveChildToSlot,
        ]),
        ...placeTotal,
      ],
      [
        ...constant(HEAP),
        ...loadFloat(0),
        ...get(TOTAL),
        F64_LT,
        ...when([
          ...constant(0),
          ...set(SLOT),
          ...loop([
            // child = 2 * slot + 1; if (child >= k) break; the smaller child; if (heap[child] >= total) break
            ...shifted(SLOT, 1),
            ...constant(1),
            I32_ADD,
            ...tee(CHILD),
            ...get(K),
            I32_GE_S,
            ...branchIf(1),
            ...get(CHILD),
            ...constant(1),
            I32_ADD,
            ...get(K),
            I32_LT_S,
            ...when([
              ...get(CHILD),
              ...constant(1),
              I32_ADD,
              ...constant(3),
              I32_SHL,
              ...loadFloat(HEAP),
              ...heapAt(CHILD),
              F64_LT,
              ...when(increment(CHILD)),
            ]),
            ...heapAt(CHILD),
            ...get(TOTAL),
            F64_GE,
            ...branchIf(1),
            ...moveChildToSlot,
          ]),
          ...placeTotal,
        ]),
      ],
    ),
    ...get(SIZE),
    0x0b,
  ];
}

/** The kernel's bytes: {@link sparseBody} and {@link selectBody} over an imported memory. @internal */
export function scoringKernelBytes(): Uint8Array {
  const sparse = sparseBody();
  const select = selectBody();
  const heapOffer = heapOfferBody();
  return Uint8Array.from([
    ...MODULE_PREAMBLE,
    // (i32 x 8) -> i32 and (i32, f64, f64, f64, i32) -> i32
    ...moduleSection(1, [
      3,
      0x60,
      8,
      I32,
      I32,
      I32,
      I32,
      I32,
      I32,
      I32,
      I32,
      1,
      I32,
      0x60,
      6,
      I32,
      F64,
      F64,
      F64,
      I32,
      I32,
      1,
      I32,
      0x60,
      3,
      F64,
      I32,
      I32,
      1,
      I32,
    ]),
    // import e.m: a memory of at least one page
    ...moduleSection(2, [1, ...moduleName("e"), ...moduleName("m"), 2, 0, 1]),
    ...moduleSection(3, [3, 0, 1, 2]),
    ...moduleSection(7, [2, ...moduleName("sparse"), 0, 0, ...moduleName("select"), 0, 1]),
    ...codeSection(sparse, select, heapOffer),
  ]);
}

/** {@link scoringKernelBytes} in hexadecimal, what a process compiles (building them runs cold JavaScript). @internal */
export const SCORING_KERNEL_HEX =
  "0061736d01000000011e0360087f7f7f7f7f7f7f7f017f60067f7c7c7c7f7f017f60037c7f7f017f0208010165016d0200010304030001020713020673706172736500000673656c65637400010abb0403930101017f02400340200220034e0d01200020024102746a280200220820054e0d01200820046b210802402006044020082d0080801a450d010b20082d00808010450440200841013a00808010200741027420083602808012200741016a21070b200841037420084103742b0300200120024103746a2b0300a03903000b200241016a21020c000b0b4180801c200236020020070bb70102047f037c02400340200620004e0d012006410274280280801222084103742b0300210a20034188801c2b0300a52003200920044e2004410047711b210b200a2001a02002a2210c200c200b6345200c200b6620051b0440200741027420083602808012200741016a2107052008410374440000000000000000390300200841003a008080100b2004044020092004484188801c2b0300200a63720440200a20042009100221090b0b200641016a21060c000b0b20070bea0101027f2002200148044020022103200241016a2102024003402003450d01200341016b41017522044103742b0388801c2000650d01200341037420044103742b0388801c390388801c200421030c000b0b20034103742000390388801c054188801c2b030020006304404100210302400340200341017441016a220420014e0d01200441016a2001480440200441016a4103742b0388801c20044103742b0388801c630440200441016a21040b0b20044103742b0388801c2000660d01200341037420044103742b0388801c390388801c200421030c000b0b20034103742000390388801c0b0b20020b";

/** The bytes of {@link SCORING_KERNEL_HEX}. */
function kernelModule(): Uint8Array {
  return bytesFromHex(SCORING_KERNEL_HEX);
}

type Select = (count: number, shift: number, scale: number, bar: number, k: number, below: number) => number;

type SparseScan = (
  docs: number,
  contributions: number,
  position: number,
  end: number,
  windowStart: number,
  windowEnd: number,
  masked: number,
  count: number,
) => number;

/** A scoring memory's kernel and its scratch, as `scoreLists` uses them. */
export type ScoringKernel = {
  buffer: ArrayBuffer;
  totals: Float64Array;
  marks: Uint8Array;
  touched: Int32Array;
  mask: Uint8Array;
  /** `[0]`: the position the last {@link ScoringKernel.sparse} call reached. */
  state: Int32Array;
  sparse: SparseScan;
  select: Select;
};

type WebAssemblyHost = {
  WebAssembly?: {
    Module: new (bytes: Uint8Array) => unknown;
    Memory: new (descriptor: { initial: number }) => { buffer: ArrayBuffer };
    Instance: new (
      module: unknown,
      imports: { e: { m: unknown } },
    ) => {
      exports: { sparse: SparseScan; select: Select };
    };
  };
};

/** The compiled module (undefined: not tried yet; null: WebAssembly missing or refused). */
let compiled: unknown | null | undefined;
/** The kernel of each scoring memory's buffer. */
const kernels = new WeakMap<ArrayBuffer, ScoringKernel>();

/**
 * A zeroed buffer of at least `byteLength` bytes in a WebAssembly memory with a scoring kernel, whose first
 * {@link SCRATCH_BYTES} are the kernel's (the caller's data goes after them), or null where WebAssembly is
 * unavailable or the memory would be too large.
 */
export function scoringBuffer(byteLength: number): ArrayBuffer | null {
  const host = (globalThis as WebAssemblyHost).WebAssembly;
  if (!host || compiled === null) return null;
  const pages = Math.ceil((SCRATCH_BYTES + byteLength) / PAGE_BYTES);
  if (pages > MAXIMUM_PAGES) return null;
  try {
    compiled ??= new host.Module(kernelModule());
    const memory = new host.Memory({ initial: pages });
    const { sparse, select } = new host.Instance(compiled, { e: { m: memory } }).exports;
    const buffer = memory.buffer;
    kernels.set(buffer, {
      buffer,
      totals: new Float64Array(buffer, TOTALS, WINDOW_DOCUMENTS),
      marks: new Uint8Array(buffer, MARKS, WINDOW_DOCUMENTS),
      touched: new Int32Array(buffer, TOUCHED, WINDOW_DOCUMENTS),
      mask: new Uint8Array(buffer, MASK, WINDOW_DOCUMENTS),
      state: new Int32Array(buffer, STATE, 1),
      sparse,
      select,
    });
    return buffer;
  } catch {
    // A host that forbids compiling WebAssembly (a content security policy, `--jitless`), or no memory to map.
    compiled ??= null;
    return null;
  }
}

/** The kernel of the scoring memory `buffer` belongs to, or undefined. */
export function scoringKernelOf(buffer: ArrayBufferLike): ScoringKernel | undefined {
  return kernels.get(buffer as ArrayBuffer);
}
