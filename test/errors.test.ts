/**
 * Every error class lexground throws follows one pattern (the AI SDK's): a stable `code`, a marker registered with
 * `Symbol.for`, and `isInstance`, which recognizes the error from another copy of the package (simulated here by an
 * object that carries only the marker) and rejects any other error.
 */
import { describe, expect, it } from "vitest";
import { CliFailure, CliUsageError, KnowledgeBaseInvalidError } from "../src/cli/errors.js";
import { EvalKnowledgeBaseError } from "../src/eval/collection.js";
import { EvalDataError } from "../src/eval/data.js";
import { EvalConfigurationError } from "../src/eval/run.js";
import { KnowledgeCompileError } from "../src/files/errors.js";
import { GroundingIntegrationError } from "../src/integrations/engine.js";
import { KnowledgeArtifactError } from "../src/knowledge/artifactHeader.js";
import { KnowledgeGroundingTimeoutError, KnowledgeRegistryError } from "../src/knowledge/engine.js";
import { NeuroLinkError, ProviderNotConfiguredError } from "../src/neurolink/errors.js";
import { MissingPeerDependencyError } from "../src/peerDependency.js";
import { BinaryArrayError } from "../src/postgres/binaryArrays.js";
import { CopyFormatError } from "../src/postgres/copyOut.js";
import { PostgresBackendOptionsError } from "../src/postgres/options.js";

const status = {
  state: "failed",
  ready: false,
  entryCount: 0,
  validationIssues: [],
  lastError: "boom",
} as unknown as ConstructorParameters<typeof KnowledgeRegistryError>[1];

const cases: [string, { isInstance(error: unknown): boolean }, Error & { code: string }][] = [
  ["KnowledgeGroundingTimeoutError", KnowledgeGroundingTimeoutError, new KnowledgeGroundingTimeoutError(5)],
  ["KnowledgeRegistryError", KnowledgeRegistryError, new KnowledgeRegistryError("build-failed", status)],
  ["KnowledgeArtifactError", KnowledgeArtifactError, new KnowledgeArtifactError("corrupt", "bad bytes")],
  ["KnowledgeCompileError", KnowledgeCompileError, new KnowledgeCompileError("not-found", "no folder")],
  [
    "MissingPeerDependencyError",
    MissingPeerDependencyError,
    new MissingPeerDependencyError({ packageName: "redis", versionRange: "^5.0.0", feature: "memory" }),
  ],
  [
    "GroundingIntegrationError",
    GroundingIntegrationError,
    new GroundingIntegrationError("options", "is bad"),
  ],
  ["CliUsageError", CliUsageError, new CliUsageError("bad flag")],
  ["CliFailure", CliFailure, new CliFailure("failed")],
  ["KnowledgeBaseInvalidError", KnowledgeBaseInvalidError, new KnowledgeBaseInvalidError([])],
  ["EvalConfigurationError", EvalConfigurationError, new EvalConfigurationError("tuned", "bad k1")],
  ["EvalKnowledgeBaseError", EvalKnowledgeBaseError, new EvalKnowledgeBaseError([])],
  ["PostgresBackendOptionsError", PostgresBackendOptionsError, new PostgresBackendOptionsError("bad pool")],
  ["BinaryArrayError", BinaryArrayError, new BinaryArrayError("binary array: truncated header")],
  ["CopyFormatError", CopyFormatError, new CopyFormatError("binary COPY: bad signature")],
  ["EvalDataError", EvalDataError, new EvalDataError("queries.jsonl", "bad line", { line: 3 })],
  ["NeuroLinkError", NeuroLinkError, new NeuroLinkError("UNEXPECTED_ERROR", "oops")],
  [
    "ProviderNotConfiguredError",
    ProviderNotConfiguredError,
    new ProviderNotConfiguredError({ provider: "openai", setting: "OPENAI_API_KEY", message: "set it" }),
  ],
];

describe("every error class has a code, a marker and isInstance", () => {
  it.each(cases)("%s", (_, errorClass, error) => {
    expect(typeof error.code).toBe("string");
    expect(error.code.length).toBeGreaterThan(0);
    expect(errorClass.isInstance(error)).toBe(true);
    expect(errorClass.isInstance(new Error(error.message))).toBe(false);
    expect(errorClass.isInstance(null)).toBe(false);
    expect(errorClass.isInstance("an error")).toBe(false);
    // Another copy of the package: a different class, the same registered marker.
    const markers = Object.getOwnPropertySymbols(error).filter(
      (symbol) => Symbol.keyFor(symbol) !== undefined,
    );
    expect(markers.length).toBeGreaterThan(0);
    const foreign = Object.fromEntries(markers.map((marker) => [marker, true]));
    expect(errorClass.isInstance(foreign)).toBe(true);
  });

  it("a timeout says which timeout was exceeded, and its String() names it as a TimeoutError", () => {
    const error = new KnowledgeGroundingTimeoutError(20);
    expect(error.timeoutMs).toBe(20);
    expect(String(error)).toBe("TimeoutError: Knowledge grounding timed out after 20ms");
  });
});
