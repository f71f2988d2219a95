/** The client's timer limits (issue 11, item 10): delays Node would turn into 1 ms stay long. */
import { afterEach, describe, expect, it, vi } from "vitest";
import { durationOption, MAX_TIMER_DELAY_MS, startDeadline, timerDelay } from "./timers.js";

afterEach(() => {
  vi.useRealTimers();
});

describe("timer limits", () => {
  it("caps delays at 2^31 - 1 ms and leaves shorter ones alone", () => {
    expect(MAX_TIMER_DELAY_MS).toBe(2 ** 31 - 1);
    expect(timerDelay(0)).toBe(0);
    expect(timerDelay(1500)).toBe(1500);
    expect(timerDelay(2 ** 31 - 1)).toBe(2 ** 31 - 1);
    expect(timerDelay(2 ** 31)).toBe(2 ** 31 - 1);
    expect(timerDelay(Number.MAX_VALUE)).toBe(2 ** 31 - 1);
  });

  it("startDeadline: no timer for absent, zero, negative, NaN or infinite; a capped one otherwise", () => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
    const expired: number[] = [];
    for (const ms of [undefined, 0, -1, Number.NaN, Number.POSITIVE_INFINITY]) {
      expect(startDeadline(ms, (value) => expired.push(value))).toBeUndefined();
    }
    expect(vi.getTimerCount()).toBe(0);
    const timer = startDeadline(2 ** 40, (value) => expired.push(value));
    vi.advanceTimersByTime(1000);
    expect(expired).toEqual([]);
    vi.advanceTimersByTime(MAX_TIMER_DELAY_MS);
    // The callback gets the configured value, for the error it reports.
    expect(expired).toEqual([2 ** 40]);
    clearTimeout(timer);
  });

  it("durationOption: fallback, floor, cap, and a typed error naming the path for what is no duration", () => {
    const rules = { path: "redis.commandTimeoutMs", fallback: 1000, minimum: 1, maximum: MAX_TIMER_DELAY_MS };
    expect(durationOption(undefined, rules)).toBe(1000);
    expect(durationOption(0, rules)).toBe(1);
    expect(durationOption(250, rules)).toBe(250);
    expect(durationOption(2 ** 31, rules)).toBe(MAX_TIMER_DELAY_MS);
    expect(durationOption(Number.POSITIVE_INFINITY, rules)).toBe(MAX_TIMER_DELAY_MS);
    for (const bad of [Number.NaN, -1, "1s", null, {}]) {
      expect(() => durationOption(bad, rules)).toThrow(
        expect.objectContaining({ code: "INVALID_OPTIONS", path: "redis.commandTimeoutMs" }),
      );
    }
  });
});
