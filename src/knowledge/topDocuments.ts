/**
 * The best K documents seen so far by the pruned scorer: a binary heap whose root is the worst of them, so the
 * pruning threshold (the K-th score) is read in constant time. Ranked by score descending, ties by rank (the
 * deterministic tie-break: code-unit order of entry ids).
 *
 * A score may be offered as approximate: the same contributions summed in another order than the exhaustive one
 * (within a relative 2^-39 of the exact sum for the longest query, see {@link RESERVE_SLACK}), so that the scorer
 * need not probe every list again for each document that enters the heap (most are pushed out later). While the
 * heap holds an approximate score, or the document pushed out or turned away has one, a document within
 * {@link RESERVE_SLACK} of the threshold may still belong to the exact top K: it is kept aside (the reserve), and
 * {@link TopDocuments.ranked} decides the held and reserved documents on their exact scores.
 */

/**
 * Relative margin under the threshold within which a document turned away on an approximate comparison is kept.
 * Approximate and exact scores are sums of the same n ≤ 5,120 non-negative contributions; each differs from the
 * real sum by at most n × 2^-53 of it, so from each other by less than 2^-39: this margin is far above that, and far
 * below the pruning's own slack (2^-20), which therefore still skips only documents certainly below the threshold.
 */
export const RESERVE_SLACK = 2 ** -30;

export class TopDocuments {
  private readonly docs: Int32Array;
  private readonly scores: Float64Array;
  /** Per slot: 1 when the score is exact. */
  private readonly exact: Uint8Array;
  private readonly capacity: number;
  private readonly ranks: Int32Array;
  private size = 0;
  /** Approximate scores held. */
  private approximateHeld = 0;
  /** Documents turned away or pushed out within {@link RESERVE_SLACK} of the threshold (see the module comment). */
  private reserveDocs: number[] = [];
  private reserveScores: number[] = [];
  private reserveExact: boolean[] = [];

  constructor(capacity: number, ranks: Int32Array) {
    this.capacity = capacity;
    this.ranks = ranks;
    this.docs = new Int32Array(capacity);
    this.scores = new Float64Array(capacity);
    this.exact = new Uint8Array(capacity);
  }

  /** Whether (score, doc) ranks below (otherScore, otherDoc). */
  private worse(score: number, doc: number, otherScore: number, otherDoc: number): boolean {
    return score < otherScore || (score === otherScore && this.ranks[doc]! > this.ranks[otherDoc]!);
  }

  /** The K-th score once K documents are held; minus infinity before. */
  threshold(): number {
    return this.size === this.capacity ? this.scores[0]! : Number.NEGATIVE_INFINITY;
  }

  /**
   * Writes the scores held, best first, into `into` (at least K long) and returns how many: the j-th of them never
   * decreases while documents are offered (what a split search's parts publish to each other, see
   * `scoringProtocol.ts`).
   */
  bestScores(into: Float64Array): number {
    const size = this.size;
    const sorted = into.subarray(0, size);
    sorted.set(this.scores.subarray(0, size));
    sorted.sort();
    sorted.reverse();
    return size;
  }

  /**
   * Keeps `doc` if it ranks among the best K so far (dropping the worst when full). `exact`: false when `score`
   * is an approximate sum (see the module comment).
   */
  offer(score: number, doc: number, exact = true): void {
    const { docs, scores, capacity } = this;
    let slot: number;
    if (this.size < capacity) {
      slot = this.size++;
      while (slot > 0) {
        const parent = (slot - 1) >> 1;
        if (!this.worse(score, doc, scores[parent]!, docs[parent]!)) break;
        scores[slot] = scores[parent]!;
        docs[slot] = docs[parent]!;
        this.exact[slot] = this.exact[parent]!;
        slot = parent;
      }
    } else {
      if (!this.worse(scores[0]!, docs[0]!, score, doc)) {
        this.reserve(score, doc, exact);
        return;
      }
      const outScore = scores[0]!;
      const outDoc = docs[0]!;
      const outExact = this.exact[0] === 1;
      if (!outExact) this.approximateHeld--;
      slot = 0;
      for (;;) {
        const left = slot * 2 + 1;
        if (left >= capacity) break;
        const right = left + 1;
        let child = left;
        if (right < capacity && this.worse(scores[right]!, docs[right]!, scores[left]!, docs[left]!))
          child = right;
        if (!this.worse(scores[child]!, docs[child]!, score, doc)) break;
        scores[slot] = scores[child]!;
        docs[slot] = docs[child]!;
        this.exact[slot] = this.exact[child]!;
        slot = child;
      }
      scores[slot] = score;
      docs[slot] = doc;
      this.exact[slot] = exact ? 1 : 0;
      if (!exact) this.approximateHeld++;
      this.reserve(outScore, outDoc, outExact);
      return;
    }
    scores[slot] = score;
    docs[slot] = doc;
    this.exact[slot] = exact ? 1 : 0;
    if (!exact) this.approximateHeld++;
  }

