/**
 * Optional peer dependencies. The engine (`lexground`) needs no other package; the integrations need the library
 * they integrate with (`@langchain/core`, `ai`, an `@ai-sdk/*` provider, `redis`, `@modelcontextprotocol/sdk`;
 * `@opentelemetry/api` for spans, used when present and never required),
 * which the application installs for what it uses. A missing one is reported with
 * {@link MissingPeerDependencyError}, naming the package and the command that installs it.
 *
 * @module
 */

import { hasErrorMarker } from "./knowledge/errors.js";

// One error pattern for every class, written out per class on purpose: see `knowledge/errors.ts`.
const MISSING_PEER_MARKER = Symbol.for("lexground.MissingPeerDependencyError");

/** A feature of lexground needs a package that is not installed (an optional peer dependency). */
export class MissingPeerDependencyError extends Error {
  override readonly name = "MissingPeerDependencyError";
  /** Stable machine-readable code. */
  readonly code = "MISSING_PEER_DEPENDENCY";
  readonly [MISSING_PEER_MARKER] = true;
  /** The package to install, e.g. `@langchain/core`. */
  readonly packageName: string;
  /** The versions lexground works with, e.g. `^1.0.0`. */
  readonly versionRange: string;
  /** What needed it, e.g. `lexground/langchain` or `the "openai" provider`. */
  readonly feature: string;
  /** The command that installs it, e.g. `npm install @langchain/core@^1.0.0`. */
  readonly installCommand: string;

  constructor(params: { packageName: string; versionRange: string; feature: string; cause?: unknown }) {
    const installCommand = `npm install ${params.packageName}@${params.versionRange}`;
    super(
      `${params.feature} needs the package ${params.packageName}, which is not installed: ${installCommand}`,
      params.cause === undefined ? undefined : { cause: params.cause },
    );
    this.packageName = params.packageName;
    this.versionRange = params.versionRange;
    this.feature = params.feature;
    this.installCommand = installCommand;
  }

  /** True for this error from any copy of lexground (where `instanceof` would not be). */
  static isInstance(error: unknown): error is MissingPeerDependencyError {
    return hasErrorMarker(error, MISSING_PEER_MARKER);
  }
}

/**
 * Whether `error` says that `packageName` itself could not be found (Node's `ERR_MODULE_NOT_FOUND` for `import`,
 * `MODULE_NOT_FOUND` for `require`). A package that is installed but fails to load, or that misses one of its
 * own dependencies, is not reported as missing: that error names another package and is rethrown as it is.
 */
export function isMissingPackageError(error: unknown, packageName: string): boolean {
  if (typeof error !== "object" || error === null) return false;
  const { code, message } = error as { code?: unknown; message?: unknown };
  if (code !== "ERR_MODULE_NOT_FOUND" && code !== "MODULE_NOT_FOUND") return false;
  if (typeof message !== "string") return false;
  // "Cannot find package 'x' imported from …" (import) and "Cannot find module 'x/sub.js'" (require).
  return message.includes(`'${packageName}'`) || message.includes(`'${packageName}/`);
}

/**
 * Loads an optional peer through `load` (an `import()` with a literal specifier, so bundlers see it), turning
 * "package not found" into {@link MissingPeerDependencyError}. Other failures are rethrown unchanged.
 */
export async function importPeerDependency<T>(
  peer: { packageName: string; versionRange: string; feature: string },
  load: () => Promise<T>,
): Promise<T> {
  try {
    return await load();
  } catch (error) {
    if (isMissingPackageError(error, peer.packageName)) {
      throw new MissingPeerDependencyError({ ...peer, cause: error });
    }
    throw error;
  }
}

/** The versions of each optional peer lexground is built and tested against (package.json `peerDependencies`). */
export const PEER_DEPENDENCY_RANGES = {
  ai: "^6.0.0",
  zod: "^4.0.0",
  "@ai-sdk/provider": "^3.0.0",
  "@ai-sdk/openai": "^3.0.0",
  "@ai-sdk/anthropic": "^3.0.0",
  "@ai-sdk/google": "^3.0.0",
  "@ai-sdk/openai-compatible": "^2.0.0",
  "@langchain/core": "^1.0.0",
  "@modelcontextprotocol/sdk": "^1.32.0",
  "@opentelemetry/api": "^1.0.0",
  redis: "^5.0.0",
  pg: "^8.11.0",
} as const;

/** An optional peer of lexground. */
export type PeerDependencyName = keyof typeof PEER_DEPENDENCY_RANGES;
