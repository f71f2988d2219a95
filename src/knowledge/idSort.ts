/**
 * Sorting entry ids in code-unit order (the order of dense ids) without comparing strings for most of the work: an
 * MSD radix-style sort on packed prefixes. Each round packs three code units of every id in a group, from the
 * group's common depth, into one integer key (exact in a double), sorts the group by those keys with a quicksort
 * over typed arrays, and goes on with each run of equal keys three code units deeper. Ids that share long
 * prefixes (a domain, then a path) cost a pass over their keys per three shared code units, not a string
 * comparison per pair at every level of a comparison sort. A build of a million entries spent ~4–5 s in the
 * engine's string sort plus an id → entry map; this sorts indices, so no map is needed.
 */

/** Groups this small are sorted by comparing the ids themselves (insertion sort). */
const SMALL_GROUP = 32;
/** Each code unit takes 17 bits in a key: 0 past the id's end, else the unit + 1 (so an end sorts first). */
const UNIT_SPAN = 0x20000;
/** Code units packed per key: 3 × 17 = 51 bits, exact in a double. */
const UNITS_PER_KEY = 3;

/**
 * The order of `ids` by code units (what `<` on strings compares): `order[rank]` is the index in `ids` of the id
 * with that rank. Equal ids keep their input order (a stable sort), so a build that reports duplicates reports
 * the same ones as a stable comparison sort.
 */
export function sortedIdOrder(ids: readonly string[]): Int32Array {
  const count = ids.length;
  const order = new Int32Array(count);
  for (let index = 0; index < count; index++) order[index] = index;
  const keys = new Float64Array(count);
  // Groups still to sort: [start, end, depth] triples (depth: code units every id of the group shares).
  const pending: number[] = [0, count, 0];
  while (pending.length > 0) {
    const depth = pending.pop()!;
    const end = pending.pop()!;
    const start = pending.pop()!;
    if (end - start <= SMALL_GROUP) {
      insertionSortByIds(ids, order, start, end);
      continue;
    }
    let allEqual = true;
    for (let position = start; position < end; position++) {
      const key = packedKey(ids[order[position]!]!, depth);
      keys[position] = key;
      if (key !== keys[start]) allEqual = false;
    }
    if (allEqual) {
      // One run: every id shares the next code units too (or ended: equal ids).
      if (keys[start]! % UNIT_SPAN === 0) sortByIndex(order, start, end);
      else pending.push(start, end, depth + UNITS_PER_KEY);
      continue;
    }
    sortByKeys(keys, order, start, end);
    let runStart = start;
    for (let position = start + 1; position <= end; position++) {
      if (position < end && keys[position] === keys[runStart]) continue;
      if (position - runStart > 1) {
        // Ids whose last packed unit is past their end are equal (duplicates): kept in input order.
        if (keys[runStart]! % UNIT_SPAN === 0) sortByIndex(order, runStart, position);
        else pending.push(runStart, position, depth + UNITS_PER_KEY);
      }
      runStart = position;
    }
  }
  return order;
}

/** Three code units of `id` from `depth` packed as 17-bit digits (0 past the end, else unit + 1). */
function packedKey(id: string, depth: number): number {
  const length = id.length;
  const first = depth < length ? id.charCodeAt(depth) + 1 : 0;
  const second = depth + 1 < length ? id.charCodeAt(depth + 1) + 1 : 0;
  const third = depth + 2 < length ? id.charCodeAt(depth + 2) + 1 : 0;
  return (first * UNIT_SPAN + second) * UNIT_SPAN + third;
}

/** Sorts `order[start, end)` by the ids they point at (then by index), comparing the strings. */
function insertionSortByIds(ids: readonly string[], order: Int32Array, start: number, end: number): void {
  for (let position = start + 1; position < end; position++) {
    const moving = order[position]!;
    const id = ids[moving]!;
    let target = position - 1;
    while (target >= start) {
      const other = order[target]!;
      const otherId = ids[other]!;
      if (otherId < id || (otherId === id && other < moving)) break;
      order[target + 1] = other;
      target--;
    }
    order[target + 1] = moving;
  }
}

/** Sorts `order[start, end)` by value (the input order of equal ids). */
function sortByIndex(order: Int32Array, start: number, end: number): void {
  order.subarray(start, end).sort();
}

/**
 * Sorts `keys[start, end)` ascending, moving `order` along: a quicksort with a median-of-three pivot and a
 * three-way partition (runs of equal keys are common), insertion sort below a few elements.
 */
function sortByKeys(keys: Float64Array, order: Int32Array, start: number, end: number): void {
  // Explicit stack of ranges; the larger side is pushed, the smaller one looped on (depth stays logarithmic).
  const ranges: number[] = [];
  let low = start;
  let high = end - 1;
  for (;;) {
    while (high - low < SMALL_GROUP) {
      for (let position = low + 1; position <= high; position++) {
        const key = keys[position]!;
        const moving = order[position]!;
        let target = position - 1;
        while (target >= low && keys[target]! > key) {
          keys[target + 1] = keys[target]!;
          order[target + 1] = order[target]!;
          target--;
        }
        keys[target + 1] = key;
        order[target + 1] = moving;
      }
      if (ranges.length === 0) return;
      high = ranges.pop()!;
      low = ranges.pop()!;
    }
    const middle = low + ((high - low) >> 1);
    const pivot = medianOfThree(keys[low]!, keys[middle]!, keys[high]!);
    // Three-way partition: [low, less) < pivot, [less, position) = pivot, (greater, high] > pivot.
    let less = low;
    let greater = high;
    let position = low;
    while (position <= greater) {
      const key = keys[position]!;
      if (key < pivot) {
        swap(keys, order, less++, position++);
      } else if (key > pivot) {
        swap(keys, order, position, greater--);
      } else position++;
    }
    // Recurse on the smaller side first (looping), the larger one later.
    if (less - 1 - low < high - (greater + 1)) {
      ranges.push(greater + 1, high);
      high = less - 1;
    } else {
      ranges.push(low, less - 1);
      low = greater + 1;
    }
    if (high < low) {
      if (ranges.length === 0) return;
      high = ranges.pop()!;
      low = ranges.pop()!;
    }
  }
}

function medianOfThree(first: number, second: number, third: number): number {
  if (first < second) {
    if (second < third) return second;
    return Math.max(first, third);
  }
  if (first < third) return first;
  return Math.max(second, third);
}

function swap(keys: Float64Array, order: Int32Array, left: number, right: number): void {
  const key = keys[left]!;
  keys[left] = keys[right]!;
  keys[right] = key;
  const index = order[left]!;
  order[left] = order[right]!;
  order[right] = index;
}
