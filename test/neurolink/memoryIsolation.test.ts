/**
 * Conversation memory isolation (issue 11, item 1): no two distinct (userId, sessionId) pairs ever share a
 * history, in the in-memory store, in the Redis store on a real server, and through the client. Ids are hostile on
 * purpose: NUL, the separators of earlier key formats (`:`, braces, `%`), escape look-alikes (`%u`, `%3A`), line
 * separators, lone surrogates and astral characters, user ids absent, empty or present.
 *
 * `npm run fuzz` runs the properties with many more pairs (LEXGROUND_PROPERTY_RUNS); replay with LEXGROUND_SEED.
 * Without a redis-server binary the Redis part is skipped with a notice (a failure under LEXGROUND_REQUIRE_REDIS=1).
 */
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type ChatMessage,
  type ConversationMemoryStore,
  type ConversationSessionKey,
  InMemoryConversationStore,
  InvalidOptionsError,
  NeuroLink,
  RedisConversationMemoryStore,
} from "../../src/neurolink/index.js";
import { propertyRuns, propertySeed } from "../property/seed.js";
import { recordingLogger } from "./support/fixtures.js";
import { expectNoLeakedHandles } from "./support/handles.js";
import { answeringModel, turnsOf } from "./support/models.js";
import { findRedisServer, type RedisProcess, startRedis } from "./support/redisServer.js";

expectNoLeakedHandles();

const message = (content: string): ChatMessage => ({ role: "user", content });

/** The two collisions of the issue, and neighbours of them built on every separator a key format might use. */
const COLLIDING_PAIRS: ReadonlyArray<readonly [ConversationSessionKey, ConversationSessionKey]> = [
  [{ userId: "alice", sessionId: "s1" }, { sessionId: "alice\u0000s1" }],
  [
    { userId: "b\u0000x", sessionId: "y" },
    { userId: "b", sessionId: "x\u0000y" },
  ],
  [{ userId: "alice", sessionId: "s1" }, { sessionId: "alice:s1" }],
  [
    { userId: "a:b", sessionId: "c" },
    { userId: "a", sessionId: "b:c" },
  ],
  [{ userId: "", sessionId: "s" }, { sessionId: "s" }],
  [{ userId: "", sessionId: "\u0000s" }, { sessionId: "\u0000s" }],
  [{ userId: "u", sessionId: "%3As" }, { sessionId: "u:%3As" }],
  [{ sessionId: "\ud800" }, { sessionId: "\udc00" }],
  [{ sessionId: "\ud800" }, { sessionId: "%uD800" }],
  [{ sessionId: "\ud800" }, { sessionId: "\ufffd" }],
  [
    { userId: "\ud800", sessionId: "x" },
    { userId: "%uD800", sessionId: "x" },
  ],
  [{ userId: "}", sessionId: "{" }, { sessionId: "}:{" }],
];

/** Writes a marker into the first pair and checks the second sees nothing, and the reverse. */
async function expectSeparate(
  store: ConversationMemoryStore,
  first: ConversationSessionKey,
  second: ConversationSessionKey,
): Promise<void> {
  await store.appendMessages(first, [message("first's secret")]);
  expect(await store.getRecentMessages(second, 10)).toEqual([]);
  await store.appendMessages(second, [message("second's note")]);
  expect((await store.getRecentMessages(first, 10)).map((stored) => stored.content)).toEqual([
    "first's secret",
  ]);
  expect((await store.getRecentMessages(second, 10)).map((stored) => stored.content)).toEqual([
    "second's note",
  ]);
  await store.clearSession(second);
  expect(await store.getRecentMessages(first, 10)).toHaveLength(1);
}

/** Pieces that break naive key formats, combined into ids. */
const HOSTILE_PIECES = [
  "\u0000",
  ":",
  "{",
  "}",
  "%",
  "%u",
  "%3A",
  "D800",
  "|",
  "\n",
  "\u2028",
  "\ud800",
  "\udc00",
  "\ud83d\ude00",
  "é",
  "e\u0301",
  "a",
  "b",
  "alice",
  "",
];
const hostileId = fc.oneof(
  fc.array(fc.constantFrom(...HOSTILE_PIECES), { maxLength: 5 }).map((pieces) => pieces.join("")),
  fc.string({ unit: "binary", maxLength: 4 }),
);
const sessionPair = fc.record(
  { userId: fc.option(hostileId, { nil: undefined }), sessionId: hostileId },
  { requiredKeys: ["sessionId"] },
);
const distinctPairs = fc.uniqueArray(sessionPair, {
  minLength: 2,
  maxLength: 8,
  comparator: (a, b) => a.userId === b.userId && a.sessionId === b.sessionId,
});

/** Every pair gets its own marker; each must read back exactly its own, also after another pair is cleared. */
async function checkIsolation(
  store: ConversationMemoryStore,
  pairs: readonly ConversationSessionKey[],
): Promise<void> {
  for (const [index, pair] of pairs.entries()) await store.appendMessages(pair, [message(`m${index}`)]);
  for (const [index, pair] of pairs.entries()) {
    const contents = (await store.getRecentMessages(pair, 10)).map((stored) => stored.content);
    expect(contents, `pair ${index} ${JSON.stringify(pair)}`).toEqual([`m${index}`]);
  }
  await store.clearSession(pairs[0] as ConversationSessionKey);
  for (const [index, pair] of pairs.entries()) {
    expect(await store.getRecentMessages(pair, 10), `pair ${index} after clearing pair 0`).toHaveLength(
      index === 0 ? 0 : 1,
    );
  }
}

