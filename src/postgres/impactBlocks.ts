/** The impact blocks of layout 2: each term's best postings by impact, cut into the stored blocks. */
import type { ForwardRow, ImpactRow } from "./indexData.js";
import { IMPACT_BLOCK_ENDS } from "./sql.js";

/**
 * Collects each term's best postings by impact (descending, then dense id) from the forward rows, keeping at
 * most the deepest block end per term, and cuts them into the stored blocks.
 *
 * Storage is two flat typed arrays with a fixed slot per term (its bound, at most twice the deepest block end
 * plus one), filled in dense-id order: no per-term arrays, no comparator sort while collecting. A full slot is
 * shrunk to its best postings with one native sort of a copy of its impacts (the threshold), keeping dense-id
 * order, so ties at the threshold keep the lowest dense ids.
 */
export class ImpactCollector {
  private readonly limit = IMPACT_BLOCK_ENDS[IMPACT_BLOCK_ENDS.length - 1]!;
  /** A term's slot holds at most this many postings before it is shrunk to `limit + 1`. */
  private readonly capacity = 2 * this.limit + 1;
  /** Where each term's slot starts in {@link docs} / {@link impacts}, and its size. */
  private readonly starts: Float64Array;
  private readonly sizes: Int32Array;
  /** Postings held per term (dense-id order). */
  private readonly counts: Int32Array;
  private readonly docs: Int32Array;
  private readonly impacts: Float64Array;
  private readonly frequencies: Int32Array;
  /**
   * Per term, once its postings were cut: the impact of the last one kept. A later posting (a higher dense id)
   * with an impact no higher ranks after it, so it can never be kept: it is skipped without being stored.
   */
  private readonly floors: Float64Array;
  private readonly scratch: Float64Array;
  private readonly placed: Int32Array;
  /** False once an impact was negative or not finite: the blocks then bound nothing. */
  bounded = true;

  /**
   * @param terms The terms by id.
   * @param bounds Per term id, at least the number of documents whose forward rows will name it (for example its
   *   postings over all fields).
   */
  constructor(
    private readonly terms: readonly string[],
    bounds: ArrayLike<number>,
  ) {
    const count = terms.length;
    this.starts = new Float64Array(count);
    this.sizes = new Int32Array(count);
    let total = 0;
    for (let term = 0; term < count; term++) {
      const size = Math.min(bounds[term] ?? 0, this.capacity);
      this.starts[term] = total;
      this.sizes[term] = size;
      total += size;
    }
    this.counts = new Int32Array(count);
    this.docs = new Int32Array(total);
    this.impacts = new Float64Array(total);
    this.frequencies = new Int32Array(count);
    this.floors = new Float64Array(count).fill(Number.NEGATIVE_INFINITY);
    this.scratch = new Float64Array(this.capacity);
    this.placed = new Int32Array(this.capacity);
  }

  add(row: ForwardRow): void {
    const { docs, impacts, counts, floors } = this;
    for (let index = 0; index < row.impactTerms.length; index++) {
      const term = row.impactTerms[index]!;
      this.frequencies[term]!++;
      const impact = row.impacts[index]!;
      if (!(impact >= 0 && impact < Number.POSITIVE_INFINITY)) this.bounded = false;
      if (impact <= floors[term]!) continue;
      const held = counts[term]!;
      if (held >= this.sizes[term]!) throw new RangeError(`impact bound of term ${term} exceeded`);
      const at = this.starts[term]! + held;
      docs[at] = row.doc;
      impacts[at] = impact;
      counts[term] = held + 1;
      if (held + 1 === this.capacity) this.shrink(term);
    }
  }

  /**
   * Keeps a term's best `limit + 1` postings (impact descending, then dense id), in dense-id order, and raises its
   * floor to the lowest impact kept.
   */
  private shrink(term: number): void {
    const held = this.counts[term]!;
    const keep = this.limit + 1;
    if (held <= keep) return;
    const start = this.starts[term]!;
    const impacts = this.impacts;
    const docs = this.docs;
    const sorted = this.scratch.subarray(0, held);
    sorted.set(impacts.subarray(start, start + held));
    sorted.sort();
    const threshold = sorted[held - keep]!;
    let above = 0;
    for (let index = 0; index < held; index++) if (impacts[start + index]! > threshold) above++;
    let ties = keep - above;
    let kept = 0;
    for (let index = 0; index < held; index++) {
      const impact = impacts[start + index]!;
      if (impact > threshold || (impact === threshold && ties-- > 0)) {
        docs[start + kept] = docs[start + index]!;
        impacts[start + kept] = impact;
        kept++;
      }
    }
    this.counts[term] = kept;
    this.floors[term] = threshold;
  }

  /**
   * Held postings (in dense-id order) in impact order, ties in dense-id order. Each posting's place is found by a
   * binary search in a natively sorted copy of the impacts (where its equal run starts, plus the equal impacts
   * placed before it): no comparator calls. Impacts that do not bound (NaN) take a comparator sort instead.
   */
  private ordered(
    heldDocs: Int32Array,
    heldImpacts: Float64Array,
  ): { docs: Int32Array; impacts: Float64Array } {
    const held = heldDocs.length;
    const docs = new Int32Array(held);
    const impacts = new Float64Array(held);
    if (!this.bounded) {
      const order = new Int32Array(held);
      for (let index = 0; index < held; index++) order[index] = index;
      order.sort((left, right) => heldImpacts[right]! - heldImpacts[left]! || left - right);
      for (let index = 0; index < held; index++) {
        docs[index] = heldDocs[order[index]!]!;
        impacts[index] = heldImpacts[order[index]!]!;
      }
      return { docs, impacts };
    }
    const ascending = this.scratch.subarray(0, held);
    ascending.set(heldImpacts);
    ascending.sort();
    const placed = this.placed.subarray(0, held).fill(0);
    for (let index = 0; index < held; index++) {
      const impact = heldImpacts[index]!;
      // Postings with a higher impact come first: as many as sorted values above this one.
      let low = 0;
      let high = held;
      while (low < high) {
        const middle = (low + high) >>> 1;
        if (ascending[middle]! > impact) high = middle;
        else low = middle + 1;
      }
      const runStart = held - low;
      const position = runStart + placed[runStart]!++;
      docs[position] = heldDocs[index]!;
      impacts[position] = impact;
    }
    return { docs, impacts };
  }

  /** The impact rows, term by term. */
  *rows(): Generator<ImpactRow> {
    for (let term = 0; term < this.terms.length; term++) {
      if (this.counts[term] === 0) continue;
      this.shrink(term);
      const start = this.starts[term]!;
      const held = this.counts[term]!;
      const heldImpacts = this.impacts.subarray(start, start + held);
      const heldDocs = this.docs.subarray(start, start + held);
      const { docs, impacts } = this.ordered(heldDocs, heldImpacts);
      const documentFrequency = this.frequencies[term]!;
      let blockStart = 0;
      for (
        let block = 0;
        block < IMPACT_BLOCK_ENDS.length && blockStart < Math.min(documentFrequency, this.limit);
        block++
      ) {
        const end = Math.min(IMPACT_BLOCK_ENDS[block]!, documentFrequency);
        yield {
          term: this.terms[term]!,
          termId: term,
          block,
          documentFrequency,
          docs: docs.slice(blockStart, end),
          impacts: impacts.slice(blockStart, end),
          nextImpact: end < held ? impacts[end]! : 0,
        };
        blockStart = end;
      }
    }
  }
}
