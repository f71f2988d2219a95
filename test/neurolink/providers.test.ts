/** Provider resolution: environment and config, defaults, aliases, typed errors naming the missing setting. */
import { describe, expect, it } from "vitest";
import {
  isLanguageModelObject,
  NeuroLink,
  ProviderNotConfiguredError,
  ProviderResolver,
  parseTimeout,
  splitProviderModel,
  UnknownProviderError,
} from "../../src/neurolink/index.js";
import { recordingLogger } from "./support/fixtures.js";
import { answeringModel } from "./support/models.js";

function resolverWith(
  env: Record<string, string>,
  extra: Partial<ConstructorParameters<typeof ProviderResolver>[0]> = {},
) {
  return new ProviderResolver({ env, ...extra });
}

async function missingSetting(action: () => unknown): Promise<string | undefined> {
  try {
    await action();
  } catch (error) {
    if (ProviderNotConfiguredError.isInstance(error)) return error.setting;
    throw error;
  }
  return undefined;
}

describe("ProviderResolver", () => {
  it.each([
    ["openai", { OPENAI_API_KEY: "k" }, "openai", "gpt-4o-mini", "openai"],
    ["anthropic", { ANTHROPIC_API_KEY: "k" }, "anthropic", "claude-3-5-haiku-latest", "anthropic"],
    ["google", { GOOGLE_GENERATIVE_AI_API_KEY: "k" }, "google", "gemini-2.5-flash", "google"],
    [
      "openai-compatible",
      { OPENAI_COMPATIBLE_BASE_URL: "http://127.0.0.1:9/v1", OPENAI_COMPATIBLE_MODEL: "qwen" },
      "openai-compatible",
      "qwen",
      "openai-compatible",
    ],
  ])(
    "%s is detected from the environment with its default model",
    async (_name, env, provider, model, sdkPrefix) => {
      const resolved = await resolverWith(env).resolve({});
      expect(resolved.provider).toBe(provider);
      expect(resolved.model).toBe(model);
      expect(resolved.languageModel.provider.startsWith(sdkPrefix)).toBe(true);
      expect(resolved.languageModel.modelId).toBe(model);
    },
  );

  it("LEXGROUND_PROVIDER wins over detection; *_MODEL variables set the model", async () => {
    const resolver = resolverWith({
      OPENAI_API_KEY: "k",
      ANTHROPIC_API_KEY: "k",
      LEXGROUND_PROVIDER: "anthropic",
      ANTHROPIC_MODEL: "claude-sonnet-4-5",
    });
    expect(await resolver.resolve({})).toMatchObject({ provider: "anthropic", model: "claude-sonnet-4-5" });
    expect(await resolver.resolve({ provider: "openai", model: "gpt-4.1" })).toMatchObject({
      provider: "openai",
      model: "gpt-4.1",
    });
  });

  it("nothing configured names LEXGROUND_PROVIDER", async () => {
    expect(await missingSetting(() => resolverWith({}).resolve({}))).toBe("LEXGROUND_PROVIDER");
  });

  it.each([
    ["openai", "OPENAI_API_KEY"],
    ["anthropic", "ANTHROPIC_API_KEY"],
    ["google", "GOOGLE_GENERATIVE_AI_API_KEY"],
    ["gemini", "GOOGLE_GENERATIVE_AI_API_KEY"],
    ["openai-compatible", "OPENAI_COMPATIBLE_MODEL"],
    ["ollama", "OLLAMA_MODEL"],
  ])("provider %s without settings names %s", async (provider, setting) => {
    expect(await missingSetting(() => resolverWith({}).resolve({ provider }))).toBe(setting);
  });

  it("openai-compatible with a model but no base URL names OPENAI_COMPATIBLE_BASE_URL", async () => {
    expect(
      await missingSetting(() => resolverWith({}).resolve({ provider: "openai-compatible", model: "m" })),
    ).toBe("OPENAI_COMPATIBLE_BASE_URL");
  });

  it("explicit provider settings override the environment", async () => {
    const resolver = resolverWith(
      {},
      { providers: { openai: { apiKey: "from-config", model: "gpt-4.1-mini" } } },
    );
    expect(await resolver.resolve({})).toMatchObject({ provider: "openai", model: "gpt-4.1-mini" });
  });

  it("local presets have default addresses and report their own name", async () => {
    const resolved = await resolverWith({}).resolve({ provider: "ollama", model: "llama3.2" });
    expect(resolved).toMatchObject({ provider: "ollama", model: "llama3.2" });
    expect(resolved.languageModel.provider).toBe("ollama.chat");
    expect((await resolverWith({}).resolve({ provider: "lmstudio", model: "m" })).provider).toBe("lmstudio");
    expect((await resolverWith({}).resolve({ provider: "vllm", model: "m" })).provider).toBe("vllm");
  });

  it.each(["mistral", "__proto__", "constructor", "toString"])(
    "unknown provider %s is a typed error",
    async (provider) => {
      await expect(resolverWith({}).resolve({ provider })).rejects.toThrow(UnknownProviderError);
    },
  );

  it("'<provider>/<model>' splits only on a known provider prefix", async () => {
    expect(splitProviderModel("anthropic/claude-3-5-haiku-latest")).toEqual({
      provider: "anthropic",
      model: "claude-3-5-haiku-latest",
    });
    expect(splitProviderModel("ollama/llama3.2:3b")).toEqual({ provider: "ollama", model: "llama3.2:3b" });
    expect(splitProviderModel("meta-llama/Llama-3-8B")).toEqual({ model: "meta-llama/Llama-3-8B" });
    expect(splitProviderModel("constructor/x")).toEqual({ model: "constructor/x" });
    const resolved = await resolverWith({ ANTHROPIC_API_KEY: "k" }).resolve({
      model: "anthropic/claude-opus-4-1",
    });
    expect(resolved).toMatchObject({ provider: "anthropic", model: "claude-opus-4-1" });
  });

  it("an AI SDK model object is used as is", async () => {
    const model = answeringModel("x", { modelId: "my-model" });
    expect(isLanguageModelObject(model)).toBe(true);
    expect(isLanguageModelObject("gpt-4o")).toBe(false);
    expect(isLanguageModelObject({ specificationVersion: "v3" })).toBe(false);
    const resolved = await resolverWith({}).resolve({ provider: "openai", model });
    expect(resolved).toEqual({ provider: "mock", model: "my-model", languageModel: model });
  });

  it("custom providers resolve by name, as functions or AI SDK providers", async () => {
    const model = answeringModel("x", { modelId: "m1" });
    const resolver = resolverWith(
      {},
      { customProviders: { Local: (id) => (id === "m1" ? model : answeringModel(id)) } },
    );
    expect(await resolver.resolve({ provider: "local", model: "m1" })).toEqual({
      provider: "local",
      model: "m1",
      languageModel: model,
    });
    expect((await resolver.resolve({ model: "local/m1" })).languageModel).toBe(model);
    expect(await missingSetting(() => resolver.resolve({ provider: "local" }))).toBe("model");
  });
});

