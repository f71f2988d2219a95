/**
 * Seeds for randomized tests: `LEXGROUND_SEED` reproduces a run, otherwise a fresh seed is drawn. Every suite
 * prints the seed it used so any failure can be replayed.
 */
export function propertySeed(suite: string): number {
  const fromEnvironment = process.env.LEXGROUND_SEED;
  const seed =
    fromEnvironment !== undefined ? Number(fromEnvironment) : (Date.now() ^ (Math.random() * 0x7fffffff)) | 0;
  console.log(`[property] ${suite}: seed ${seed} (replay with LEXGROUND_SEED=${seed})`);
  return seed;
}

/** Number of runs: `LEXGROUND_PROPERTY_RUNS` (the fuzz script raises it), or the given default. */
export function propertyRuns(defaultRuns: number): number {
  const fromEnvironment = Number(process.env.LEXGROUND_PROPERTY_RUNS);
  return Number.isFinite(fromEnvironment) && fromEnvironment > 0 ? fromEnvironment : defaultRuns;
}
