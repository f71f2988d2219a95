/**
 * Provider resolution: turns `{provider, model}` (or an AI SDK model object) into a language model of the Vercel
 * AI SDK v6. Settings come from the constructor's `providers` config first, then from environment variables.
 * A provider that lacks a required setting fails with {@link ProviderNotConfiguredError} naming that setting
 * before any request is made.
 *
 * Each built-in provider's package (`@ai-sdk/openai`, `@ai-sdk/anthropic`, `@ai-sdk/google`,
 * `@ai-sdk/openai-compatible`) is an optional peer dependency, loaded the first time the provider is used; when it
 * is not installed, the provider is not configured either: {@link ProviderNotConfiguredError} with the package as
 * `setting` and a `MissingPeerDependencyError` as `cause`.
 *
 * The providers' table (names, aliases, presets, defaults, environment variables, packages) is
 * `providerCatalog.ts`.
 *
 * @module
 */

import { ProviderNotConfiguredError, UnknownProviderError } from "./errors.js";
import {
  API_KEY_VARIABLES,
  BASE_URL_VARIABLES,
  DEFAULT_MODELS,
  LOCAL_PRESETS,
  type LocalPreset,
  loadProviderPackage,
  MODEL_VARIABLES,
  PROVIDER_ALIASES,
  PROVIDER_NAMES,
} from "./providerCatalog.js";
import type {
  CustomProvider,
  LanguageModelObject,
  OpenAICompatibleSettings,
  ProviderName,
  ProviderSettings,
  ProvidersConfig,
} from "./types.js";

/** A language model ready to call, with the names reported on results. */
export type ResolvedModel = {
  /** Reported provider name: the built-in name, a local preset (`ollama`), or the model object's provider. */
  provider: string;
  /** Model id. */
  model: string;
  languageModel: LanguageModelObject;
};

/** What to resolve: a provider and/or model id, or a model object. */
export type ModelRequest = {
  provider?: string;
  model?: string | LanguageModelObject;
};

/** True for an AI SDK language model object (not a model id string). */
export function isLanguageModelObject(value: unknown): value is LanguageModelObject {
  if (typeof value !== "object" || value === null) return false;
  const candidate = value as { specificationVersion?: unknown; doGenerate?: unknown; doStream?: unknown };
  return (
    (candidate.specificationVersion === "v3" || candidate.specificationVersion === "v2") &&
    typeof candidate.doGenerate === "function" &&
    typeof candidate.doStream === "function"
  );
}

function firstNonEmpty(...values: Array<string | undefined>): string | undefined {
  for (const value of values) {
    if (typeof value === "string" && value.trim() !== "") return value.trim();
  }
  return undefined;
}

/** Ollama users often configure the server root; its OpenAI-compatible API lives under `/v1`. */
function withV1Path(baseURL: string): string {
  try {
    const url = new URL(baseURL);
    if (url.pathname === "/" || url.pathname === "") {
      url.pathname = "/v1";
      return url.toString().replace(/\/$/, "");
    }
  } catch {
    // Left as given; the provider reports an unusable URL on the request.
  }
  return baseURL;
}

/**
 * Splits `"<provider>/<model>"` when the prefix is a known provider; otherwise the whole string is a model id
 * (model ids such as `meta-llama/Llama-3-8B` contain slashes too).
 */
export function splitProviderModel(
  value: string,
  extraProviders: ReadonlySet<string> = new Set(),
): { provider?: string; model: string } {
  const slash = value.indexOf("/");
  if (slash > 0) {
    const prefix = value.slice(0, slash).toLowerCase();
    if (Object.hasOwn(PROVIDER_ALIASES, prefix) || extraProviders.has(prefix)) {
      return { provider: prefix, model: value.slice(slash + 1) };
    }
  }
  return { model: value };
}

/** Resolves providers and caches provider instances per instance of the client. */
export class ProviderResolver {
  private readonly providers: ProvidersConfig;
  private readonly env: Record<string, string | undefined>;
  private readonly defaultProvider: string | undefined;
  private readonly customProviders: ReadonlyMap<string, CustomProvider>;
  private readonly factories = new Map<string, (modelId: string) => LanguageModelObject>();