describe("in-memory store: distinct (userId, sessionId) pairs never share a history", () => {
  it("the issue's collisions and their neighbours are separate sessions", async () => {
    for (const [first, second] of COLLIDING_PAIRS) {
      await expectSeparate(new InMemoryConversationStore(), first, second);
    }
  });

  it("ids that are not strings are a typed error naming the field", async () => {
    const store = new InMemoryConversationStore();
    const error = await store
      .getRecentMessages({ sessionId: 7 } as unknown as ConversationSessionKey, 5)
      .catch((caught: unknown) => caught);
    expect(InvalidOptionsError.isInstance(error)).toBe(true);
    expect((error as InvalidOptionsError).path).toBe("sessionId");
    await expect(
      store.appendMessages({ sessionId: "s", userId: 1 } as unknown as ConversationSessionKey, []),
    ).rejects.toMatchObject({ path: "userId" });
  });

  it("property: random hostile id pairs never see each other's messages", async () => {
    await fc.assert(
      fc.asyncProperty(distinctPairs, async (pairs) => {
        await checkIsolation(new InMemoryConversationStore({ maxSessions: 100 }), pairs);
      }),
      { seed: propertySeed("memory isolation (in-memory store)"), numRuns: propertyRuns(300) },
    );
  });
});

describe("through the client", () => {
  it("an anonymous caller with sessionId 'alice\\u0000s1' neither reads nor writes alice's s1", async () => {
    const neurolink = new NeuroLink({ logger: recordingLogger(), env: {} });
    const alice = { userId: "alice", sessionId: "s1" };
    await neurolink.generate({
      input: { text: "my card ends 4242" },
      model: answeringModel("noted"),
      context: alice,
    });
    const intruderModel = answeringModel("hello");
    await neurolink.generate({
      input: { text: "what did I say?" },
      model: intruderModel,
      context: { sessionId: "alice\u0000s1" },
    });
    expect(turnsOf(intruderModel.doGenerateCalls[0])).toEqual([{ role: "user", text: "what did I say?" }]);
    expect((await neurolink.getConversationHistory(alice)).map((stored) => stored.content)).toEqual([
      "my card ends 4242",
      "noted",
    ]);
    const mixed = answeringModel("ok");
    await neurolink.generate({
      input: { text: "one" },
      model: mixed,
      context: { userId: "b\u0000x", sessionId: "y" },
    });
    await neurolink.generate({
      input: { text: "two" },
      model: mixed,
      context: { userId: "b", sessionId: "x\u0000y" },
    });
    expect(turnsOf(mixed.doGenerateCalls[1])).toEqual([{ role: "user", text: "two" }]);
    await neurolink.close();
  });
});

const binary = findRedisServer();
const required = process.env.LEXGROUND_REQUIRE_REDIS === "1";
if (!binary && !required) {
  console.warn(
    "[lexground] redis-server not found (set LEXGROUND_REDIS_SERVER or install redis-server): Redis memory isolation tests are SKIPPED",
  );
}
const describeRedis = binary || required ? describe : describe.skip;

describeRedis("Redis store: distinct (userId, sessionId) pairs never share a history", () => {
  let redis: RedisProcess | undefined;
  const stores: RedisConversationMemoryStore[] = [];
  const storeWithPrefix = (keyPrefix: string): RedisConversationMemoryStore => {
    if (!redis) throw new Error("redis-server is required (LEXGROUND_REQUIRE_REDIS=1) but was not found");
    const store = new RedisConversationMemoryStore({ url: redis.url, keyPrefix, commandTimeoutMs: 5000 });
    stores.push(store);
    return store;
  };

  beforeAll(async () => {
    if (binary) redis = await startRedis(binary);
  });
  afterAll(async () => {
    for (const store of stores) await store.close();
    await redis?.stop();
  });

  it("the issue's collisions and their neighbours are separate keys on the server", async () => {
    for (const [index, [first, second]] of COLLIDING_PAIRS.entries()) {
      const store = storeWithPrefix(`examples:${index}:`);
      expect(store.keyFor(first)).not.toBe(store.keyFor(second));
      await expectSeparate(store, first, second);
    }
  });

  it("keys of well-formed ids keep the documented format; a lone surrogate is escaped as %uXXXX", () => {
    const store = storeWithPrefix("lexground:conversation:");
    expect(store.keyFor({ userId: "user-7", sessionId: "shared-session" })).toBe(
      "lexground:conversation:{user-7:shared-session}:messages",
    );
    expect(store.keyFor({ sessionId: "a:b{c}" })).toBe("lexground:conversation:{a%3Ab%7Bc%7D}:messages");
    expect(store.keyFor({ userId: "", sessionId: "s" })).toBe("lexground:conversation:{:s}:messages");
    expect(store.keyFor({ sessionId: "x\ud800y\ud83d\ude00" })).toBe(
      "lexground:conversation:{x%uD800y%F0%9F%98%80}:messages",
    );
  });

  it("property: random hostile id pairs never see each other's messages on a real server", async () => {
    let run = 0;
    await fc.assert(
      fc.asyncProperty(distinctPairs, async (pairs) => {
        run += 1;
        const store = storeWithPrefix(`property:${run}:`);
        await checkIsolation(store, pairs);
        await store.close();
      }),
      { seed: propertySeed("memory isolation (Redis store)"), numRuns: propertyRuns(40) },
    );
  });
});
