/**
 * The comparison that the parity suites share (engine vs plain oracle, PostgreSQL vs memory): the same candidate
 * ids in the same order, the same flags and phrases, and scores and per-field breakdowns within 1e-9 relative.
 */
import { expect } from "vitest";
import type { KnowledgeScoredCandidate } from "../../src/index.js";

/** Equal, or within 1e-9 relative. */
export function closeTo(actual: number, expected: number): boolean {
  if (actual === expected) return true;
  return Math.abs(actual - expected) <= 1e-9 * Math.max(Math.abs(actual), Math.abs(expected));
}

/** Asserts two candidate lists agree (ids and order, flags, phrases, scores, breakdowns). */
export function expectSameCandidates(
  actual: readonly KnowledgeScoredCandidate[],
  expected: readonly KnowledgeScoredCandidate[],
): void {
  expect(actual.map((candidate) => candidate.id)).toEqual(expected.map((candidate) => candidate.id));
  actual.forEach((candidate, index) => {
    const other = expected[index]!;
    expect(candidate.exact).toBe(other.exact);
    expect(candidate.alias).toBe(other.alias);
    expect(candidate.matchedPhrases).toEqual(other.matchedPhrases);
    expect(closeTo(candidate.score, other.score), `score ${candidate.score} vs ${other.score}`).toBe(true);
    expect(closeTo(candidate.lexical, other.lexical)).toBe(true);
    expect(Object.keys(candidate.fieldScores).sort()).toEqual(Object.keys(other.fieldScores).sort());
    for (const [field, value] of Object.entries(candidate.fieldScores)) {
      expect(closeTo(value, other.fieldScores[field as keyof typeof other.fieldScores]!)).toBe(true);
    }
  });
}