  constructor(options: {
    providers?: ProvidersConfig;
    env?: Record<string, string | undefined>;
    defaultProvider?: string;
    customProviders?: Record<string, CustomProvider>;
  }) {
    this.customProviders = new Map(
      Object.entries(options.customProviders ?? {}).map(([name, provider]) => [name.toLowerCase(), provider]),
    );
    this.providers = options.providers ?? {};
    this.env = options.env ?? process.env;
    this.defaultProvider = options.defaultProvider;
  }

  /** Names of the custom providers (lower case). */
  get customProviderNames(): ReadonlySet<string> {
    return new Set(this.customProviders.keys());
  }

  /** Splits `"<provider>/<model>"` knowing this instance's custom providers too. */
  split(value: string): { provider?: string; model: string } {
    return splitProviderModel(value, this.customProviderNames);
  }

  /**
   * Resolves a request into a callable model, or rejects with a typed configuration error. The first use of a
   * built-in provider loads its package.
   */
  async resolve(request: ModelRequest): Promise<ResolvedModel> {
    if (isLanguageModelObject(request.model)) {
      return { provider: request.model.provider, model: request.model.modelId, languageModel: request.model };
    }
    let providerInput = request.provider;
    let modelId = request.model;
    if (providerInput === undefined && typeof modelId === "string") {
      const split = splitProviderModel(modelId, this.customProviderNames);
      if (split.provider !== undefined) {
        providerInput = split.provider;
        modelId = split.model;
      }
    }
    const requested = firstNonEmpty(providerInput, this.defaultProvider, this.env.LEXGROUND_PROVIDER);
    const providerKey = requested?.toLowerCase() ?? this.detectProvider();
    const custom = this.customProviders.get(providerKey);
    if (custom !== undefined) {
      const customModel = firstNonEmpty(
        typeof modelId === "string" ? modelId : undefined,
        this.env.LEXGROUND_MODEL,
      );
      if (customModel === undefined) {
        throw new ProviderNotConfiguredError({
          provider: providerKey,
          setting: "model",
          message: `Custom provider "${providerKey}" needs a model id: pass \`model\` (or set LEXGROUND_MODEL).`,
        });
      }
      const languageModel =
        typeof custom === "function" ? custom(customModel) : custom.languageModel(customModel);
      return { provider: providerKey, model: customModel, languageModel };
    }
    const canonical = Object.hasOwn(PROVIDER_ALIASES, providerKey)
      ? PROVIDER_ALIASES[providerKey]
      : undefined;
    if (canonical === undefined)
      throw new UnknownProviderError(requested ?? providerKey, Object.keys(PROVIDER_ALIASES));
    const preset = Object.hasOwn(LOCAL_PRESETS, providerKey) ? LOCAL_PRESETS[providerKey] : undefined;
    const settings: ProviderSettings & OpenAICompatibleSettings =
      preset === undefined ? (this.providers[canonical] ?? {}) : {};
    const reportedProvider = preset?.name ?? canonical;
    const model =
      firstNonEmpty(
        typeof modelId === "string" ? modelId : undefined,
        settings.model,
        preset ? this.env[preset.modelVariable] : this.env[MODEL_VARIABLES[canonical]],
        this.env.LEXGROUND_MODEL,
      ) ?? (canonical === "openai-compatible" ? undefined : DEFAULT_MODELS[canonical]);
    if (model === undefined) {
      const setting = preset ? preset.modelVariable : MODEL_VARIABLES[canonical];
      throw new ProviderNotConfiguredError({
        provider: reportedProvider,
        setting,
        message: `Provider "${reportedProvider}" has no model: pass \`model\`, or set ${setting} (or providers["openai-compatible"].model).`,
      });
    }
    const factory = await this.factoryFor(canonical, providerKey, preset, settings);
    return { provider: reportedProvider, model, languageModel: factory(model) };
  }

