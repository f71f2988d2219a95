/**
 * The best K documents seen so far by the pruned scorer: a binary heap whose root is the worst of them, so the
 * pruning threshold (the K-th score) is read in constant time. Ranked by score descending, ties by rank (the
 * deterministic tie-break: code-unit order of entry ids).
 */
export class TopDocuments {
  private readonly docs: Int32Array;
  private readonly scores: Float64Array;
  private readonly capacity: number;
  private readonly ranks: Int32Array;
  private size = 0;

  constructor(capacity: number, ranks: Int32Array) {
    this.capacity = capacity;
    this.ranks = ranks;
    this.docs = new Int32Array(capacity);
    this.scores = new Float64Array(capacity);
  }

  /** Whether (score, doc) ranks below (otherScore, otherDoc). */
  private worse(score: number, doc: number, otherScore: number, otherDoc: number): boolean {
    return score < otherScore || (score === otherScore && this.ranks[doc]! > this.ranks[otherDoc]!);
  }

  /** The K-th score once K documents are held; minus infinity before. */
  threshold(): number {
    return this.size === this.capacity ? this.scores[0]! : Number.NEGATIVE_INFINITY;
  }

  /** Keeps `doc` if it ranks among the best K so far (dropping the worst when full). */
  offer(score: number, doc: number): void {
    const { docs, scores, capacity } = this;
    let slot: number;
    if (this.size < capacity) {
      slot = this.size++;
      while (slot > 0) {
        const parent = (slot - 1) >> 1;
        if (!this.worse(score, doc, scores[parent]!, docs[parent]!)) break;
        scores[slot] = scores[parent]!;
        docs[slot] = docs[parent]!;
        slot = parent;
      }
    } else {
      if (!this.worse(scores[0]!, docs[0]!, score, doc)) return;
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
        slot = child;
      }
    }
    scores[slot] = score;
    docs[slot] = doc;
  }

  /** The documents held, best first. */
  ranked(): { doc: number; score: number }[] {
    const slots = Array.from({ length: this.size }, (_, slot) => slot).sort((left, right) =>
      this.worse(this.scores[left]!, this.docs[left]!, this.scores[right]!, this.docs[right]!) ? 1 : -1,
    );
    return slots.map((slot) => ({ doc: this.docs[slot]!, score: this.scores[slot]! }));
  }
}
