/** The impact blocks of layout 2: each term's best postings by impact, cut into the stored blocks. */
import type { ForwardRow, ImpactRow } from "./indexData.js";
import { IMPACT_BLOCK_ENDS } from "./sql.js";

/**
 * Collects each term's best postings by impact (descending, then dense id) from the forward rows, keeping at
 * most the deepest block end per term, and cuts them into the stored blocks.
 */
export class ImpactCollector {
  private readonly limit = IMPACT_BLOCK_ENDS[IMPACT_BLOCK_ENDS.length - 1]!;
  private readonly docs: (number[] | undefined)[];
  private readonly impacts: (number[] | undefined)[];
  private readonly frequencies: Int32Array;
  /**
   * Per term, once its postings were cut: the impact of the last one kept. A later posting (a higher dense id)
   * with an impact no higher ranks after it, so it can never be kept: it is skipped without being stored.
   */
  private readonly floors: Float64Array;
  /** False once an impact was negative or not finite: the blocks then bound nothing. */
  bounded = true;

  constructor(private readonly terms: readonly string[]) {
    this.docs = new Array(terms.length);
    this.impacts = new Array(terms.length);
    this.frequencies = new Int32Array(terms.length);
    this.floors = new Float64Array(terms.length).fill(Number.NEGATIVE_INFINITY);
  }

  add(row: ForwardRow): void {
    for (let index = 0; index < row.impactTerms.length; index++) {
      const term = row.impactTerms[index]!;
      this.frequencies[term]!++;
      let docs = this.docs[term];
      let impacts = this.impacts[term];
      if (!docs || !impacts) {
        docs = [];
        impacts = [];
        this.docs[term] = docs;
        this.impacts[term] = impacts;
      }
      const impact = row.impacts[index]!;
      if (!(impact >= 0 && impact < Number.POSITIVE_INFINITY)) this.bounded = false;
      if (impact <= this.floors[term]!) continue;
      docs.push(row.doc);
      impacts.push(impact);
      if (docs.length >= 2 * this.limit + 1) this.cut(term);
    }
  }

  /** Sorts a term's postings by impact and keeps the best `limit` plus the next one (whose impact is the cut). */
  private cut(term: number): void {
    const docs = this.docs[term]!;
    const impacts = this.impacts[term]!;
    const order = Array.from(docs.keys()).sort(
      (left, right) => impacts[right]! - impacts[left]! || docs[left]! - docs[right]!,
    );
    const kept = order.slice(0, this.limit + 1);
    this.docs[term] = kept.map((index) => docs[index]!);
    this.impacts[term] = kept.map((index) => impacts[index]!);
    if (kept.length === this.limit + 1) this.floors[term] = impacts[kept[this.limit]!]!;
  }

  /** The impact rows, term by term. */
  *rows(): Generator<ImpactRow> {
    for (let term = 0; term < this.terms.length; term++) {
      if (!this.docs[term]) continue;
      this.cut(term);
      const docs = this.docs[term]!;
      const impacts = this.impacts[term]!;
      const documentFrequency = this.frequencies[term]!;
      let start = 0;
      for (
        let block = 0;
        block < IMPACT_BLOCK_ENDS.length && start < Math.min(documentFrequency, this.limit);
        block++
      ) {
        const end = Math.min(IMPACT_BLOCK_ENDS[block]!, documentFrequency);
        yield {
          term: this.terms[term]!,
          termId: term,
          block,
          documentFrequency,
          docs: Int32Array.from(docs.slice(start, end)),
          impacts: Float64Array.from(impacts.slice(start, end)),
          nextImpact: end < docs.length ? impacts[end]! : 0,
        };
        start = end;
      }
      this.docs[term] = undefined;
      this.impacts[term] = undefined;
    }
  }
}
