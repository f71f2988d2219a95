/**
 * Reading a source file's text: size limits before reading, strict UTF-8 with notes for damaged or binary
 * content, display paths, and typed errors that name the file.
 */
import { type FileHandle, open, stat } from "node:fs/promises";
import { isAbsolute, relative, sep } from "node:path";
import { KnowledgeCompileError } from "./errors.js";

import type { KnowledgeCompileNote } from "./types.js";

/**
 * Largest entry or catalog file read (Markdown, YAML, JSON): 64 MiB. A Markdown entry at the body limit
 * (1,000,000 characters) is at most 4 MB; a larger file is refused from its size alone, before it is read.
 */
export const MAX_ENTRY_FILE_BYTES = 64 * 1024 * 1024;
/** Largest manifest JSON read (`--kb kb.json`): 256 MiB, refused from its size alone, before it is read. */
export const MAX_MANIFEST_FILE_BYTES = 256 * 1024 * 1024;
/**
 * Codes of the compiler's notes that say a file's content is probably damaged (not valid UTF-8, binary). Every
 * command prints them, not only `validate`, because the text read from such a file is not what its author wrote.
 */
export const CONTENT_WARNING_CODES: ReadonlySet<string> = new Set(["invalid-utf8", "binary-content"]);
/** First read of a file whose size is unknown (not a regular file). */
const READ_CHUNK_BYTES = 64 * 1024;
/** Strict UTF-8 decoding; the byte order mark is kept, as `readFile(path, "utf8")` keeps it. */
const STRICT_UTF8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

/** Display form of a path: relative to `cwd` when inside it, `/`-separated. */
export function displayPath(absolute: string, cwd: string): string {
  const relativePath = relative(cwd, absolute);
  const shown =
    relativePath && !relativePath.startsWith("..") && !isAbsolute(relativePath) ? relativePath : absolute;
  return shown.split(sep).join("/");
}

export async function statOrThrow(path: string, file: string) {
  try {
    return await stat(path);
  } catch {
    throw new KnowledgeCompileError("not-found", "no such file or directory", {
      file,
      hint: "check the path; it is resolved against the current directory",
    });
  }
}

function readError(error: unknown, file: string): KnowledgeCompileError {
  const code = (error as NodeJS.ErrnoException).code;
  if (code === "ENOENT") {
    return new KnowledgeCompileError("not-found", "no such file or directory", {
      file,
      hint: "check the path; it is resolved against the current directory",
    });
  }
  return new KnowledgeCompileError("unreadable", `cannot read: ${code ?? String(error)}`, { file });
}

function tooLarge(file: string, bytes: number, limit: number): KnowledgeCompileError {
  const mebibytes = (count: number) =>
    `${(count / (1024 * 1024)).toFixed(count % (1024 * 1024) === 0 ? 0 : 1)} MiB`;
  return new KnowledgeCompileError(
    "file-too-large",
    `${bytes} bytes (${mebibytes(bytes)}); the limit is ${mebibytes(limit)}, so it was not read`,
    { file, hint: "split it into smaller files, or check that it is the file you meant" },
  );
}

/** Reads at most `limit` bytes from an open file; more is an error (a file that grew, a device without end). */
async function readBounded(handle: FileHandle, knownSize: number | undefined, limit: number, file: string) {
  const chunks: Buffer[] = [];
  let total = 0;
  let next = knownSize !== undefined ? knownSize + 1 : READ_CHUNK_BYTES;
  for (;;) {
    const buffer = Buffer.allocUnsafe(Math.min(next, limit + 1 - total));
    const { bytesRead } = await handle.read(buffer, 0, buffer.length, null);
    if (bytesRead === 0) break;
    chunks.push(buffer.subarray(0, bytesRead));
    total += bytesRead;
    if (total > limit) throw tooLarge(file, total, limit);
    next = READ_CHUNK_BYTES;
  }
  return Buffer.concat(chunks, total);
}

function lineAtByte(bytes: Uint8Array, offset: number): number {
  let line = 1;
  for (let index = 0; index < offset; index++) if (bytes[index] === 0x0a) line++;
  return line;
}

/** Offset of the first byte that is not valid UTF-8, given the bytes and their lenient decoding. */
function firstInvalidUtf8Byte(bytes: Uint8Array, text: string): number {
  let offset = 0;
  for (const character of text) {
    const codePoint = character.codePointAt(0)!;
    // Before the first invalid byte every code point came from its own bytes, so offsets are exact up to there.
    if (
      codePoint === 0xfffd &&
      !(bytes[offset] === 0xef && bytes[offset + 1] === 0xbf && bytes[offset + 2] === 0xbd)
    ) {
      return offset;
    }
    offset += codePoint < 0x80 ? 1 : codePoint < 0x800 ? 2 : codePoint < 0x10000 ? 3 : 4;
  }
  return 0;
}

/**
 * Decodes a file's bytes as UTF-8. Invalid UTF-8 (replaced by U+FFFD, as before) and NUL bytes (a binary file)
 * are reported as warnings naming the file and line; the text is still used, so the run continues.
 */
function decodeSource(bytes: Buffer, file: string, notes: KnowledgeCompileNote[]): string {
  let text: string;
  try {
    text = STRICT_UTF8.decode(bytes);
  } catch {
    text = bytes.toString("utf8");
    notes.push({
      level: "warning",
      code: "invalid-utf8",
      message: "not valid UTF-8 (saved in another encoding?); the invalid bytes were read as U+FFFD",
      file,
      line: lineAtByte(bytes, firstInvalidUtf8Byte(bytes, text)),
    });
  }
  const nul = bytes.indexOf(0);
  if (nul >= 0) {
    notes.push({
      level: "warning",
      code: "binary-content",
      message: "contains NUL bytes: binary data, not text (a UTF-16 file, an image, a compressed file?)",
      file,
      line: lineAtByte(bytes, nul),
    });
  }
  return text;
}

/**
 * Text and modification time through one open file handle. The size is checked (fstat) before anything is read,
 * and the read stops at `limit` bytes whatever the file claims; encoding problems become warnings in `notes`.
 */
export async function readSource(
  path: string,
  file: string,
  limit: number,
  notes: KnowledgeCompileNote[],
): Promise<{ text: string; mtimeMs: number }> {
  let handle: FileHandle | undefined;
  let bytes: Buffer;
  let mtimeMs: number;
  try {
    handle = await open(path, "r");
    const info = await handle.stat();
    if (info.isFile() && info.size > limit) throw tooLarge(file, info.size, limit);
    bytes = await readBounded(handle, info.isFile() ? info.size : undefined, limit, file);
    mtimeMs = info.mtimeMs;
  } catch (error) {
    throw KnowledgeCompileError.isInstance(error) ? error : readError(error, file);
  } finally {
    await handle?.close();
  }
  return { text: decodeSource(bytes, file, notes), mtimeMs };
}

/** An encoding warning's text, added to the hint of an error in the same file (which discards the notes). */
export function withEncodingHint(error: unknown, notes: readonly KnowledgeCompileNote[]): unknown {
  const encoding = notes.filter((note) => CONTENT_WARNING_CODES.has(note.code));
  if (!KnowledgeCompileError.isInstance(error) || encoding.length === 0) return error;
  const also = encoding.map((note) => `line ${note.line}: ${note.message}`).join("; ");
  return error.withHint(`${error.hint ? `${error.hint}. ` : ""}The file may not be text: ${also}`);
}
