/**
 * `--config` files: one format for `query`, `ask`, `mcp` and `eval`. A JSON object with the grounding settings of
 * `KnowledgeGroundingConfig` a command can use (`preset`, `retrieval`, `context`, `blockedDomains`, `timeoutMs`) and
 * an optional `name` (the configuration's label in `eval`; the other commands ignore it). The knowledge base itself
 * comes from `--kb`, never from the file. A file that cannot be read or is not such an object is a usage error
 * (exit 2) naming the file, and for malformed JSON the line and column.
 *
 * @module
 */
import { readFile } from "node:fs/promises";
import { basename, extname, resolve } from "node:path";
import { locateJsonSyntaxError } from "../files/json.js";
import { validateGroundingConfig } from "../index.js";
import type {
  KnowledgeContextConfig,
  KnowledgePresetName,
  KnowledgeRetrievalConfig,
} from "../types/knowledge.js";
import { CliUsageError } from "./errors.js";
import type { CommandContext } from "./io.js";

/** The parts of `KnowledgeGroundingConfig` a `--config` file may set. */
export type CliGroundingConfig = {
  /** Preset the file's `retrieval` and `context` fields override (a `--preset` flag replaces it). */
  preset?: KnowledgePresetName;
  blockedDomains?: string[];
  retrieval?: KnowledgeRetrievalConfig;
  context?: KnowledgeContextConfig;
  timeoutMs?: number;
};

/** A parsed `--config`: its settings and the name `eval` shows for it. */
export type CliConfiguration = {
  /** The file's `"name"`, else the file's base name (`tuned.json` → `tuned`), else `config <n>` for inline JSON. */
  name: string;
  settings: CliGroundingConfig;
};

/** Keys a config file may hold, in the order the messages list them. */
export const CONFIG_FILE_KEYS = [
  "name",
  "preset",
  "retrieval",
  "context",
  "blockedDomains",
  "timeoutMs",
] as const;

const CONFIG_EXAMPLE =
  '{"preset": "recommended", "retrieval": {"resultLimit": 5}, "context": {"maxTokens": 2000}}';
const CONFIG_HINT = `a config file is a JSON object such as ${CONFIG_EXAMPLE} (keys: ${CONFIG_FILE_KEYS.join(", ")})`;

/** Retrieval options written at the top level, as in a flat settings object: they belong under "retrieval". */
const RETRIEVAL_KEYS = new Set([
  "mode",
  "analyzer",
  "scoring",
  "k1",
  "b",
  "fieldWeights",
  "exactBoost",
  "aliasBoost",
  "confidenceRule",
  "candidateLimit",
  "resultLimit",
  "relationLimit",
  "minRelativeScore",
  "scoreGapRatio",
  "expansionFromTop",
  "expansionMinConfidence",
]);

/** Context options written at the top level: they belong under "context". */
const CONTEXT_KEYS = new Set([
  "maxTokens",
  "includeCitations",
  "passages",
  "passageTokens",
  "maxPassages",
  "longBodyTokens",
]);

function badConfig(file: string, message: string, hint = CONFIG_HINT): CliUsageError {
  return new CliUsageError(`${file}: ${message}`, hint, { code: "bad-config", file });
}

/**
 * Checks a parsed config value with the engine's own configuration validation and reports the first problem as a
 * usage error naming `file`.
 */
export function checkGroundingConfig(value: unknown, file: string): CliConfiguration & { named: boolean } {
  // `named` says whether the name came from the file (eval labels inline JSON without one `config <n>`).
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    throw badConfig(file, "a config file must be a JSON object");
  }
  const record = value as Record<string, unknown>;
  for (const key of Object.keys(record)) {
    if ((CONFIG_FILE_KEYS as readonly string[]).includes(key)) continue;
    if (key === "sources" || key === "enabled") {
      throw badConfig(
        file,
        `"${key}" does not belong in a config file`,
        "the knowledge base comes from --kb, and grounding is always on in the CLI; remove the key",
      );
    }
    for (const [section, keys] of [
      ["retrieval", RETRIEVAL_KEYS],
      ["context", CONTEXT_KEYS],
    ] as const) {
      if (keys.has(key)) {
        throw badConfig(
          file,
          `"${key}" is a ${section} option: write it inside "${section}"`,
          `e.g. {"${section}": {"${key}": ${JSON.stringify(record[key])}}}`,
        );
      }
    }
    throw badConfig(file, `unknown config key "${key}" (known: ${CONFIG_FILE_KEYS.join(", ")})`);
  }
  const { name, ...settings } = record;
  if (name !== undefined && (typeof name !== "string" || name.trim() === "")) {
    throw badConfig(file, '"name" must be a non-empty string');
  }
  const [firstError] = validateGroundingConfig({ ...settings, enabled: true, sources: [] }).filter(
    (issue) => issue.level === "error",
  );
  if (firstError) throw badConfig(file, firstError.message);
  return {
    name: typeof name === "string" ? name.trim() : basename(file, extname(file)),
    named: typeof name === "string",
    settings: settings as CliGroundingConfig,
  };
}

/** Parses config text, reporting malformed JSON at its line and column. */
export function parseConfigText(text: string, file: string): CliConfiguration & { named: boolean } {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    const { line, column, reason } = locateJsonSyntaxError(text, error);
    throw new CliUsageError(
      `${file}:${line}:${column}: malformed JSON: ${reason}`,
      "fix the JSON syntax there: a missing comma or quote, a trailing comma, a comment, an unquoted key",
      { code: "json-syntax", file, line, column },
    );
  }
  return checkGroundingConfig(value, file);
}

/**
 * Reads one `--config` value: a JSON file, or (for `eval`, which compares several) inline JSON starting with `{`,
 * shown as `--config #<n>`.
 */
export async function readConfiguration(
  context: CommandContext,
  value: string,
  options: { index?: number; inline?: boolean } = {},
): Promise<CliConfiguration> {
  const index = options.index ?? 0;
  if (options.inline && value.trimStart().startsWith("{")) {
    const { name, named, settings } = parseConfigText(value, `--config #${index + 1}`);
    return { name: named ? name : `config ${index + 1}`, settings };
  }
  let text: string;
  try {
    text = await readFile(resolve(context.io.cwd, value), "utf8");
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw new CliUsageError(
      code === "ENOENT" ? `${value}: config file not found` : `${value}: config file unreadable (${code})`,
      `pass a JSON file such as ${CONFIG_EXAMPLE}`,
      { code: "not-found", file: value },
    );
  }
  const { name, settings } = parseConfigText(text, value);
  return { name, settings };
}

/** Reads `--config` for `query`, `ask` and `mcp`: the settings (a `name` is allowed and ignored). */
export async function readConfigFile(context: CommandContext, path: string): Promise<CliGroundingConfig> {
  return (await readConfiguration(context, path)).settings;
}
