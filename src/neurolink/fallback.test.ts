import { describe, expect, it } from "vitest";
import type { ResolvedCallOptions } from "./dynamic.js";
import { InvalidOptionsError } from "./errors.js";
import { type AttemptTarget, planAttemptTargets } from "./fallback.js";
import type { LanguageModelObject } from "./types.js";

/** A resolver that splits `provider/model` ids, like the client's. */
const resolver = {
  split(value: string): { provider?: string; model: string } {
    const slash = value.indexOf("/");
    return slash < 0 ? { model: value } : { provider: value.slice(0, slash), model: value.slice(slash + 1) };
  },
};

const languageModel = {
  specificationVersion: "v3",
  provider: "custom",
  modelId: "m",
  doGenerate: async () => {
    throw new Error("not called");
  },
  doStream: async () => {
    throw new Error("not called");
  },
} as unknown as LanguageModelObject;

function plan(resolved: Partial<ResolvedCallOptions>, config = {}, pool?: { plan(): AttemptTarget[] }) {
  return planAttemptTargets(resolved as ResolvedCallOptions, config, resolver, pool);
}

describe("planAttemptTargets: the ordered targets of one call", () => {
  it("puts the call's model first, then the model chain, then the fallback option", () => {
    const targets = plan({
      model: "openai/gpt-a",
      modelChain: ["gpt-b", { provider: "anthropic", model: "claude" }],
      fallbackModel: "gpt-c",
    });
    expect(targets.map((target) => [target.source, target.request])).toEqual([
      ["primary", { model: "openai/gpt-a" }],
      ["model-chain", { provider: "openai", model: "gpt-b" }],
      ["model-chain", { provider: "anthropic", model: "claude" }],
      ["fallback-option", { provider: "openai", model: "gpt-c" }],
    ]);
  });

  it("falls back to the model pool, then to the configured model, when the call names none", () => {
    const pooled: AttemptTarget[] = [{ request: { model: "pool-a" }, source: "model-pool", poolIndex: 0 }];
    expect(plan({}, { model: "configured" }, { plan: () => pooled })).toEqual(pooled);
    expect(plan({}, { model: "configured" })).toEqual([
      { request: { model: "configured" }, source: "primary" },
    ]);
    expect(plan({}, { model: languageModel })).toEqual([
      { request: { model: languageModel }, source: "primary" },
    ]);
  });

  it("keeps only the first target when internal fallback is disabled", () => {
    const targets = plan({
      model: "a",
      modelChain: ["b"],
      fallbackModel: "c",
      disableInternalFallback: true,
    });
    expect(targets).toEqual([{ request: { model: "a" }, source: "primary" }]);
  });

  it("names a malformed chain entry, from the call or from the configuration", () => {
    const fromCall = () => plan({ model: "a", modelChain: ["b", 7 as unknown as string] });
    expect(fromCall).toThrow(InvalidOptionsError);
    expect(fromCall).toThrow(/modelChain\[1\]/);
    const fromConfig = () => plan({ model: "a" }, { modelChain: "b" });
    expect(fromConfig).toThrow(/must be an array \(at config\.modelChain\)/);
  });
});
