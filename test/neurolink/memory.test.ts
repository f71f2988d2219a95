/** Conversation memory on the in-memory store and through the client: bounds, scoping, switches, fail-open. */
import { describe, expect, it } from "vitest";
import {
  type ChatMessage,
  type ConversationMemoryStore,
  InMemoryConversationStore,
  MEMORY_EVICTION_WARNING,
  type MemoryEvictionDetails,
  type MemoryStoreStatus,
  NeuroLink,
  type NeuroLinkEvents,
} from "../../src/neurolink/index.js";
import { recordingLogger } from "./support/fixtures.js";
import { expectNoLeakedHandles } from "./support/handles.js";
import { answeringModel, turnsOf } from "./support/models.js";

expectNoLeakedHandles();

const message = (role: ChatMessage["role"], content: string): ChatMessage => ({ role, content });

describe("InMemoryConversationStore", () => {
  it("keeps the most recent messages per session and the most recently used sessions", async () => {
    const store = new InMemoryConversationStore({ maxSessions: 2, maxMessagesPerSession: 3 });
    await store.appendMessages({ sessionId: "a" }, [message("user", "1"), message("assistant", "2")]);
    await store.appendMessages({ sessionId: "a" }, [message("user", "3"), message("assistant", "4")]);
    expect((await store.getRecentMessages({ sessionId: "a" }, 10)).map((m) => m.content)).toEqual([
      "2",
      "3",
      "4",
    ]);
    expect((await store.getRecentMessages({ sessionId: "a" }, 2)).map((m) => m.content)).toEqual(["3", "4"]);
    await store.appendMessages({ sessionId: "b" }, [message("user", "b")]);
    await store.getRecentMessages({ sessionId: "a" }, 1); // a becomes the most recent
    await store.appendMessages({ sessionId: "c" }, [message("user", "c")]);
    expect(store.sessionCount).toBe(2);
    expect(await store.getRecentMessages({ sessionId: "b" }, 10)).toEqual([]);
    expect(await store.getRecentMessages({ sessionId: "a" }, 10)).toHaveLength(3);
  });

  it("scopes sessions by user, copies what it stores, and clears", async () => {
    const store = new InMemoryConversationStore();
    const input = message("user", "mine");
    await store.appendMessages({ sessionId: "s", userId: "u1" }, [input]);
    input.content = "mutated";
    expect(await store.getRecentMessages({ sessionId: "s", userId: "u2" }, 10)).toEqual([]);
    expect(await store.getRecentMessages({ sessionId: "s" }, 10)).toEqual([]);
    expect((await store.getRecentMessages({ sessionId: "s", userId: "u1" }, 10))[0]?.content).toBe("mine");
    await store.clearSession({ sessionId: "s", userId: "u1" });
    expect(await store.getRecentMessages({ sessionId: "s", userId: "u1" }, 10)).toEqual([]);
    expect(store.getStatus().state).toBe("ok");
  });

  it("an eviction is reported to listeners and counted in the status, never silent", async () => {
    const store = new InMemoryConversationStore({ maxSessions: 2 });
    const evicted: MemoryEvictionDetails[] = [];
    store.addEvictionListener((details) => evicted.push(details));
    store.addEvictionListener(() => {
      throw new Error("a broken listener");
    });
    await store.appendMessages({ sessionId: "a", userId: "u" }, [message("user", "1")]);
    await store.appendMessages({ sessionId: "b" }, [message("user", "2")]);
    await store.appendMessages({ sessionId: "b" }, [message("user", "3")]);
    expect(evicted).toEqual([]);
    await store.appendMessages({ sessionId: "c" }, [message("user", "4")]);
    await store.appendMessages({ sessionId: "d" }, [message("user", "5")]);
    expect(evicted).toEqual([
      { session: { sessionId: "a", userId: "u" }, reason: "max-sessions", evictionCount: 1 },
      { session: { sessionId: "b" }, reason: "max-sessions", evictionCount: 2 },
    ]);
    expect(store.getStatus()).toMatchObject({
      state: "ok",
      evictionCount: 2,
      details: { sessions: 2, maxSessions: 2 },
    });
  });

  it("session ids such as __proto__ are ordinary keys", async () => {
    const store = new InMemoryConversationStore();
    await store.appendMessages({ sessionId: "__proto__" }, [message("user", "x")]);
    expect(await store.getRecentMessages({ sessionId: "__proto__" }, 5)).toHaveLength(1);
    expect(await store.getRecentMessages({ sessionId: "constructor" }, 5)).toEqual([]);
  });
});

