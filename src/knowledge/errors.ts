/**
 * The one pattern of every error class lexground throws, taken from the AI SDK: a stable machine-readable `code`,
 * the standard `cause` when there is one, and a marker property whose key is registered with `Symbol.for`, so
 * that `XError.isInstance(error)` recognizes the error even when it comes from another copy of the package (two
 * versions in one `node_modules`, a bundle and its host), where `instanceof` would not.
 *
 * Each class declares `const MARKER = Symbol.for("lexground.<ClassName>")` (a literal call, so its type is a
 * `unique symbol` and the published declarations name the property), `readonly [MARKER] = true`, and
 * `static isInstance(error) { return hasErrorMarker(error, MARKER); }`. A marker's name is part of the public
 * contract: renaming it would stop older copies from recognizing the error.
 *
 * The pattern is written out in each class on purpose, not inherited from a shared base class: a base would sit
 * in every error's prototype chain and stack trace, and a marker must be a `unique symbol` declared per class so
 * that each class's declaration shows its own code and marker (so the duplicate finder's error-class pairs are
 * this pattern).
 *
 * @module
 */

/** Whether `error` carries `marker` (so it is an instance of the class that owns the marker, from any copy). */
export function hasErrorMarker(error: unknown, marker: symbol): boolean {
  return typeof error === "object" && error !== null && (error as Record<symbol, unknown>)[marker] === true;
}