describe("NeuroLink with providers", () => {
  it("a call on an unconfigured provider rejects with ProviderNotConfiguredError", async () => {
    const neurolink = new NeuroLink({ logger: recordingLogger(), env: {} });
    await expect(neurolink.generate({ input: { text: "hi" }, provider: "anthropic" })).rejects.toSatisfy(
      (error: unknown) =>
        ProviderNotConfiguredError.isInstance(error) && error.setting === "ANTHROPIC_API_KEY",
    );
    await expect(neurolink.generate("hi")).rejects.toSatisfy(
      (error: unknown) =>
        ProviderNotConfiguredError.isInstance(error) && error.setting === "LEXGROUND_PROVIDER",
    );
  });

  it("the constructor's model object serves calls that name none; a call's model overrides it", async () => {
    const neurolink = new NeuroLink({ logger: recordingLogger(), env: {}, model: answeringModel("default") });
    expect((await neurolink.generate("hi")).content).toBe("default");
    expect(
      (await neurolink.generate({ input: { text: "hi" }, model: answeringModel("override") })).content,
    ).toBe("override");
  });

  it("bad call options are typed errors naming the field", async () => {
    const neurolink = new NeuroLink({ logger: recordingLogger(), env: {}, model: answeringModel("x") });
    await expect(neurolink.generate({ input: { text: 42 } } as never)).rejects.toMatchObject({
      code: "INVALID_OPTIONS",
      path: "input.text",
    });
    await expect(neurolink.stream({} as never)).rejects.toMatchObject({
      code: "INVALID_OPTIONS",
      path: "input",
    });
    await expect(
      neurolink.generate({ input: { text: "x" }, conversationMessages: "nope" } as never),
    ).rejects.toMatchObject({ path: "conversationMessages" });
  });
});

describe("parseTimeout", () => {
  it("accepts ms numbers and duration strings, rejects the rest with the path", () => {
    expect(parseTimeout(250, "timeout")).toBe(250);
    expect(parseTimeout("250", "timeout")).toBe(250);
    expect(parseTimeout("500ms", "timeout")).toBe(500);
    expect(parseTimeout("1.5s", "timeout")).toBe(1500);
    expect(parseTimeout("2m", "timeout")).toBe(120_000);
    expect(parseTimeout(undefined, "timeout")).toBeUndefined();
    for (const bad of [-1, Number.NaN, "soon", "10 parsecs", {}]) {
      expect(() => parseTimeout(bad, "timeout")).toThrow(/at timeout/);
    }
  });
});
