/**
 * Ordering: the deterministic tie-break (code-unit order of entry ids, as ranks of dense ids) and the bounded
 * top-K selection of scored documents.
 */

/** Code-unit order comparison, the tie-break everywhere (never locale-dependent). */
export function compareCodeUnits(left: string, right: string): number {
  return left < right ? -1 : left > right ? 1 : 0;
}

/** Rank of every id in code-unit order (JavaScript `<` on strings). */
export function rankIds(ids: readonly string[]): Int32Array {
  const ranks = new Int32Array(ids.length);
  let sorted = true;
  for (let index = 1; index < ids.length; index++) {
    if (!(ids[index - 1]! < ids[index]!)) {
      sorted = false;
      break;
    }
  }
  if (sorted) {
    for (let index = 0; index < ids.length; index++) ranks[index] = index;
    return ranks;
  }
  const order = ids.map((_, index) => index).sort((left, right) => compareCodeUnits(ids[left]!, ids[right]!));
  order.forEach((doc, rank) => {
    ranks[doc] = rank;
  });
  return ranks;
}

/**
 * The best `topK` touched documents by score descending, rank ascending (then id, where `idOf` is given). A bounded heap keeps the selection
 * O(T log K) instead of sorting every touched document.
 */
export function selectTop(
  touched: Int32Array,
  count: number,
  topK: number,
  scores: Float64Array,
  ranks: Int32Array | Float64Array,
  idOf?: (doc: number) => string,
): number[] {
  // `worse(a, b)`: a ranks below b. Equal rank keys (only for documents added by a change) compare ids.
  const worse = (a: number, b: number): boolean => {
    const difference = scores[a]! - scores[b]!;
    if (difference !== 0) return difference < 0;
    const rankDifference = ranks[a]! - ranks[b]!;
    return rankDifference > 0 || (rankDifference === 0 && idOf !== undefined && idOf(a) > idOf(b));
  };
  const limit = Math.min(topK, count);
  const heap: number[] = [];
  for (let index = 0; index < count; index++) {
    const doc = touched[index]!;
    if (heap.length < limit) {
      heap.push(doc);
      let child = heap.length - 1;
      while (child > 0) {
        const parent = (child - 1) >> 1;
        if (!worse(heap[child]!, heap[parent]!)) break;
        [heap[child], heap[parent]] = [heap[parent]!, heap[child]!];
        child = parent;
      }
    } else if (worse(heap[0]!, doc)) {
      heap[0] = doc;
      let parent = 0;
      for (;;) {
        const left = parent * 2 + 1;
        const right = left + 1;
        let smallest = parent;
        if (left < limit && worse(heap[left]!, heap[smallest]!)) smallest = left;
        if (right < limit && worse(heap[right]!, heap[smallest]!)) smallest = right;
        if (smallest === parent) break;
        [heap[smallest], heap[parent]] = [heap[parent]!, heap[smallest]!];
        parent = smallest;
      }
    }
  }
  return heap.sort((a, b) => (worse(a, b) ? 1 : worse(b, a) ? -1 : 0));
}
