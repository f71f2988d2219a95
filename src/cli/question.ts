/**
 * The question of `ask`: from the argument, a file or standard input, bounded in size, and shown shortened.
 */
import { open } from "node:fs/promises";
import { resolve } from "node:path";
import { MAX_QUERY_CHARS } from "../index.js";
import { CliUsageError } from "./errors.js";
import type { CommandContext } from "./io.js";

export type { CliGroundingConfig } from "./config.js";

/** Largest question read from a file or standard input (the engine searches its first {@link MAX_QUERY_CHARS}). */
export const MAX_QUESTION_BYTES = 16 * 1024 * 1024;

async function readBoundedStream(stream: AsyncIterable<unknown>, source: string): Promise<string> {
  const chunks: Buffer[] = [];
  let bytes = 0;
  for await (const chunk of stream) {
    const buffer = typeof chunk === "string" ? Buffer.from(chunk) : Buffer.from(chunk as Uint8Array);
    bytes += buffer.length;
    if (bytes > MAX_QUESTION_BYTES) {
      throw new CliUsageError(
        `the question from ${source} is larger than ${MAX_QUESTION_BYTES / 1024 / 1024} MiB`,
        `only the first ${MAX_QUERY_CHARS} characters are searched; pass a shorter question`,
      );
    }
    chunks.push(buffer);
  }
  return Buffer.concat(chunks).toString("utf8");
}

/**
 * The question of `query` or `ask`: the argument, or the contents of `--file` (`-` for standard input), or standard
 * input when there is no argument and it is not a terminal. A long question belongs in a file or a pipe: the
 * operating system refuses a command line of a few hundred kilobytes ("Argument list too long").
 */
export async function readQuestion(
  context: CommandContext,
  argument: string | undefined,
  file: string | undefined,
): Promise<string> {
  if (argument !== undefined && file !== undefined) {
    throw new CliUsageError(
      "give the question either as an argument or with --file, not both",
      'e.g. lexground query --file question.txt --kb kb.json, or lexground query "refund window" --kb kb.json',
    );
  }
  const stdin = context.io.stdin;
  let text: string;
  if (file !== undefined && file !== "-") {
    let handle: Awaited<ReturnType<typeof open>>;
    try {
      handle = await open(resolve(context.io.cwd, file), "r");
    } catch {
      throw new CliUsageError(`${file}: question file not found`, "pass a text file holding the question");
    }
    try {
      text = await readBoundedStream(handle.createReadStream({ autoClose: false }), file);
    } finally {
      await handle.close();
    }
  } else if (file === "-" || argument === "-" || (argument === undefined && stdin && stdin.isTTY !== true)) {
    if (!stdin) throw new CliUsageError("no standard input to read the question from");
    text = await readBoundedStream(stdin, "standard input");
  } else if (argument !== undefined) {
    text = argument;
  } else {
    throw new CliUsageError(
      "no question given",
      'pass it as an argument, with --file <path>, or on standard input: echo "refund window" | lexground query --kb kb.json',
    );
  }
  const question = text.trim();
  if (question === "") {
    throw new CliUsageError(
      "the question is empty",
      'pass it as an argument, with --file <path>, or on standard input: echo "refund window" | lexground query --kb kb.json',
    );
  }
  return question;
}

/** Longest part of a question shown in a header; the rest is elided with its length. */
export const QUESTION_SHOWN_CHARS = 200;

/**
 * The question as a header shows it: quoted, and for a long one its first {@link QUESTION_SHOWN_CHARS} characters,
 * an ellipsis and the length (and how much of it is searched).
 */
export function showQuestion(question: string): string {
  if (question.length <= QUESTION_SHOWN_CHARS) return JSON.stringify(question);
  let end = QUESTION_SHOWN_CHARS;
  // Never cut a surrogate pair in half.
  const last = question.charCodeAt(end - 1);
  if (last >= 0xd800 && last <= 0xdbff) end -= 1;
  const searched = question.length > MAX_QUERY_CHARS ? `; the first ${MAX_QUERY_CHARS} are searched` : "";
  return `${JSON.stringify(question.slice(0, end))}… (${question.length} characters${searched})`;
}
