/**
 * How much a compaction does between two yields, and a meter of it. Every pass of a compaction over documents or
 * postings (`compactionInputs.ts`, `compaction.ts`, `snapshotChanges.ts`, `lexicalIndexChanges.ts`) runs in ranges
 * of at most {@link CompactionStep.work} items, each through a plain function (a generator's own loop stays in
 * V8's interpreter when the generator runs once per compaction, several times slower), with a yield after each
 * range; each range adds what it read to {@link CompactionStep.done}, so tests can bound what one step reads
 * without timing it.
 */

/** The step size and the meter (see the module comment). */
export type CompactionStep = {
  /** Documents or postings read between two yields (tests lower it). */
  work: number;
  /** Documents or postings read so far (the meter: tests reset it and read it between steps). */
  done: number;
};

/** Step size of 16,384 items: well under a millisecond of optimized work. @internal */
export const compactionStep: CompactionStep = { work: 1 << 14, done: 0 };
