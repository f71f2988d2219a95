/**
 * Values the host hands over, read safely: each property exactly once, never throwing. What cannot be read is kept
 * as a marker that validation reports at its path (see `resolve.ts`).
 */
import { MAX_ENTRIES } from "./defaults.js";

/** Whether a value is a plain record (an object, not an array). */
export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

// Host input is read exactly once per property (issue 11, item 12): a getter or proxy that answers differently on
// each read could otherwise pass validation with one value and be indexed with another. A read that throws (a
// throwing getter, a revoked proxy) is kept as an UnreadableValue and reported at its path.

// Markers are recognized through WeakSets: `instanceof` on a host value runs its getPrototypeOf trap, which throws
// on a revoked proxy.
const unreadableMarkers = new WeakSet<object>();
const oversizedMarkers = new WeakSet<object>();

/** What a property read threw; stands in for the value so validation can report it where it belongs. */
export class UnreadableValue {
  constructor(readonly error: unknown) {
    unreadableMarkers.add(this);
  }
}

/** A list longer than its field's cap: only its length was read, for the `limit-exceeded` message. */
export class OversizedList {
  constructor(readonly length: number) {
    oversizedMarkers.add(this);
  }
}

/** Whether a value is the marker of a read that threw. */
export function isUnreadable(value: unknown): value is UnreadableValue {
  return typeof value === "object" && value !== null && unreadableMarkers.has(value);
}

/** Whether a value is the marker of a list longer than its cap. */
export function isOversized(value: unknown): value is OversizedList {
  return typeof value === "object" && value !== null && oversizedMarkers.has(value);
}

/** `target[key]`, read once; an {@link UnreadableValue} when the read throws. */
export function readProperty(target: object, key: string | number): unknown {
  try {
    return (target as Record<string | number, unknown>)[key];
  } catch (caught) {
    return new UnreadableValue(caught);
  }
}

/** Whether a value is an array, a record or neither; `Array.isArray` throws on a revoked proxy. */
export function shapeOf(value: unknown): "array" | "record" | "other" | UnreadableValue {
  if (typeof value !== "object" || value === null) return "other";
  if (isUnreadable(value)) return value;
  try {
    return Array.isArray(value) ? "array" : "record";
  } catch (caught) {
    return new UnreadableValue(caught);
  }
}

/** The length of a host array, read once (0 when it is not a number). */
export function lengthOf(list: object): number | UnreadableValue {
  const length = readProperty(list, "length");
  if (isUnreadable(length)) return length;
  return typeof length === "number" && Number.isSafeInteger(length) && length > 0 ? length : 0;
}

/**
 * A plain copy of a host array, reading its length and each item once. Longer than `cap`: an {@link OversizedList}
 * (or, with `truncate`, the first `cap + 1` items, enough for the caller to report the overflow).
 */
export function copyList(
  list: object,
  cap: number,
  truncate = false,
): unknown[] | OversizedList | UnreadableValue {
  const length = lengthOf(list);
  if (isUnreadable(length)) return length;
  if (length > cap && !truncate) return new OversizedList(length);
  const count = Math.min(length, cap + 1);
  const copy: unknown[] = new Array(count);
  const items = list as Record<number, unknown>;
  // One try around the loop (resumed after an item that throws) rather than one per item: lists are long.
  let index = 0;
  while (index < count) {
    try {
      for (; index < count; index++) copy[index] = items[index];
    } catch (caught) {
      copy[index] = new UnreadableValue(caught);
      index++;
    }
  }
  return copy;
}

/** `String(error)`, which itself can throw (an error object with a throwing `toString`). */
export function describeError(error: unknown): string {
  try {
    return String(error);
  } catch {
    return "an error that cannot be printed";
  }
}

/** A short description of a value's type for messages: `number`, `null`, `array`, `object`. */
export function describeType(value: unknown): string {
  if (value === null) return "null";
  try {
    if (Array.isArray(value)) return "array";
  } catch {
    // Array.isArray throws on a revoked proxy.
    return "revoked proxy";
  }
  if (typeof value === "number" && Number.isNaN(value)) return "NaN";
  return typeof value;
}

/**
 * A copy of the source list and of each source's `id`, `version` and entry list, taken synchronously, so a host
 * that clears or reuses its arrays right after handing them over cannot change what an asynchronous build reads.
 * Each of those properties is read exactly once; entries themselves are read (once) by validation. Never throws:
 * what cannot be read is kept as a marker that validation reports as `unreadable-input` at its path.
 */
export function snapshotSourceArrays(sources: unknown): unknown {
  const shape = shapeOf(sources);
  if (shape !== "array") return isUnreadable(shape) ? shape : sources;
  const list = copyList(sources as object, Number.POSITIVE_INFINITY);
  if (!Array.isArray(list)) return list;
  return list.map((source: unknown) => {
    const sourceShape = shapeOf(source);
    if (sourceShape !== "record") return isUnreadable(sourceShape) ? sourceShape : source;
    const record = source as object;
    const id = readProperty(record, "id");
    const version = readProperty(record, "version");
    let entries = readProperty(record, "entries");
    const entriesShape = shapeOf(entries);
    if (isUnreadable(entriesShape)) entries = entriesShape;
    else if (entriesShape === "array") entries = copyList(entries as object, MAX_ENTRIES, true);
    return { id, version, entries };
  });
}
