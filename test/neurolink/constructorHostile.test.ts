import { describe, expect, it } from "vitest";
import { InvalidOptionsError, NeuroLink } from "../../src/neurolink/index.js";

/** A config whose `field` getter throws, as a careless or hostile host object might. */
function configWithThrowingGetter(field: string): Record<string, unknown> {
  const config: Record<string, unknown> = {};
  Object.defineProperty(config, field, {
    enumerable: true,
    get() {
      throw new TypeError(`${field} exploded`);
    },
  });
  return config;
}

describe("NeuroLink constructor with unreadable client options", () => {
  for (const field of [
    "provider",
    "providers",
    "env",
    "customProviders",
    "modelPool",
    "conversationMemory",
  ]) {
    it(`a throwing ${field} getter is a typed InvalidOptionsError, not a raw TypeError`, () => {
      let thrown: unknown;
      try {
        new NeuroLink(configWithThrowingGetter(field));
      } catch (error) {
        thrown = error;
      }
      expect(thrown).toBeDefined();
      expect(InvalidOptionsError.isInstance(thrown)).toBe(true);
      expect((thrown as InvalidOptionsError).code).toBe("INVALID_OPTIONS");
      expect((thrown as Error).message).toContain(`${field} exploded`);
    });
  }

  it("a revoked proxy as conversationMemory is a typed error", () => {
    const { proxy, revoke } = Proxy.revocable({}, {});
    revoke();
    expect(() => new NeuroLink({ conversationMemory: proxy })).toThrow(InvalidOptionsError);
  });

  it("typed option errors raised inside keep their own path", () => {
    expect(() => new NeuroLink({ modelPool: { members: "x" } as never })).toThrow(/modelPool\.members/);
  });
});
