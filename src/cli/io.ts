/**
 * What a CLI command may touch: its output streams, environment and working directory, passed in so that tests run
 * `main()` in-process. Also the small output helpers every command shares: colors (only on a terminal), a
 * progress line (only when stdout is a terminal), and the one-line error format.
 */
import type { Readable } from "node:stream";
import picocolors from "picocolors";

/** A writable text stream; `isTTY` decides colors and progress. */
export type CliOutput = {
  write(chunk: string): unknown;
  isTTY?: boolean;
  columns?: number;
};

/** The process boundary of one CLI run. */
export type CliIo = {
  stdout: CliOutput;
  stderr: CliOutput;
  env: Record<string, string | undefined>;
  cwd: string;
  /**
   * Input stream: the stdio transport of `lexground mcp`, and the question of `query`/`ask` when it is piped in.
   * `isTTY` true means a terminal, which is never read for a question. Default for `mcp`: `process.stdin`.
   */
  stdin?: Readable & { isTTY?: boolean };
};

/** Colors that are on only when the stream is a terminal and `NO_COLOR` is unset. */
export type Colors = ReturnType<typeof picocolors.createColors>;

export function colorsFor(output: CliOutput, env: CliIo["env"]): Colors {
  const enabled = output.isTTY === true && !env.NO_COLOR && env.TERM !== "dumb";
  return picocolors.createColors(enabled);
}

/** Everything a command needs. */
export type CommandContext = {
  io: CliIo;
  /** Colors for stdout. */
  out: Colors;
  /** Colors for stderr. */
  err: Colors;
};

export function createContext(io: CliIo): CommandContext {
  return { io, out: colorsFor(io.stdout, io.env), err: colorsFor(io.stderr, io.env) };
}

/** Writes `text` plus a newline to stdout. */
export function println(context: CommandContext, text = ""): void {
  context.io.stdout.write(`${text}\n`);
}

/** Prints a fatal error as one line plus an optional hint, both on stderr. */
export function printError(context: CommandContext, message: string, hint?: string): void {
  const { err, io } = context;
  io.stderr.write(`${err.red(err.bold("error"))}: ${message}\n`);
  if (hint) io.stderr.write(`${err.dim("hint")}: ${hint}\n`);
}

/** A transient progress line on stderr, shown only when stdout is a terminal (silent in pipes and tests). */
export type Progress = {
  update(message: string): void;
  done(): void;
};

const PROGRESS_INTERVAL_MS = 80;

export function createProgress(context: CommandContext): Progress {
  const { io } = context;
  if (io.stdout.isTTY !== true || io.stderr.isTTY !== true) return { update() {}, done() {} };
  let lastWrite = 0;
  let shown = false;
  return {
    update(message: string) {
      const now = Date.now();
      if (now - lastWrite < PROGRESS_INTERVAL_MS) return;
      lastWrite = now;
      shown = true;
      const width = Math.max(20, (io.stderr.columns ?? 80) - 1);
      io.stderr.write(`\r\x1b[2K${context.err.dim(message.slice(0, width))}`);
    },
    done() {
      if (shown) io.stderr.write("\r\x1b[2K");
      shown = false;
    },
  };
}

/** Splits a comma-separated flag value into trimmed, non-empty items. */
export function parseList(value: string | undefined): string[] | undefined {
  if (value === undefined) return undefined;
  return value
    .split(",")
    .map((item) => item.trim())
    .filter((item) => item !== "");
}

/** Formats milliseconds for humans: sub-millisecond precision only where it matters. */
export function formatMs(milliseconds: number): string {
  if (milliseconds < 1) return `${milliseconds.toFixed(2)} ms`;
  if (milliseconds < 100) return `${milliseconds.toFixed(1)} ms`;
  return `${Math.round(milliseconds)} ms`;
}

/** Pads (or truncates with an ellipsis) to a display width. */
export function padCell(text: string, width: number): string {
  if (text.length > width) return `${text.slice(0, Math.max(0, width - 1))}…`;
  return text.padEnd(width);
}
