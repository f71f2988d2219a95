/**
 * No catastrophic backtracking (checklist row 12): every regular expression in src/ (found by parsing the sources, see ./redos.ts) runs to
 * completion on 50,000 repetitions of each pump followed by a mismatching tail. A backtracking pattern would not
 * finish within the test timeout; the per-call time against the 50 ms budget is measured by `npm run soak`, not
 * asserted here (no timed assertions in unit tests).
 */
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { findSourceRegexes, redosCorpus, runRegex } from "./redos.js";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const REPEATS = 50_000;
const found = findSourceRegexes(ROOT);

describe("every regex stays linear on its ReDoS corpus", () => {
  it("finds the regular expressions of the sources, and every one has a literal pattern", () => {
    // The engine's own expressions must be among them (a broken finder would otherwise pass vacuously).
    const texts = found.map((item) => item.text);
    expect(texts).toContain("/[^\\p{L}\\p{N}]+/gu");
    expect(texts).toContain("/(?<=\\p{Lu})(?=\\p{Lu}\\p{Ll})/gu");
    expect(found.length).toBeGreaterThanOrEqual(30);
    expect(found.filter((item) => item.regex === null).map((item) => item.location)).toEqual([]);
    console.log(`[redos] ${found.length} regular expressions in src/`);
  });

  it.each(found.map((item) => [item.location, item.text, item] as const))(
    "%s %s completes on 50k-repeat inputs with mismatching tails",
    (_location, _text, item) => {
      const inputs = redosCorpus(item, REPEATS, ["!", "\uD800"]);
      let completed = 0;
      for (const input of inputs) {
        const result = runRegex(item.regex!, input.text);
        expect(Number.isInteger(result)).toBe(true);
        completed++;
      }
      expect(completed).toBe(inputs.length);
    },
  );
});
