/**
 * Where a JSON text stops being JSON. `JSON.parse` reports a position for some errors only ("Unexpected token '}',
 * "…" is not valid JSON" has none), so after it fails a small scanner finds the offset of the first character that
 * makes the text invalid, and the error is reported at its line and column.
 *
 * @module
 */
import { KnowledgeCompileError } from "./errors.js";

/** A JSON syntax error located in its text. */
export type JsonSyntaxLocation = {
  /** 1-based line. */
  line: number;
  /** 1-based column, in UTF-16 code units as editors count them. */
  column: number;
  /** The parser's reason without its position or a quote of the text, e.g. `Expected ',' or '}' after property value`. */
  reason: string;
};

const WHITESPACE = new Set([" ", "\t", "\n", "\r"]);
const SIMPLE_ESCAPES = new Set(['"', "\\", "/", "b", "f", "n", "r", "t"]);

/**
 * Offset of the first character that makes `text` invalid JSON (`text.length` when it ends too early), or -1 when
 * it is valid. Iterative, so deep nesting cannot overflow the stack.
 */
export function findJsonSyntaxError(text: string): number {
  const end = text.length;
  const containers: ("array" | "object")[] = [];
  let index = 0;
  type Mode = "value" | "first-value" | "after-value" | "key" | "first-key";
  let mode: Mode = "value";
  const skipWhitespace = () => {
    while (index < end && WHITESPACE.has(text[index]!)) index++;
  };
  const isDigit = (position: number) => position < end && text[position]! >= "0" && text[position]! <= "9";
  /** Advances past a string starting at `index`; returns the offset of an error, or -1. */
  const scanString = (): number => {
    index++;
    while (index < end) {
      const character = text[index]!;
      if (character === '"') {
        index++;
        return -1;
      }
      if (character === "\\") {
        const escaped = text[index + 1];
        if (escaped === undefined) return end;
        if (SIMPLE_ESCAPES.has(escaped)) {
          index += 2;
          continue;
        }
        if (escaped !== "u") return index + 1;
        for (let offset = 2; offset < 6; offset++) {
          const hex = text[index + offset];
          if (hex === undefined) return end;
          if (!/[0-9a-fA-F]/.test(hex)) return index + offset;
        }
        index += 6;
        continue;
      }
      if (character.charCodeAt(0) < 0x20) return index;
      index++;
    }
    return end;
  };
  /** Advances past a number starting at `index`; returns the offset of an error, or -1. */
  const scanNumber = (): number => {
    if (text[index] === "-") index++;
    if (text[index] === "0") index++;
    else if (isDigit(index)) while (isDigit(index)) index++;
    else return index;
    if (text[index] === ".") {
      index++;
      if (!isDigit(index)) return index;
      while (isDigit(index)) index++;
    }
    if (text[index] === "e" || text[index] === "E") {
      index++;
      if (text[index] === "+" || text[index] === "-") index++;
      if (!isDigit(index)) return index;
      while (isDigit(index)) index++;
    }
    return -1;
  };
  for (;;) {
    skipWhitespace();
    if (mode === "after-value") {
      const container = containers.at(-1);
      if (container === undefined) return index < end ? index : -1;
      if (index >= end) return end;
      const character = text[index]!;
      if (character === ",") {
        index++;
        mode = container === "array" ? "value" : "key";
      } else if (
        (container === "array" && character === "]") ||
        (container === "object" && character === "}")
      ) {
        index++;
        containers.pop();
      } else {
        return index;
      }
      continue;
    }
    if (index >= end) return end;
    const character = text[index]!;
    if (mode === "key" || mode === "first-key") {
      if (mode === "first-key" && character === "}") {
        index++;
        containers.pop();
        mode = "after-value";
        continue;
      }
      if (character !== '"') return index;
      const error = scanString();
      if (error >= 0) return error;
      skipWhitespace();
      if (index >= end) return end;
      if (text[index] !== ":") return index;
      index++;
      mode = "value";
      continue;
    }
    if (mode === "first-value" && character === "]") {
      index++;
      containers.pop();
      mode = "after-value";
      continue;
    }
    if (character === "{") {
      index++;
      containers.push("object");
      mode = "first-key";
      continue;
    }
    if (character === "[") {
      index++;
      containers.push("array");
      mode = "first-value";
      continue;
    }
    let error: number;
    if (character === '"') error = scanString();
    else if (character === "-" || isDigit(index)) error = scanNumber();
    else {
      const literal = ["true", "false", "null"].find((word) => word[0] === character);
      if (literal === undefined) return index;
      error = -1;
      for (let offset = 0; offset < literal.length; offset++) {
        if (text[index + offset] !== literal[offset]) {
          error = Math.min(index + offset, end);
          break;
        }
      }
      if (error < 0) index += literal.length;
    }
    if (error >= 0) return error;
    mode = "after-value";
  }
}

/** The line and column of `offset` in `text` (1-based). */
export function lineAndColumn(text: string, offset: number): { line: number; column: number } {
  let line = 1;
  let lineStart = 0;
  for (
    let index = text.indexOf("\n");
    index !== -1 && index < offset;
    index = text.indexOf("\n", index + 1)
  ) {
    line++;
    lineStart = index + 1;
  }
  return { line, column: offset - lineStart + 1 };
}

/** Locates the syntax error `JSON.parse(text)` threw. */
export function locateJsonSyntaxError(text: string, error: unknown): JsonSyntaxLocation {
  const message = error instanceof Error ? error.message : String(error);
  const reason =
    message
      .replace(/ in JSON at position \d+[\s\S]*$/, "")
      .replace(/, [\s\S]* is not valid JSON$/, "")
      .replace(/^JSON\.parse: /, "")
      .replace(/\n/g, "\\n")
      .replace(/\r/g, "\\r")
      .replace(/\t/g, "\\t") || "invalid JSON";
  const offset = findJsonSyntaxError(text);
  const { line, column } = lineAndColumn(text, Math.max(offset, 0));
  return { line, column, reason };
}

/** `JSON.parse`, or a typed `json-syntax` error at the line and column where `text` stops being JSON. */
export function parseJsonStrict(text: string, file: string): unknown {
  try {
    return JSON.parse(text);
  } catch (error) {
    throw jsonSyntaxError(text, error, file);
  }
}

/** A `json-syntax` error at the line and column where `text` stops being JSON. */
export function jsonSyntaxError(
  text: string,
  error: unknown,
  file: string,
  hint = "fix the JSON syntax there: a missing comma or quote, a trailing comma, a comment, an unquoted key",
): KnowledgeCompileError {
  const { line, column, reason } = locateJsonSyntaxError(text, error);
  return new KnowledgeCompileError("json-syntax", `malformed JSON: ${reason}`, { file, line, column, hint });
}
