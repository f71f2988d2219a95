/**
 * A small OpenAI-compatible chat-completions server on 127.0.0.1 (port 0) for wire-level tests: JSON replies,
 * SSE streams, HTTP errors, stalls, empty streams and connections dropped mid-stream, chosen per model name.
 * Every request is recorded with its parsed body, and the server notes when a client closed a connection
 * before the reply ended (how a cancelled attempt shows up on the wire).
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/** What the server does for one request. */
export type ScriptedReply =
  /** A normal answer: JSON, or SSE split into `chunks` (default: one chunk per word). */
  | { kind: "text"; text: string; chunks?: string[] }
  /** An HTTP error with an OpenAI-style JSON error body. */
  | { kind: "error"; status: number; message?: string }
  /** Accepts the request (SSE headers sent for streams) and never sends anything else. */
  | { kind: "stall" }
  /** An SSE stream that finishes without any content. */
  | { kind: "empty" }
  /** Streams `before`, then destroys the connection. */
  | { kind: "drop-after"; before: string[] }
  /** Streams `before`, then keeps the connection open and sends nothing more. */
  | { kind: "stall-after"; before: string[] }
  /** HTTP 200 and SSE headers, then one `data: {"error": {...}}` event (a provider failing inside the stream). */
  | { kind: "sse-error"; message: string }
  /**
   * HTTP 200 and headers, then one byte (JSON whitespace, or an SSE comment line) every `intervalMs`, forever:
   * the connection is never idle and the answer never completes.
   */
  | { kind: "trickle"; intervalMs: number };

/** One recorded request. */
export type RecordedRequest = {
  path: string;
  model: string;
  stream: boolean;
  messages: Array<{ role: string; content: unknown }>;
  body: Record<string, unknown>;
  headers: IncomingMessage["headers"];
};

export type OpenAICompatibleTestServer = {
  /** Base URL including `/v1`. */
  baseURL: string;
  /** Base URL without a path (what Ollama users often configure). */
  rootURL: string;
  requests: RecordedRequest[];
  /** Models whose connection the client closed before the reply ended. */
  clientClosed: string[];
  /** Bytes sent so far by `trickle` replies, per model. */
  trickledBytes: Map<string, number>;
  /** Sets the reply for a model; an array is consumed one reply per request (the last one repeats). */
  script: (model: string, reply: ScriptedReply | ScriptedReply[]) => void;
  close: () => Promise<void>;
};

function completionChunk(model: string, delta: Record<string, unknown>, finishReason: string | null): string {
  return `data: ${JSON.stringify({
    id: "chatcmpl-test",
    object: "chat.completion.chunk",
    created: 1_700_000_000,
    model,
    choices: [{ index: 0, delta, finish_reason: finishReason }],
  })}\n\n`;
}

function usageChunk(model: string): string {
  return `data: ${JSON.stringify({
    id: "chatcmpl-test",
    object: "chat.completion.chunk",
    created: 1_700_000_000,
    model,
    choices: [],
    usage: { prompt_tokens: 11, completion_tokens: 7, total_tokens: 18 },
  })}\n\n`;
}

function splitWords(text: string): string[] {
  return text.split(/(?<= )/);
}

async function readBody(request: IncomingMessage): Promise<string> {
  const parts: Buffer[] = [];
  for await (const part of request) parts.push(part as Buffer);
  return Buffer.concat(parts).toString("utf8");
}

