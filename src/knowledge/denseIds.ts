/**
 * Entry ids by dense id, as a finished index holds them: an array (a build, a compaction, an update's additions) or
 * an artifact's id list decoded one id at a time, when a turn first needs it ({@link LazyEntryIds}).
 *
 * Why not always an array: an artifact stores its ids as UTF-8 joined by NUL characters; decoding all of them at
 * load (one string per entry, then promoted to the old generation by the first scavenge) was the largest single
 * cost of a cold start after Node's own (10,000 entries: 744 KB decoded into 10,000 strings, about 330 pages
 * touched), while a first turn reads a few hundred of them (its results, their records, the binary searches of
 * its id lookups).
 */

/** Entry ids by dense id: `at(denseId)` for `0 <= denseId < length` (undefined outside). */
export type EntryIds = {
  readonly length: number;
  at(denseId: number): string | undefined;
  /**
   * The dense id of `id` when this list already decoded it (an artifact's list), else undefined: a turn reads an
   * id by dense id, then looks its entry up by id, and this answers the lookup without a search.
   */
  decodedDenseId?(id: string): number | undefined;
};

/** The ids as an array (an artifact's lazy list decodes all of them once, for the paths that walk every id). */
export function entryIdArray(ids: EntryIds): readonly string[] {
  return ids instanceof LazyEntryIds ? ids.toArray() : (ids as readonly string[]);
}

const SEPARATOR = 0;

/**
 * An artifact's entry ids: `bytes` holds them as UTF-8 joined by NUL bytes (`count` of them), decoded one at a
 * time when first read and kept. The id boundaries come from `starts` (each id's first byte, plus the end of the
 * list plus one: what an artifact that stores them gives) or else from one scan for the separators at the first
 * read. Damage (a boundary that is not a separator, an id that is not valid UTF-8, another number of ids than
 * `count`) is reported through `corrupt` when the id concerned is first read: the bytes are checked against their
 * checksum before, so that only an artifact written wrongly gets there.
 */
export class LazyEntryIds implements EntryIds {
  private starts: Int32Array | null;
  /**
   * The ids decoded so far, by dense id: a map, not an array of `length` holes, since a turn decodes a few hundred
   * of them (a 10k first turn 614) and an array would be allocated and cleared whole at the first read (80 KB at
   * 10,000 entries, 8 MB at a million).
   */
  private readonly decoded = new Map<number, string>();
  private all: readonly string[] | null = null;
  /** The dense id of each id decoded so far. */
  private readonly denseIds = new Map<string, number>();
  private readonly decoder = new TextDecoder("utf-8", { fatal: true });

  constructor(
    private readonly bytes: Uint8Array,
    readonly length: number,
    private readonly corrupt: (message: string) => Error,
    starts: Int32Array | null = null,
  ) {
    if (starts && starts.length !== length + 1)
      throw corrupt("lexical.idStarts does not hold one start per entry");
    this.starts = starts;
  }

  at(denseId: number): string | undefined {
    if (this.all) return this.all[denseId];
    if (!(denseId >= 0 && denseId < this.length)) return undefined;
    const known = this.decoded.get(denseId);
    if (known !== undefined) return known;
    this.starts ??= this.scan();
    const starts = this.starts;
    const start = starts[denseId]!;
    const end = starts[denseId + 1]! - 1;
    // Each id ends at a separator (the last one at the end of the list) and holds none.
    if (
      !(start >= 0 && start <= end && end <= this.bytes.length) ||
      (start > 0 && this.bytes[start - 1] !== SEPARATOR) ||
      (end < this.bytes.length && this.bytes[end] !== SEPARATOR) ||
      (denseId === this.length - 1 && end !== this.bytes.length)
    )
      throw this.corrupt("lexical.idList does not hold one id per entry");
    const bytes = this.bytes.subarray(start, end);
    if (bytes.indexOf(SEPARATOR) >= 0) throw this.corrupt("lexical.idList does not hold one id per entry");
    let id: string;
    try {
      id = this.decoder.decode(bytes);
    } catch {
      throw this.corrupt("lexical.idList is not valid UTF-8");
    }
    if (this.denseIds.has(id)) throw this.corrupt("lexical.idList holds an id twice");
    this.denseIds.set(id, denseId);
    this.decoded.set(denseId, id);
    return id;
  }

  decodedDenseId(id: string): number | undefined {
    return this.denseIds.get(id);
  }

  /** Every id, decoded once (then {@link at} reads this array). */
  toArray(): readonly string[] {
    if (this.all) return this.all;
    let text: string;
    try {
      text = this.decoder.decode(this.bytes);
    } catch {
      throw this.corrupt("lexical.idList is not valid UTF-8");
    }
    const ids = this.length === 0 && text === "" ? [] : text.split("\u0000");
    if (ids.length !== this.length) throw this.corrupt("lexical.idList does not hold one id per entry");
    this.all = ids;
    this.decoded.clear();
    return ids;
  }

  /** Where each id starts, found by one scan for the separators (a native search per id). */
  private scan(): Int32Array {
    const starts = new Int32Array(this.length + 1);
    const bytes = this.bytes;
    let position = 0;
    for (let denseId = 1; denseId < this.length; denseId++) {
      const separator = bytes.indexOf(SEPARATOR, position);
      if (separator < 0) throw this.corrupt("lexical.idList does not hold one id per entry");
      position = separator + 1;
      starts[denseId] = position;
    }
    if (this.length > 0 && bytes.indexOf(SEPARATOR, position) >= 0)
      throw this.corrupt("lexical.idList does not hold one id per entry");
    starts[this.length] = bytes.length + 1;
    return starts;
  }
}
