/**
 * Timer limits of the client. Node keeps timer delays in a signed 32-bit integer: a delay of 2^31 ms or more is set
 * to 1 ms (with a `TimeoutOverflowWarning`), so a deadline meant to be "very long" would fire at once. Every timer
 * the client starts from a host option goes through {@link startDeadline} or {@link timerDelay}, which cap the delay
 * at the longest one Node honours (about 24.8 days): a long deadline stays a long deadline.
 *
 * @module
 */

import { InvalidOptionsError } from "./errors.js";

/** The longest delay Node's timers honour: 2^31 − 1 ms, about 24.8 days. */
export const MAX_TIMER_DELAY_MS = 2_147_483_647;

/** The delay to give a timer for a deadline of `ms`: `ms` itself, or {@link MAX_TIMER_DELAY_MS} past it. */
export function timerDelay(ms: number): number {
  return Math.min(ms, MAX_TIMER_DELAY_MS);
}

/**
 * Starts a deadline of `ms` (capped by {@link timerDelay}), or none when `ms` is undefined, 0 or less, NaN or
 * infinite (no deadline: the options that allow 0 mean "disabled" by it). `onExpire` receives `ms` as configured,
 * for the error it reports.
 */
export function startDeadline(
  ms: number | undefined,
  onExpire: (ms: number) => void,
): NodeJS.Timeout | undefined {
  if (ms === undefined || !(ms > 0) || !Number.isFinite(ms)) return undefined;
  return setTimeout(() => onExpire(ms), timerDelay(ms));
}

/**
 * Reads a duration option given in a unit of time (ms, or seconds for a TTL): `fallback` when absent; a number at
 * least `minimum` (smaller ones are raised to it, as before); `Infinity` and values past `maximum` become `maximum`.
 * NaN, negative values and non-numbers are an {@link InvalidOptionsError} at `path`.
 */
export function durationOption(
  value: unknown,
  options: { path: string; fallback: number; minimum: number; maximum: number },
): number {
  if (value === undefined) return options.fallback;
  if (typeof value !== "number" || Number.isNaN(value) || value < 0) {
    throw new InvalidOptionsError(options.path, "must be a non-negative number");
  }
  return Math.min(Math.max(options.minimum, value), options.maximum);
}