/** Starts the server on a free loopback port. */
export async function startOpenAICompatibleServer(): Promise<OpenAICompatibleTestServer> {
  const scripts = new Map<string, ScriptedReply[]>();
  const requests: RecordedRequest[] = [];
  const clientClosed: string[] = [];
  const trickledBytes = new Map<string, number>();
  const open = new Set<ServerResponse>();

  const nextReply = (model: string): ScriptedReply => {
    const queue = scripts.get(model);
    if (!queue || queue.length === 0)
      return { kind: "error", status: 404, message: `unknown model ${model}` };
    return queue.length > 1 ? (queue.shift() as ScriptedReply) : (queue[0] as ScriptedReply);
  };

  const handle = async (request: IncomingMessage, response: ServerResponse): Promise<void> => {
    const path = request.url ?? "";
    if (request.method !== "POST" || !path.endsWith("/chat/completions")) {
      response.writeHead(404, { "content-type": "application/json" });
      response.end(JSON.stringify({ error: { message: `no route ${request.method} ${path}` } }));
      return;
    }
    const body = JSON.parse(await readBody(request)) as Record<string, unknown>;
    const model = String(body.model);
    const stream = body.stream === true;
    requests.push({
      path,
      model,
      stream,
      messages: (body.messages as RecordedRequest["messages"]) ?? [],
      body,
      headers: request.headers,
    });
    const reply = nextReply(model);
    open.add(response);
    let trickle: NodeJS.Timeout | undefined;
    response.on("close", () => {
      clearInterval(trickle);
      open.delete(response);
      if (!response.writableEnded) clientClosed.push(model);
    });
    if (reply.kind === "trickle") {
      response.writeHead(200, { "content-type": stream ? "text/event-stream" : "application/json" });
      response.flushHeaders();
      trickle = setInterval(() => {
        response.write(stream ? ":\n" : " ");
        trickledBytes.set(model, (trickledBytes.get(model) ?? 0) + (stream ? 2 : 1));
      }, reply.intervalMs);
      return;
    }

    if (reply.kind === "error") {
      response.writeHead(reply.status, { "content-type": "application/json" });
      response.end(
        JSON.stringify({
          error: { message: reply.message ?? `status ${reply.status}`, type: "server_error" },
        }),
      );
      return;
    }
    if (!stream) {
      if (reply.kind === "stall") return;
      if (reply.kind === "sse-error") {
        response.writeHead(500, { "content-type": "application/json" });
        response.end(JSON.stringify({ error: { message: reply.message, type: "server_error" } }));
        return;
      }
      const text =
        reply.kind === "text" ? reply.text : reply.kind === "drop-after" ? reply.before.join("") : "";
      if (reply.kind === "drop-after") {
        response.destroy();
        return;
      }
      response.writeHead(200, { "content-type": "application/json" });
      response.end(
        JSON.stringify({
          id: "chatcmpl-test",
          object: "chat.completion",
          created: 1_700_000_000,
          model,
          choices: [{ index: 0, message: { role: "assistant", content: text }, finish_reason: "stop" }],
          usage: { prompt_tokens: 11, completion_tokens: 7, total_tokens: 18 },
        }),
      );
      return;
    }
    response.writeHead(200, {
      "content-type": "text/event-stream",
      "cache-control": "no-cache",
      connection: "keep-alive",
    });
    response.flushHeaders();
    if (reply.kind === "stall") return;
    if (reply.kind === "sse-error") {
      response.write(
        `data: ${JSON.stringify({ error: { message: reply.message, type: "server_error", code: "overloaded" } })}\n\n`,
      );
      response.end("data: [DONE]\n\n");
      return;
    }
    response.write(completionChunk(model, { role: "assistant", content: "" }, null));
    if (reply.kind === "drop-after") {
      for (const piece of reply.before) response.write(completionChunk(model, { content: piece }, null));
      // Let the chunks reach the client before the connection disappears.
      setImmediate(() => response.destroy());
      return;
    }
    if (reply.kind === "stall-after") {
      for (const piece of reply.before) response.write(completionChunk(model, { content: piece }, null));
      return;
    }
    if (reply.kind === "text") {
      for (const piece of reply.chunks ?? splitWords(reply.text)) {
        response.write(completionChunk(model, { content: piece }, null));
      }
    }
    response.write(completionChunk(model, {}, "stop"));
    response.write(usageChunk(model));
    response.end("data: [DONE]\n\n");
  };

  const server: Server = createServer((request, response) => {
    handle(request, response).catch((error: unknown) => {
      if (!response.headersSent) response.writeHead(500, { "content-type": "application/json" });
      response.end(JSON.stringify({ error: { message: String(error) } }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;

  return {
    baseURL: `http://127.0.0.1:${port}/v1`,
    rootURL: `http://127.0.0.1:${port}`,
    requests,
    clientClosed,
    trickledBytes,
    script: (model, reply) => {
      scripts.set(model, Array.isArray(reply) ? [...reply] : [reply]);
    },
    close: async () => {
      for (const response of open) response.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
