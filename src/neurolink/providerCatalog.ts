/**
 * The built-in providers as data: their names and aliases, the local OpenAI-compatible servers' presets, default
 * models, the environment variables read for each, and the package each comes from (loaded on first use). How a
 * request resolves against them is `providers.ts`.
 */
import {
  importPeerDependency,
  MissingPeerDependencyError,
  PEER_DEPENDENCY_RANGES,
  type PeerDependencyName,
} from "../peerDependency.js";
import { ProviderNotConfiguredError } from "./errors.js";
import type { ProviderName } from "./types.js";

/** Built-in providers. */
export const PROVIDER_NAMES: readonly ProviderName[] = ["openai", "anthropic", "google", "openai-compatible"];

/** Local OpenAI-compatible servers with a conventional default address. */
export type LocalPreset = {
  name: string;
  baseUrlVariable: string;
  defaultBaseURL: string;
  modelVariable: string;
  apiKeyVariable: string;
};

export const LOCAL_PRESETS: Record<string, LocalPreset> = {
  ollama: {
    name: "ollama",
    baseUrlVariable: "OLLAMA_BASE_URL",
    defaultBaseURL: "http://127.0.0.1:11434/v1",
    modelVariable: "OLLAMA_MODEL",
    apiKeyVariable: "OLLAMA_API_KEY",
  },
  lmstudio: {
    name: "lmstudio",
    baseUrlVariable: "LMSTUDIO_BASE_URL",
    defaultBaseURL: "http://127.0.0.1:1234/v1",
    modelVariable: "LMSTUDIO_MODEL",
    apiKeyVariable: "LMSTUDIO_API_KEY",
  },
  vllm: {
    name: "vllm",
    baseUrlVariable: "VLLM_BASE_URL",
    defaultBaseURL: "http://127.0.0.1:8000/v1",
    modelVariable: "VLLM_MODEL",
    apiKeyVariable: "VLLM_API_KEY",
  },
};

/**
 * Accepted spellings of `provider`, mapped to a built-in provider. `ollama`, `lmstudio` and `vllm` are the
 * OpenAI-compatible provider with that server's default address.
 */
export const PROVIDER_ALIASES: Readonly<Record<string, ProviderName>> = {
  openai: "openai",
  anthropic: "anthropic",
  claude: "anthropic",
  google: "google",
  "google-ai": "google",
  "google-ai-studio": "google",
  googleaistudio: "google",
  gemini: "google",
  "openai-compatible": "openai-compatible",
  openaicompatible: "openai-compatible",
  ollama: "openai-compatible",
  lmstudio: "openai-compatible",
  "lm-studio": "openai-compatible",
  vllm: "openai-compatible",
};

export const DEFAULT_MODELS: Record<Exclude<ProviderName, "openai-compatible">, string> = {
  openai: "gpt-4o-mini",
  anthropic: "claude-3-5-haiku-latest",
  google: "gemini-2.5-flash",
};

/** Environment variables read per provider (first match wins). */
export const API_KEY_VARIABLES: Record<ProviderName, string[]> = {
  openai: ["OPENAI_API_KEY"],
  anthropic: ["ANTHROPIC_API_KEY"],
  google: ["GOOGLE_GENERATIVE_AI_API_KEY", "GOOGLE_AI_API_KEY", "GEMINI_API_KEY"],
  "openai-compatible": ["OPENAI_COMPATIBLE_API_KEY"],
};

export const MODEL_VARIABLES: Record<ProviderName, string> = {
  openai: "OPENAI_MODEL",
  anthropic: "ANTHROPIC_MODEL",
  google: "GOOGLE_AI_MODEL",
  "openai-compatible": "OPENAI_COMPATIBLE_MODEL",
};

export const BASE_URL_VARIABLES: Record<ProviderName, string> = {
  openai: "OPENAI_BASE_URL",
  anthropic: "ANTHROPIC_BASE_URL",
  google: "GOOGLE_GENERATIVE_AI_BASE_URL",
  "openai-compatible": "OPENAI_COMPATIBLE_BASE_URL",
};

/** The package each built-in provider comes from. */
export const PROVIDER_PACKAGES: Readonly<Record<ProviderName, PeerDependencyName>> = {
  openai: "@ai-sdk/openai",
  anthropic: "@ai-sdk/anthropic",
  google: "@ai-sdk/google",
  "openai-compatible": "@ai-sdk/openai-compatible",
};

/** Loads a provider's package (`load` is an `import()` with a literal specifier, so bundlers see it). */
export async function loadProviderPackage<Module>(
  provider: ProviderName,
  load: () => Promise<Module>,
): Promise<Module> {
  const packageName = PROVIDER_PACKAGES[provider];
  const versionRange = PEER_DEPENDENCY_RANGES[packageName];
  try {
    return await importPeerDependency(
      { packageName, versionRange, feature: `the "${provider}" provider` },
      load,
    );
  } catch (error) {
    if (!MissingPeerDependencyError.isInstance(error)) throw error;
    throw new ProviderNotConfiguredError({
      provider,
      setting: packageName,
      message: `Provider "${provider}" needs the package ${packageName}, which is not installed: ${error.installCommand}`,
      cause: error,
    });
  }
}
