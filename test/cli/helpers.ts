/** Runs the CLI in-process with captured output. */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Readable } from "node:stream";
import { main } from "../../src/cli/main.js";

export const fixtures = join(import.meta.dirname, "fixtures");

/** An environment without provider keys, colors or terminal, and with a fixed build date. */
export const BASE_ENV = { SOURCE_DATE_EPOCH: "1767225600", NO_COLOR: "1" };

export type CliRun = { code: number; stdout: string; stderr: string };

export async function run(
  argv: string[],
  options: { cwd?: string; env?: Record<string, string | undefined>; stdin?: Readable; tty?: boolean } = {},
): Promise<CliRun> {
  let stdout = "";
  let stderr = "";
  const code = await main(argv, {
    stdout: {
      write: (chunk: string) => {
        stdout += chunk;
        return true;
      },
      ...(options.tty ? { isTTY: true, columns: 100 } : {}),
    },
    stderr: {
      write: (chunk: string) => {
        stderr += chunk;
        return true;
      },
      ...(options.tty ? { isTTY: true, columns: 100 } : {}),
    },
    env: { ...BASE_ENV, ...options.env },
    cwd: options.cwd ?? fixtures,
    ...(options.stdin ? { stdin: options.stdin } : {}),
  });
  return { code, stdout, stderr };
}

export async function withTemporaryDirectory<T>(body: (directory: string) => Promise<T>): Promise<T> {
  const directory = await mkdtemp(join(tmpdir(), "lexground-cli-"));
  try {
    return await body(directory);
  } finally {
    await rm(directory, { recursive: true, force: true });
  }
}