  /** Keeps aside a document turned away (or pushed out) when an approximate comparison could have misplaced it. */
  private reserve(score: number, doc: number, exact: boolean): void {
    if (exact && this.approximateHeld === 0) return;
    const threshold = this.scores[0]!;
    if (score * (1 + RESERVE_SLACK) < threshold) return;
    this.reserveDocs.push(doc);
    this.reserveScores.push(score);
    this.reserveExact.push(exact);
    if (this.reserveDocs.length > 2 * this.capacity + 64) this.trimReserve();
  }

  /** Drops the reserved documents the threshold has since left behind. */
  private trimReserve(): void {
    const threshold = this.threshold();
    let kept = 0;
    for (let index = 0; index < this.reserveDocs.length; index++) {
      const score = this.reserveScores[index]!;
      if (score * (1 + RESERVE_SLACK) < threshold) continue;
      this.reserveDocs[kept] = this.reserveDocs[index]!;
      this.reserveScores[kept] = score;
      this.reserveExact[kept] = this.reserveExact[index]!;
      kept++;
    }
    this.reserveDocs.length = kept;
    this.reserveScores.length = kept;
    this.reserveExact.length = kept;
  }

  /**
   * The best K documents, best first, on exact scores: `exactScore(doc)` is called for each held or reserved
   * document whose score is approximate (and for every document when `resolveEvery`, for a caller that needs
   * something it computes along, such as posting positions). `floor`: a lower bound of a whole search's K-th score
   * when this is one part of it (see `ScoringPart`): a document certainly below it is left out, unsummed (so a
   * part's result may hold fewer than K documents, but every one of the whole top K in it).
   */
  ranked(
    exactScore: (doc: number) => number = () => {
      throw new Error("TopDocuments.ranked: approximate scores need exactScore");
    },
    resolveEvery = false,
    floor = Number.NEGATIVE_INFINITY,
  ): { doc: number; score: number }[] {
    return this.rankedTogether(
      (docs, count, scores) => {
        for (let index = 0; index < count; index++) scores[index] = exactScore(docs[index]!);
      },
      resolveEvery,
      floor,
    );
  }

  /**
   * {@link ranked} with the exact scores summed together: `exactScores(docs, count, scores)` writes the exact score
   * of each of `docs[0, count)` to `scores` (once, for every document that needs one), so the caller can search each
   * list once for all of them.
   */
  rankedTogether(
    exactScores: (docs: Int32Array, count: number, scores: Float64Array) => void,
    resolveEvery = false,
    floor = Number.NEGATIVE_INFINITY,
  ): { doc: number; score: number }[] {
    this.trimReserve();
    // The documents kept (above the floor), then the ones among them whose exact scores are needed.
    const total = this.size + this.reserveDocs.length;
    const docs = new Int32Array(total);
    const scores = new Float64Array(total);
    const pending = new Int32Array(total);
    let kept = 0;
    let pendingCount = 0;
    for (let slot = 0; slot < this.size; slot++) {
      if (this.scores[slot]! * (1 + RESERVE_SLACK) < floor) continue;
      docs[kept] = this.docs[slot]!;
      scores[kept] = this.scores[slot]!;
      if (resolveEvery || this.exact[slot] === 0) pending[pendingCount++] = kept;
      kept++;
    }
    for (let index = 0; index < this.reserveDocs.length; index++) {
      if (this.reserveScores[index]! * (1 + RESERVE_SLACK) < floor) continue;
      docs[kept] = this.reserveDocs[index]!;
      scores[kept] = this.reserveScores[index]!;
      if (resolveEvery || !this.reserveExact[index]) pending[pendingCount++] = kept;
      kept++;
    }
    if (pendingCount > 0) {
      const pendingDocs = new Int32Array(pendingCount);
      for (let index = 0; index < pendingCount; index++) pendingDocs[index] = docs[pending[index]!]!;
      const exact = new Float64Array(pendingCount);
      exactScores(pendingDocs, pendingCount, exact);
      for (let index = 0; index < pendingCount; index++) scores[pending[index]!] = exact[index]!;
    }
    const candidates: { doc: number; score: number }[] = [];
    for (let index = 0; index < kept; index++) candidates.push({ doc: docs[index]!, score: scores[index]! });
    candidates.sort((left, right) => (this.worse(left.score, left.doc, right.score, right.doc) ? 1 : -1));
    if (candidates.length > this.capacity) candidates.length = this.capacity;
    return candidates;
  }
}
