import { describe, expect, it } from "vitest";
import { GroundingIntegrationError, resolveEngine } from "../../src/integrations/engine.js";

describe("resolveEngine with unreadable options", () => {
  it("a revoked proxy as the options is a typed GroundingIntegrationError", () => {
    const { proxy, revoke } = Proxy.revocable({}, {});
    revoke();
    expect(() => resolveEngine(proxy)).toThrow(GroundingIntegrationError);
  });

  it("a throwing engine or config getter is a typed GroundingIntegrationError naming the options", () => {
    for (const field of ["engine", "config"]) {
      const options = {};
      Object.defineProperty(options, field, {
        enumerable: true,
        get() {
          throw new TypeError(`${field} exploded`);
        },
      });
      expect(() => resolveEngine(options)).toThrow(/options could not be read: .*exploded/);
    }
  });

  it("a revoked proxy as the engine is a typed GroundingIntegrationError", () => {
    const { proxy, revoke } = Proxy.revocable({}, {});
    revoke();
    expect(() => resolveEngine({ engine: proxy })).toThrow(GroundingIntegrationError);
  });
});
