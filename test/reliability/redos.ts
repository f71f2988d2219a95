/**
 * The ReDoS corpus of RELIABILITY 12, shared by the unit test (which checks that every call completes) and
 * `npm run soak` (which times each one against the 50 ms budget).
 *
 * The regular expressions are not listed by hand: every regular-expression literal and `new RegExp` call in the
 * shipped sources (src/, tests excluded) is found with the TypeScript parser, so a regex added later is covered
 * without anyone remembering to add it here. A `new RegExp` with a non-literal pattern cannot be checked and is
 * reported as such.
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import ts from "typescript";

/** One regular expression found in the sources. */
export type FoundRegex = {
  /** `path:line` of the literal. */
  location: string;
  /** The literal as written, e.g. `/[^\p{L}\p{N}]+/gu`. */
  text: string;
  /** The compiled expression, or null when its pattern is not a literal. */
  regex: RegExp | null;
};

function sourceFiles(directory: string, files: string[] = []): string[] {
  for (const name of readdirSync(directory)) {
    const path = join(directory, name);
    if (statSync(path).isDirectory()) sourceFiles(path, files);
    else if (path.endsWith(".ts") && !path.endsWith(".test.ts")) files.push(path);
  }
  return files.sort();
}

/** Every regular expression of the TypeScript files under `root/src`. */
export function findSourceRegexes(root: string): FoundRegex[] {
  const found: FoundRegex[] = [];
  for (const file of sourceFiles(join(root, "src"))) {
    const sourceFile = ts.createSourceFile(file, readFileSync(file, "utf8"), ts.ScriptTarget.Latest, true);
    const where = (node: ts.Node) =>
      `${relative(root, file)}:${sourceFile.getLineAndCharacterOfPosition(node.getStart()).line + 1}`;
    const visit = (node: ts.Node): void => {
      if (node.kind === ts.SyntaxKind.RegularExpressionLiteral) {
        const text = node.getText();
        const lastSlash = text.lastIndexOf("/");
        found.push({
          location: where(node),
          text,
          regex: new RegExp(text.slice(1, lastSlash), text.slice(lastSlash + 1)),
        });
      } else if (
        (ts.isNewExpression(node) || ts.isCallExpression(node)) &&
        node.expression.getText() === "RegExp"
      ) {
        const [pattern, flags] = node.arguments ?? [];
        const literal = pattern && ts.isStringLiteralLike(pattern) ? pattern.text : null;
        const flagText = flags && ts.isStringLiteralLike(flags) ? flags.text : flags ? null : "";
        found.push({
          location: where(node),
          text: node.getText(),
          regex: literal !== null && flagText !== null ? new RegExp(literal, flagText) : null,
        });
      }
      ts.forEachChild(node, visit);
    };
    visit(sourceFile);
  }
  return found;
}

/** Characters and pairs that classic catastrophic patterns pump, whatever the regex. */
const GENERIC_PUMPS = [
  "a",
  "A",
  "1",
  " ",
  "\t",
  "\n",
  "\r\n",
  ".",
  "-",
  "_",
  "/",
  "\\",
  "<",
  "&",
  "#",
  ";",
  "@",
  "[",
  "]",
  "é",
  "E\u0301",
  "\u200B",
  "Ab",
  "aB",
  "AAb",
  "a1",
  "1a",
  "a ",
  "&l",
  "&#",
  "&#x",
  "&#0",
  "< /",
  "run_id:",
  "0.",
];

/** Tails that make a pumped prefix fail to match at the very end. */
export const MISMATCH_TAILS = ["!", "\u0000", "\uD800", "a", "A", "1", " "];

/** Literal pieces of the pattern itself (words and punctuation outside escapes), pumped too. */
function literalPumps(text: string): string[] {
  const pieces = new Set<string>();
  for (const match of text.matchAll(/[A-Za-z_]{2,}/g)) {
    if (!/^(p|u|gu|gi|g|i|m|s|x|y)$/.test(match[0])) pieces.add(match[0]);
  }
  for (const match of text.matchAll(/[<&#;:@\-./\\]/g)) pieces.add(match[0]);
  return [...pieces];
}

/** One adversarial input: a pump repeated to `length` code units, then a mismatching tail. */
export type RedosInput = { pump: string; tail: string; text: string };

/** The corpus for one regex: every pump (generic and its own literal pieces) × every tail. */
export function redosCorpus(found: FoundRegex, length: number, tails = MISMATCH_TAILS): RedosInput[] {
  const pumps = [...new Set([...GENERIC_PUMPS, ...literalPumps(found.text)])];
  const inputs: RedosInput[] = [];
  for (const pump of pumps) {
    const body = pump.repeat(Math.ceil(length / pump.length)).slice(0, length);
    for (const tail of tails) inputs.push({ pump, tail, text: body + tail });
  }
  return inputs;
}

/**
 * Runs the regex over the whole input the way the sources use regexes: `replace` (every match) for global ones,
 * `exec` (first match, which scans the whole input when there is none) otherwise.
 */
export function runRegex(regex: RegExp, text: string): number {
  if (regex.global || regex.sticky) {
    regex.lastIndex = 0;
    return text.replace(regex, "").length;
  }
  return regex.exec(text)?.index ?? -1;
}
