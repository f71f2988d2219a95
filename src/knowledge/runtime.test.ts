import { runInNewContext } from "node:vm";
import { afterEach, describe, expect, it, vi } from "vitest";
import { isUint8Array, nodeBuiltin, readFileBytes, yieldToEventLoop } from "./runtime.js";

describe("host facilities without node: imports", () => {
  afterEach(() => vi.unstubAllGlobals());

  it("yields through a message channel where there is no setImmediate (browsers, workers)", async () => {
    vi.stubGlobal("setImmediate", undefined);
    const order: string[] = [];
    const yielded = yieldToEventLoop().then(() => order.push("yielded"));
    order.push("sync");
    await yielded;
    expect(order).toEqual(["sync", "yielded"]);
  });

  it("falls back to setTimeout where there is neither", async () => {
    vi.stubGlobal("setImmediate", undefined);
    vi.stubGlobal("MessageChannel", undefined);
    await expect(yieldToEventLoop()).resolves.toBeUndefined();
  });

  it("finds Node built-ins through process.getBuiltinModule, and nothing elsewhere", () => {
    expect(nodeBuiltin<{ createHash: unknown }>("node:crypto")?.createHash).toBeTypeOf("function");
    vi.stubGlobal("process", undefined);
    expect(nodeBuiltin("node:crypto")).toBeUndefined();
  });

  it("reads a file path only in Node, and says to pass bytes elsewhere", async () => {
    vi.stubGlobal("process", { getBuiltinModule: () => undefined });
    await expect(readFileBytes("/srv/knowledge.lxg")).rejects.toThrow(
      /\/srv\/knowledge\.lxg.*needs Node's file system.*pass the artifact's bytes/,
    );
  });

  it("recognizes a Uint8Array from any realm, a Buffer included, and not an impostor", () => {
    expect(isUint8Array(new Uint8Array(2))).toBe(true);
    expect(isUint8Array(Buffer.from("x"))).toBe(true);
    expect(isUint8Array(runInNewContext("new Uint8Array(3)"))).toBe(true);
    expect(isUint8Array(new Uint16Array(2))).toBe(false);
    expect(isUint8Array({ [Symbol.toStringTag]: "Uint8Array", length: 0 })).toBe(false);
    expect(isUint8Array(Object.create(Uint8Array.prototype))).toBe(false);
    expect(isUint8Array(null)).toBe(false);
    expect(isUint8Array("bytes")).toBe(false);
  });
});
