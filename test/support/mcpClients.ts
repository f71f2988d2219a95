/**
 * MCP clients of lexground's server in tests: one linked in memory to a server object, and `lexground mcp …` run
 * in this process as a client would drive it over stdio (`initialize`, `initialized`, then one `tools/call` per
 * call; once every answer is on stdout, the end of input, and the server exits).
 */
import { PassThrough } from "node:stream";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";

/** A client connected in memory to `server`; `close` closes both. */
export async function connectInMemory(
  server: McpServer,
): Promise<{ client: Client; close(): Promise<void> }> {
  const [clientTransport, serverTransport] = InMemoryTransport.createLinkedPair();
  const client = new Client({ name: "test-client", version: "1.0.0" });
  await Promise.all([server.connect(serverTransport), client.connect(clientTransport)]);
  return {
    client,
    async close() {
      await client.close();
      await server.close();
    },
  };
}

/** A JSON-RPC answer from the server. */
export type McpStdioAnswer = {
  id: number;
  result?: {
    structuredContent?: Record<string, unknown>;
    content?: unknown[];
    isError?: boolean;
    serverInfo?: Record<string, unknown>;
  };
  error?: { code: number; message: string };
};

/**
 * Runs the CLI with `args` (from `cwd`) and sends `calls`. Returns every answer in request order (id 1:
 * `initialize`; id 2 + n: the nth call), what the command wrote on stderr and its exit code.
 */
export async function callMcpOverStdio(
  args: string[],
  cwd: string,
  calls: { name: string; arguments: Record<string, unknown> }[],
): Promise<{ answers: McpStdioAnswer[]; stderr: string; exitCode: number }> {
  const { main } = await import("../../src/cli/main.js");
  const stdin = new PassThrough();
  let stdout = "";
  let stderr = "";
  const lines = () => stdout.split("\n").filter(Boolean);
  let allAnswered!: () => void;
  const answered = new Promise<void>((resolve) => {
    allAnswered = resolve;
  });
  const exit = main(args, {
    stdout: {
      write: (chunk: string) => {
        stdout += chunk;
        if (lines().length >= calls.length + 1) allAnswered();
        return true;
      },
    },
    stderr: {
      write: (chunk: string) => {
        stderr += chunk;
        return true;
      },
    },
    env: { NO_COLOR: "1" },
    cwd,
    stdin,
  });
  const send = (message: object) => stdin.write(`${JSON.stringify(message)}\n`);
  send({
    jsonrpc: "2.0",
    id: 1,
    method: "initialize",
    params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "t", version: "1" } },
  });
  send({ jsonrpc: "2.0", method: "notifications/initialized" });
  calls.forEach((params, index) => {
    send({ jsonrpc: "2.0", id: index + 2, method: "tools/call", params });
  });
  // A command that fails before serving exits without answering.
  await Promise.race([answered, exit]);
  stdin.end();
  const exitCode = await exit;
  // Answers in request order: a server may answer a later request first.
  const answers = lines()
    .map((line) => JSON.parse(line) as McpStdioAnswer)
    .sort((left, right) => left.id - right.id);
  return { answers, stderr, exitCode };
}
