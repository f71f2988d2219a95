/**
 * Timer options of the client at and past Node's timer limit (issue 11, item 10). Node sets a `setTimeout` delay of
 * 2^31 ms or more to 1 ms (with a TimeoutOverflowWarning), so a "very long" deadline used to fire at once. Every
 * client timer option (firstContentTimeoutMs, streamIdleTimeoutMs, generateTimeoutMs, timeout, and the Redis
 * store's commandTimeoutMs, connectTimeoutMs, maxReconnectDelayMs) must treat such a value as a long deadline; values
 * that are no duration at all (NaN, negative) are a configuration error naming the option.
 */
import type { LanguageModelV3StreamPart } from "@ai-sdk/provider";
import { MockLanguageModelV3 } from "ai/test";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { InvalidOptionsError, NeuroLink, RedisConversationMemoryStore } from "../../src/neurolink/index.js";
import { recordingLogger } from "./support/fixtures.js";
import { expectNoLeakedHandles } from "./support/handles.js";
import { drain, generateResult, USAGE } from "./support/models.js";
import { findRedisServer, startRedis } from "./support/redisServer.js";

expectNoLeakedHandles();

const BEYOND_TIMER_LIMIT = 2 ** 31;
const FAR_BEYOND = 2 ** 40;

/** TimeoutOverflowWarnings seen during a test: Node's own report of a delay it turned into 1 ms. */
let overflowWarnings: string[] = [];
const onWarning = (warning: Error): void => {
  if (warning.name === "TimeoutOverflowWarning") overflowWarnings.push(warning.message);
};
beforeEach(() => {
  overflowWarnings = [];
  process.on("warning", onWarning);
});
afterEach(() => {
  process.off("warning", onWarning);
});

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Answers after 40 ms, and streams two chunks 40 ms apart after a 40 ms wait: slower than a 1 ms timer. */
function unhurriedModel() {
  return new MockLanguageModelV3({
    provider: "mock",
    modelId: "unhurried",
    doGenerate: async () => {
      await pause(40);
      return generateResult("complete answer");
    },
    doStream: async () => ({
      stream: new ReadableStream<LanguageModelV3StreamPart>({
        async start(controller) {
          controller.enqueue({ type: "stream-start", warnings: [] });
          await pause(40);
          controller.enqueue({ type: "text-start", id: "t1" });
          controller.enqueue({ type: "text-delta", id: "t1", delta: "first " });
          await pause(40);
          controller.enqueue({ type: "text-delta", id: "t1", delta: "second" });
          controller.enqueue({ type: "text-end", id: "t1" });
          controller.enqueue({
            type: "finish",
            finishReason: { unified: "stop", raw: "stop" },
            usage: USAGE,
          });
          controller.close();
        },
      }),
    }),
  });
}