describe("memory through the client", () => {
  it("is on by default: turns of a session are stored and read into the next prompt", async () => {
    const neurolink = new NeuroLink({ logger: recordingLogger(), env: {} });
    const model = answeringModel("hi there");
    const context = { sessionId: "default-on" };
    await neurolink.generate({ input: { text: "hello" }, model, context });
    await neurolink.generate({ input: { text: "again" }, model, context });
    expect(turnsOf(model.doGenerateCalls[1])).toEqual([
      { role: "user", text: "hello" },
      { role: "assistant", text: "hi there" },
      { role: "user", text: "again" },
    ]);
    expect(neurolink.getMemoryStatus()).toMatchObject({ enabled: true, store: "memory", state: "ok" });
  });

  it("the default store holds 50 sessions; the 51st evicts the least recently used with an event, a count and one warning", async () => {
    const logger = recordingLogger();
    const neurolink = new NeuroLink({ logger, env: {} });
    const events: Array<NeuroLinkEvents["memory:evicted"]> = [];
    neurolink.on("memory:evicted", (event) => events.push(event));
    const model = answeringModel("a");
    const alice = { sessionId: "history", userId: "alice" };
    await neurolink.generate({ input: { text: "remember this" }, model, context: alice });
    for (let index = 0; index < 49; index++) {
      await neurolink.generate({ input: { text: "x" }, model, context: { sessionId: `fresh-${index}` } });
    }
    expect(events).toEqual([]);
    expect(neurolink.getMemoryStatus()).toMatchObject({ evictionCount: 0, details: { sessions: 50 } });
    await neurolink.generate({ input: { text: "x" }, model, context: { sessionId: "fresh-49" } });
    await neurolink.generate({ input: { text: "x" }, model, context: { sessionId: "fresh-50" } });
    expect(events).toEqual([
      { store: "memory", sessionId: "history", userId: "alice", reason: "max-sessions", evictionCount: 1 },
      { store: "memory", sessionId: "fresh-0", reason: "max-sessions", evictionCount: 2 },
    ]);
    expect(await neurolink.getConversationHistory(alice)).toEqual([]);
    expect(neurolink.getMemoryStatus()).toMatchObject({
      state: "ok",
      evictionCount: 2,
      details: { sessions: 50, maxSessions: 50 },
    });
    expect(logger.warnings).toEqual([[MEMORY_EVICTION_WARNING]]);
  });

  it("calls without a session id neither read nor store", async () => {
    const neurolink = new NeuroLink({ logger: recordingLogger(), env: {} });
    const model = answeringModel("x");
    await neurolink.generate({ input: { text: "one" }, model });
    await neurolink.generate({ input: { text: "two" }, model });
    expect(turnsOf(model.doGenerateCalls[1])).toEqual([{ role: "user", text: "two" }]);
  });

  it("maxTurnsPerSession bounds what is kept and read", async () => {
    const neurolink = new NeuroLink({
      logger: recordingLogger(),
      env: {},
      conversationMemory: { maxTurnsPerSession: 2 },
    });
    const model = answeringModel("a");
    const context = { sessionId: "bounded" };
    for (let turn = 1; turn <= 4; turn++)
      await neurolink.generate({ input: { text: `q${turn}` }, model, context });
    expect(turnsOf(model.doGenerateCalls[3]).map((turn) => turn.text)).toEqual(["q2", "a", "q3", "a", "q4"]);
    expect(await neurolink.getConversationHistory(context)).toHaveLength(4);
  });

  it("per-call switches: memory.read false skips the read, memory.write false skips the write", async () => {
    const neurolink = new NeuroLink({ logger: recordingLogger(), env: {} });
    const model = answeringModel("a");
    const context = { sessionId: "switches" };
    await neurolink.generate({ input: { text: "kept" }, model, context });
    await neurolink.generate({
      input: { text: "unread" },
      model,
      context,
      memory: { read: false, write: false },
    });
    expect(turnsOf(model.doGenerateCalls[1])).toEqual([{ role: "user", text: "unread" }]);
    expect((await neurolink.getConversationHistory(context)).map((m) => m.content)).toEqual(["kept", "a"]);
  });

  it("conversationMessages replace memory for the prompt; the turn is still stored", async () => {
    const neurolink = new NeuroLink({ logger: recordingLogger(), env: {} });
    const model = answeringModel("a");
    const context = { sessionId: "explicit" };
    await neurolink.generate({ input: { text: "stored" }, model, context });
    await neurolink.generate({
      input: { text: "now" },
      model,
      context,
      conversationMessages: [
        message("user", "given"),
        message("system", "ignored"),
        message("assistant", ""),
      ],
    });
    expect(turnsOf(model.doGenerateCalls[1])).toEqual([
      { role: "user", text: "given" },
      { role: "user", text: "now" },
    ]);
    expect(await neurolink.getConversationHistory(context)).toHaveLength(4);
  });

  it("conversationMemory.enabled false turns memory off", async () => {
    const neurolink = new NeuroLink({
      logger: recordingLogger(),
      env: {},
      conversationMemory: { enabled: false },
    });
    const model = answeringModel("a");
    await neurolink.generate({ input: { text: "one" }, model, context: { sessionId: "off" } });
    await neurolink.generate({ input: { text: "two" }, model, context: { sessionId: "off" } });
    expect(turnsOf(model.doGenerateCalls[1])).toEqual([{ role: "user", text: "two" }]);
    expect(neurolink.getMemoryStatus()).toEqual({
      enabled: false,
      store: null,
      state: "disabled",
      lastError: null,
      lastErrorAt: null,
    });
  });

  it("a failing store: reads fail open, write failures reach the host as an event and a result field", async () => {
    const status: MemoryStoreStatus = { state: "ok", lastError: null, lastErrorAt: null, resetCount: 0 };
    const broken: ConversationMemoryStore = {
      kind: "broken",
      getRecentMessages: async () => {
        status.state = "degraded";
        throw new Error("read exploded");
      },
      appendMessages: async () => {
        throw new Error("write exploded");
      },
      clearSession: async () => {},
      getStatus: () => status,
      close: async () => {},
    };
    const neurolink = new NeuroLink({
      logger: recordingLogger(),
      env: {},
      conversationMemory: { store: broken },
    });
    const events: Array<NeuroLinkEvents["memory:error"]> = [];
    neurolink.on("memory:error", (event) => events.push(event));
    const streamed = await neurolink.stream({
      input: { text: "hello" },
      model: answeringModel("fine"),
      context: { sessionId: "s" },
    });
    for await (const _chunk of streamed.stream) {
      // drain
    }
    const final = await streamed.result;
    expect(final.content).toBe("fine");
    expect(final.memoryWriteError).toEqual({
      sessionId: "s",
      code: "MEMORY_UNAVAILABLE",
      message: "write exploded",
    });
    expect(events.map((event) => [event.operation, (event.error as Error).message])).toEqual([
      ["read", "read exploded"],
      ["write", "write exploded"],
    ]);
    expect(neurolink.getMemoryStatus()).toMatchObject({ store: "broken", state: "degraded" });
  });
});
