/** Helpers of the evaluation tests: an in-process CLI run and a tiny BEIR collection with hand-checked results. */
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { main } from "../../src/cli/main.js";

export type CliRun = { code: number; stdout: string; stderr: string };

/** Runs `lexground <argv>` in-process without colors or terminal. */
export async function runCli(argv: string[], cwd: string): Promise<CliRun> {
  let stdout = "";
  let stderr = "";
  const code = await main(argv, {
    stdout: {
      write: (chunk: string) => {
        stdout += chunk;
        return true;
      },
    },
    stderr: {
      write: (chunk: string) => {
        stderr += chunk;
        return true;
      },
    },
    env: { NO_COLOR: "1", SOURCE_DATE_EPOCH: "1767225600" },
    cwd,
  });
  return { code, stdout, stderr };
}

export async function withTemporaryDirectory<T>(body: (directory: string) => Promise<T>): Promise<T> {
  const directory = await mkdtemp(join(tmpdir(), "lexground-eval-"));
  try {
    return await body(directory);
  } finally {
    await rm(directory, { recursive: true, force: true });
  }
}

/**
 * A four-document BEIR collection in `directory/tiny`:
 * - query "1" ("solar panels"): document "1" (title "Solar panels", an exact title match) ranks first but shares
 *   the query's id, so BEIR evaluation drops it; the judged relevant document is s4 (grade 2). Dropped: s4 is
 *   rank 1, nDCG@10 = 1. Kept: s4 is rank 2, nDCG@10 = (2 / log2 3) / 2 = 0.6309.
 * - query "2" ("wind electricity"): w2 is the only document with both words and the only relevant one (h3 is
 *   judged 0): nDCG@10 = 1, MRR@10 = 1.
 * - query "3" has no judgments (not evaluated); query "4" is judged but missing from queries.jsonl (counts 0).
 * So the test split's mean nDCG@10 is (1 + 1 + 0) / 3 with the BEIR convention.
 * The train split judges only query "2", with h3 relevant: h3 has neither word, so every metric is 0.
 */
export async function writeTinyBeir(directory: string): Promise<string> {
  const folder = join(directory, "tiny");
  await mkdir(join(folder, "qrels"), { recursive: true });
  const corpus = [
    { _id: "1", title: "Solar panels", text: "Solar panels turn sunlight into electricity." },
    { _id: "w2", title: "Wind turbines", text: "Wind turbines turn wind into electricity." },
    { _id: "h3", title: "Hydro dams", text: "Dams store water in reservoirs." },
    { _id: "s4", title: "Solar farms", text: "Large solar farms use many panels." },
  ];
  await writeFile(join(folder, "corpus.jsonl"), `${corpus.map((line) => JSON.stringify(line)).join("\n")}\n`);
  const queries = [
    { _id: "1", text: "solar panels" },
    { _id: "2", text: "wind electricity" },
    { _id: "3", text: "water" },
  ];
  await writeFile(
    join(folder, "queries.jsonl"),
    `${queries.map((line) => JSON.stringify(line)).join("\n")}\n`,
  );
  await writeFile(
    join(folder, "qrels", "test.tsv"),
    "query-id\tcorpus-id\tscore\n1\ts4\t2\n2\tw2\t1\n2\th3\t0\n4\th3\t1\n",
  );
  await writeFile(join(folder, "qrels", "train.tsv"), "query-id\tcorpus-id\tscore\n2\th3\t1\n");
  return folder;
}