describe("client deadlines at and past 2^31 ms are long deadlines, not 1 ms", () => {
  it("per call: firstContentTimeoutMs, streamIdleTimeoutMs, timeout and generateTimeoutMs", async () => {
    const neurolink = new NeuroLink({ logger: recordingLogger(), env: {} });
    const streamed = await neurolink.stream({
      input: { text: "q" },
      model: unhurriedModel(),
      firstContentTimeoutMs: BEYOND_TIMER_LIMIT,
      streamIdleTimeoutMs: FAR_BEYOND,
      timeout: BEYOND_TIMER_LIMIT + 1,
    });
    expect(await drain(streamed.stream)).toBe("first second");
    const generated = await neurolink.generate({
      input: { text: "q" },
      model: unhurriedModel(),
      generateTimeoutMs: FAR_BEYOND,
      timeout: "1000h",
    });
    expect(generated.content).toBe("complete answer");
    expect(overflowWarnings).toEqual([]);
  });

  it("per instance: the same options in the constructor", async () => {
    const neurolink = new NeuroLink({
      logger: recordingLogger(),
      env: {},
      firstContentTimeoutMs: FAR_BEYOND,
      streamIdleTimeoutMs: BEYOND_TIMER_LIMIT,
      generateTimeoutMs: BEYOND_TIMER_LIMIT,
      timeout: Number.MAX_SAFE_INTEGER,
    });
    const streamed = await neurolink.stream({ input: { text: "q" }, model: unhurriedModel() });
    expect(await drain(streamed.stream)).toBe("first second");
    expect((await neurolink.generate({ input: { text: "q" }, model: unhurriedModel() })).content).toBe(
      "complete answer",
    );
    expect(overflowWarnings).toEqual([]);
  });

  it("values that are no duration are a typed error naming the option", async () => {
    const neurolink = new NeuroLink({ logger: recordingLogger(), env: {} });
    for (const [option, value] of [
      ["firstContentTimeoutMs", Number.NaN],
      ["streamIdleTimeoutMs", -1],
      ["timeout", Number.POSITIVE_INFINITY],
    ] as const) {
      const error = await neurolink
        .stream({ input: { text: "q" }, model: unhurriedModel(), [option]: value })
        .catch((caught: unknown) => caught);
      expect(InvalidOptionsError.isInstance(error), option).toBe(true);
      expect((error as InvalidOptionsError).path).toBe(option);
    }
  });
});

const binary = findRedisServer();
const required = process.env.LEXGROUND_REQUIRE_REDIS === "1";
if (!binary && !required) {
  console.warn(
    "[lexground] redis-server not found (set LEXGROUND_REDIS_SERVER or install redis-server): Redis timer-limit tests are SKIPPED",
  );
}
const describeRedis = binary || required ? describe : describe.skip;

describe("Redis store timer options", () => {
  it("NaN, negative or non-number timer options are a configuration error naming the option", () => {
    for (const [option, value] of [
      ["commandTimeoutMs", Number.NaN],
      ["connectTimeoutMs", -5],
      ["maxReconnectDelayMs", "2s"],
      ["ttlSeconds", Number.NaN],
    ] as const) {
      expect(() => new RedisConversationMemoryStore({ [option]: value as never }), option).toThrow(
        expect.objectContaining({ code: "INVALID_OPTIONS", path: option }),
      );
      expect(
        () =>
          new NeuroLink({
            logger: recordingLogger(),
            env: {},
            conversationMemory: { storageType: "redis", redis: { [option]: value as never } },
          }),
        option,
      ).toThrow(expect.objectContaining({ path: `conversationMemory.redis.${option}` }));
    }
  });
});

describeRedis("Redis store timer options on a real server", () => {
  it("commandTimeoutMs, connectTimeoutMs and maxReconnectDelayMs past 2^31 ms are long deadlines", async () => {
    if (!binary) throw new Error("redis-server is required (LEXGROUND_REQUIRE_REDIS=1) but was not found");
    const redis = await startRedis(binary);
    const store = new RedisConversationMemoryStore({
      url: redis.url,
      commandTimeoutMs: BEYOND_TIMER_LIMIT,
      connectTimeoutMs: FAR_BEYOND,
      maxReconnectDelayMs: FAR_BEYOND,
      ttlSeconds: FAR_BEYOND,
    });
    try {
      // The first command also waits for the lazy import and the connection: far longer than 1 ms.
      await store.appendMessages({ sessionId: "long" }, [{ role: "user", content: "kept" }]);
      expect((await store.getRecentMessages({ sessionId: "long" }, 5)).map((m) => m.content)).toEqual([
        "kept",
      ]);
      expect(store.getStatus().state).toBe("ok");
      expect(
        Number((await redis.command("TTL", store.keyFor({ sessionId: "long" }))).slice(1)),
      ).toBeGreaterThan(86_400);
    } finally {
      await store.close();
      await redis.stop();
    }
    expect(overflowWarnings).toEqual([]);
  });
});
