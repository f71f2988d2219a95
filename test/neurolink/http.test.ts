/**
 * The real wire path: the `openai-compatible` provider (as used for Ollama, vLLM and LM Studio) against a local
 * chat-completions server speaking JSON and SSE, with failures injected per model.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import {
  AllAttemptsFailedError,
  GenerateTimeoutError,
  NeuroLink,
  NeuroLinkError,
  type NeurolinkConstructorConfig,
  ProviderCallError,
  ProviderNotConfiguredError,
  StreamIdleTimeoutError,
  StreamInterruptedError,
} from "../../src/neurolink/index.js";
import { GROUNDED_QUERY, recordingLogger, SCOPE, SOURCES } from "./support/fixtures.js";
import { expectNoLeakedHandles } from "./support/handles.js";
import { drain, drainUntilError } from "./support/models.js";
import {
  type OpenAICompatibleTestServer,
  startOpenAICompatibleServer,
} from "./support/openaiCompatibleServer.js";

expectNoLeakedHandles();

let server: OpenAICompatibleTestServer;

beforeAll(async () => {
  server = await startOpenAICompatibleServer();
});

afterAll(async () => {
  await server.close();
});

afterEach(() => {
  server.requests.length = 0;
  server.clientClosed.length = 0;
});

function client(extra: Partial<NeurolinkConstructorConfig> = {}): NeuroLink {
  return new NeuroLink({
    knowledgeGrounding: { enabled: true, sources: SOURCES },
    logger: recordingLogger(),
    env: { OPENAI_COMPATIBLE_BASE_URL: server.baseURL },
    provider: "openai-compatible",
    ...extra,
  });
}

const GROUNDED = {
  input: { text: GROUNDED_QUERY },
  systemPrompt: "You are support.",
  useKnowledgeGrounding: true,
  knowledgeContext: SCOPE,
} as const;

function activeTimers(): number {
  return process.getActiveResourcesInfo().filter((resource) => resource === "Timeout").length;
}

function systemMessages(): string[] {
  return server.requests.map((request) =>
    String(request.messages.find((message) => message.role === "system")?.content),
  );
}

describe("openai-compatible over HTTP", () => {
  it("generate: grounded system message on the wire, content and usage back", async () => {
    server.script("good", { kind: "text", text: "Enable it under Settings." });
    const result = await client().generate({ ...GROUNDED, model: "good" });
    expect(result).toMatchObject({
      content: "Enable it under Settings.",
      provider: "openai-compatible",
      model: "good",
      usage: { input: 11, output: 7, total: 18 },
      finishReason: "stop",
    });
    expect(server.requests).toHaveLength(1);
    const [system] = systemMessages();
    expect(system?.startsWith("You are support.\n\n<knowledge_context>")).toBe(true);
    expect(system).toContain("[KB:settings.multi-step-flow@1]");
    expect(server.requests[0]?.messages.at(-1)).toEqual({ role: "user", content: GROUNDED_QUERY });
    expect(result.knowledge?.selectedIds).toContain("settings.multi-step-flow");
  });

  it("stream: SSE chunks arrive in order; the final result carries usage", async () => {
    server.script("good", { kind: "text", text: "one two three", chunks: ["one ", "two ", "three"] });
    const result = await client().stream({ ...GROUNDED, model: "good" });
    const chunks: string[] = [];
    for await (const chunk of result.stream) chunks.push(chunk.content);
    expect(chunks).toEqual(["one ", "two ", "three"]);
    const final = await result.result;
    expect(final).toMatchObject({ content: "one two three", usage: { input: 11, output: 7, total: 18 } });
    expect(server.requests[0]?.stream).toBe(true);
  });

  it("pre-first-chunk HTTP 500 falls back to the next model with the identical grounded prompt", async () => {
    server.script("broken", { kind: "error", status: 500, message: "model crashed" });
    server.script("good", { kind: "text", text: "fallback answer" });
    const result = await client().stream({ ...GROUNDED, model: "broken", modelChain: ["good"] });
    expect(await drain(result.stream)).toBe("fallback answer");
    expect(server.requests.map((request) => request.model)).toEqual(["broken", "good"]);
    const [first, second] = systemMessages();
    expect(first).toBe(second);
    expect(first?.split("<knowledge_context>").length).toBe(2);
    expect(result.attempts[0]?.errorMessage).toContain("model crashed");
  });

  it("generate: HTTP 429 falls back", async () => {
    server.script("limited", { kind: "error", status: 429, message: "slow down" });
    server.script("good", { kind: "text", text: "served" });
    const result = await client().generate({ ...GROUNDED, model: "limited", modelChain: ["good"] });
    expect(result.content).toBe("served");
    expect(result.attempts.map((attempt) => attempt.outcome)).toEqual(["failure", "success"]);
  });

  it("an empty SSE stream falls back", async () => {
    server.script("silent", { kind: "empty" });
    server.script("good", { kind: "text", text: "not silent" });
    const result = await client().stream({ ...GROUNDED, model: "silent", modelChain: ["good"] });
    expect(await drain(result.stream)).toBe("not silent");
    expect(result.attempts[0]?.phase).toBe("empty-output");
  });

  it("a stalled SSE stream hits the first-content deadline, its connection is closed, and the next model answers", async () => {
    server.script("wedged", { kind: "stall" });
    server.script("good", { kind: "text", text: "quick answer" });
    const result = await client().stream({
      ...GROUNDED,
      model: "wedged",
      modelChain: ["good"],
      // The deadline covers the fallback attempt too, whose cold first request on a loaded machine can take
      // several hundred ms: generous enough for it, still far below the stalled model's forever.
      firstContentTimeoutMs: 1500,
    });
    expect(await drain(result.stream)).toBe("quick answer");
    expect(result.attempts[0]?.errorMessage).toContain("No content received within 1500ms");
    // The cancelled attempt tears its HTTP request down.
    await expect.poll(() => server.clientClosed).toContain("wedged");
  });

  it("a connection dropped after content ends the stream with StreamInterruptedError; no second request", async () => {
    server.script("flaky", { kind: "drop-after", before: ["Partial ", "answer"] });
    server.script("good", { kind: "text", text: "never requested" });
    const result = await client().stream({ ...GROUNDED, model: "flaky", modelChain: ["good"] });
    const { text: received, thrown } = await drainUntilError(result.stream);
    expect(received).toBe("Partial answer");
    expect(StreamInterruptedError.isInstance(thrown)).toBe(true);
    expect(server.requests.map((request) => request.model)).toEqual(["flaky"]);
  });

  it("a stream that goes silent after content is cut by the idle deadline and its connection closed; no fallback", async () => {
    server.script("hangs", { kind: "stall-after", before: ["Partial ", "answer"] });
    server.script("good", { kind: "text", text: "never requested" });
    const result = await client().stream({
      ...GROUNDED,
      model: "hangs",
      modelChain: ["good"],
      streamIdleTimeoutMs: 150,
    });
    const { text: received, thrown } = await drainUntilError(result.stream);
    expect(received).toBe("Partial answer");
    expect(StreamInterruptedError.isInstance(thrown)).toBe(true);
    expect(StreamIdleTimeoutError.isInstance((thrown as StreamInterruptedError).cause)).toBe(true);
    expect(server.requests.map((request) => request.model)).toEqual(["hangs"]);
    await expect.poll(() => server.clientClosed).toContain("hangs");
  });

  it("every model failing gives one aggregated error", async () => {
    server.script("down-1", { kind: "error", status: 503 });
    server.script("down-2", { kind: "error", status: 502 });
    const error = await client()
      .generate({ ...GROUNDED, model: "down-1", modelChain: ["down-2"] })
      .catch((caught: unknown) => caught);
    expect(AllAttemptsFailedError.isInstance(error)).toBe(true);
    expect((error as AllAttemptsFailedError).attempts.map((attempt) => attempt.model)).toEqual([
      "down-1",
      "down-2",
    ]);
  });

  it("single target: an SSE error event rejects stream() with a typed error whose cause is the provider's error", async () => {
    server.script("overloaded", { kind: "sse-error", message: "model overloaded" });
    const error = await client()
      .stream({ ...GROUNDED, model: "overloaded" })
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(Error);
    expect(NeuroLinkError.isInstance(error)).toBe(true);
    expect(ProviderCallError.isInstance(error)).toBe(true);
    const typed = error as ProviderCallError;
    expect(typed).toMatchObject({
      code: "PROVIDER_ERROR",
      provider: "openai-compatible",
      model: "overloaded",
      phase: "before-first-content",
    });
    expect(typed.cause).toMatchObject({ message: "model overloaded", code: "overloaded" });
    expect(typed.message).toContain("model overloaded");
    expect(typed.attempts).toHaveLength(1);
    expect(typed.attempts[0]?.error).toBe(typed.cause);
  });

  it("single target: an HTTP failure rejects generate() with a typed error carrying the status, the provider error as cause", async () => {
    server.script("crashing", { kind: "error", status: 500, message: "model crashed" });
    const error = await client()
      .generate({ ...GROUNDED, model: "crashing" })
      .catch((caught: unknown) => caught);
    expect(ProviderCallError.isInstance(error)).toBe(true);
    const typed = error as ProviderCallError;
    expect(typed).toMatchObject({
      code: "PROVIDER_ERROR",
      model: "crashing",
      phase: "generate",
      statusCode: 500,
    });
    expect(typed.cause).toBeInstanceOf(Error);
    expect((typed.cause as Error).message).toContain("model crashed");
    expect(typed.message).toContain("openai-compatible/crashing");
  });

  it("several targets: SSE errors still fall back, and all failing is still one aggregated error with each provider error", async () => {
    server.script("overloaded-1", { kind: "sse-error", message: "first overloaded" });
    server.script("overloaded-2", { kind: "sse-error", message: "second overloaded" });
    server.script("good", { kind: "text", text: "recovered" });
    const recovered = await client().stream({ ...GROUNDED, model: "overloaded-1", modelChain: ["good"] });
    expect(await drain(recovered.stream)).toBe("recovered");
    const error = await client()
      .stream({ ...GROUNDED, model: "overloaded-1", modelChain: ["overloaded-2"] })
      .catch((caught: unknown) => caught);
    expect(AllAttemptsFailedError.isInstance(error)).toBe(true);
    const aggregated = error as AllAttemptsFailedError;
    expect(aggregated.errors).toMatchObject([
      { message: "first overloaded" },
      { message: "second overloaded" },
    ]);
    expect(aggregated.cause).toBe(aggregated.errors[1]);
  });

  it("generate: a server trickling a byte every 100 ms is cut by the generate deadline, its request aborted, timers cleared", async () => {
    server.script("trickling", { kind: "trickle", intervalMs: 100 });
    const timersBefore = activeTimers();
    const error = await client()
      .generate({ ...GROUNDED, model: "trickling", generateTimeoutMs: 700 })
      .catch((caught: unknown) => caught);
    expect(GenerateTimeoutError.isInstance(error)).toBe(true);
    expect(error).toMatchObject({ code: "GENERATE_TIMEOUT", timeoutMs: 700 });
    // The connection was never idle: bytes kept arriving until the deadline.
    expect(server.trickledBytes.get("trickling")).toBeGreaterThan(0);
    await expect.poll(() => server.clientClosed).toContain("trickling");
    await expect.poll(activeTimers).toBe(timersBefore);
  });

  it("generate: the instance's generateTimeoutMs applies to every attempt, and a trickling target falls back", async () => {
    server.script("trickling", { kind: "trickle", intervalMs: 100 });
    server.script("good", { kind: "text", text: "on time" });
    // Also the deadline of the fallback attempt: generous for a loaded machine.
    const result = await client({ generateTimeoutMs: 1500 }).generate({
      ...GROUNDED,
      model: "trickling",
      modelChain: ["good"],
    });
    expect(result.content).toBe("on time");
    expect(result.attempts[0]).toMatchObject({ outcome: "failure", model: "trickling" });
    expect(result.attempts[0]?.errorMessage).toContain("within 1500ms");
    await expect.poll(() => server.clientClosed).toContain("trickling");
  });

  it("the ollama preset accepts a root URL and talks to /v1/chat/completions", async () => {
    server.script("llama3.2:3b", { kind: "text", text: "local answer" });
    const neurolink = new NeuroLink({ logger: recordingLogger(), env: { OLLAMA_BASE_URL: server.rootURL } });
    const result = await neurolink.generate({
      input: { text: "hi" },
      provider: "ollama",
      model: "llama3.2:3b",
    });
    expect(result).toMatchObject({ content: "local answer", provider: "ollama", model: "llama3.2:3b" });
    expect(server.requests[0]?.path).toBe("/v1/chat/completions");
  });

  it("a missing base URL fails before any request, naming the setting", async () => {
    const neurolink = new NeuroLink({ logger: recordingLogger(), env: {} });
    const error = await neurolink
      .generate({ input: { text: "hi" }, provider: "openai-compatible", model: "good" })
      .catch((caught: unknown) => caught);
    expect(ProviderNotConfiguredError.isInstance(error)).toBe(true);
    expect((error as ProviderNotConfiguredError).setting).toBe("OPENAI_COMPATIBLE_BASE_URL");
    expect(server.requests).toHaveLength(0);
  });
});