  /** The first provider with credentials in config or environment. */
  private detectProvider(): string {
    for (const name of PROVIDER_NAMES) {
      const settings = this.providers[name];
      if (name === "openai-compatible") {
        if (firstNonEmpty(settings?.baseURL, this.env[BASE_URL_VARIABLES[name]])) return name;
        continue;
      }
      const variables = API_KEY_VARIABLES[name];
      if (firstNonEmpty(settings?.apiKey, ...variables.map((variable) => this.env[variable]))) return name;
    }
    throw new ProviderNotConfiguredError({
      provider: undefined,
      setting: "LEXGROUND_PROVIDER",
      message:
        "No provider is configured: pass `provider` (or an AI SDK model as `model`), or set LEXGROUND_PROVIDER, " +
        "or one of OPENAI_API_KEY, ANTHROPIC_API_KEY, GOOGLE_GENERATIVE_AI_API_KEY, OPENAI_COMPATIBLE_BASE_URL.",
    });
  }

  private async factoryFor(
    canonical: ProviderName,
    providerKey: string,
    preset: LocalPreset | undefined,
    settings: ProviderSettings & OpenAICompatibleSettings,
  ): Promise<(modelId: string) => LanguageModelObject> {
    const cached = this.factories.get(providerKey);
    if (cached) return cached;
    const factory = await this.createFactory(canonical, preset, settings);
    this.factories.set(providerKey, factory);
    return factory;
  }

  private async createFactory(
    canonical: ProviderName,
    preset: LocalPreset | undefined,
    settings: ProviderSettings & OpenAICompatibleSettings,
  ): Promise<(modelId: string) => LanguageModelObject> {
    const env = this.env;
    const apiKeyVariables = preset ? [preset.apiKeyVariable] : API_KEY_VARIABLES[canonical];
    const apiKey = firstNonEmpty(settings.apiKey, ...apiKeyVariables.map((variable) => env[variable]));
    const baseURL = firstNonEmpty(
      settings.baseURL,
      preset ? env[preset.baseUrlVariable] : env[BASE_URL_VARIABLES[canonical]],
      preset?.defaultBaseURL,
    );
    const missingKey = (): never => {
      const setting = apiKeyVariables[0] ?? "apiKey";
      throw new ProviderNotConfiguredError({
        provider: canonical,
        setting,
        message: `Provider "${canonical}" is not configured: set ${setting} (or providers.${canonical}.apiKey).`,
      });
    };
    const common = {
      ...(baseURL === undefined ? {} : { baseURL }),
      ...(settings.headers === undefined ? {} : { headers: settings.headers }),
      ...(settings.fetch === undefined ? {} : { fetch: settings.fetch }),
    };
    switch (canonical) {
      case "openai": {
        const key = apiKey ?? missingKey();
        const { createOpenAI } = await loadProviderPackage(canonical, () => import("@ai-sdk/openai"));
        const provider = createOpenAI({ apiKey: key, ...common });
        return (modelId) => provider(modelId);
      }
      case "anthropic": {
        const key = apiKey ?? missingKey();
        const { createAnthropic } = await loadProviderPackage(canonical, () => import("@ai-sdk/anthropic"));
        const provider = createAnthropic({ apiKey: key, ...common });
        return (modelId) => provider(modelId);
      }
      case "google": {
        const key = apiKey ?? missingKey();
        const { createGoogleGenerativeAI } = await loadProviderPackage(
          canonical,
          () => import("@ai-sdk/google"),
        );
        const provider = createGoogleGenerativeAI({ apiKey: key, ...common });
        return (modelId) => provider(modelId);
      }
      case "openai-compatible": {
        if (baseURL === undefined) {
          throw new ProviderNotConfiguredError({
            provider: "openai-compatible",
            setting: "OPENAI_COMPATIBLE_BASE_URL",
            message:
              'Provider "openai-compatible" has no base URL: set OPENAI_COMPATIBLE_BASE_URL (or providers["openai-compatible"].baseURL), e.g. http://127.0.0.1:11434/v1 for Ollama.',
          });
        }
        const { createOpenAICompatible } = await loadProviderPackage(
          canonical,
          () => import("@ai-sdk/openai-compatible"),
        );
        const provider = createOpenAICompatible({
          name: settings.name ?? preset?.name ?? "openai-compatible",
          ...common,
          baseURL: preset ? withV1Path(baseURL) : baseURL,
          ...(apiKey === undefined ? {} : { apiKey }),
          includeUsage: settings.includeUsage ?? true,
        });
        return (modelId) => provider.chatModel(modelId);
      }
    }
  }
}
