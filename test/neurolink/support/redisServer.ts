/**
 * Starts a throwaway `redis-server` on a free loopback port for one test, with persistence off, and injects
 * faults into it: kill -9, SIGSTOP/SIGCONT, restart empty on the same port, admin commands (CONFIG SET ...).
 * The binary comes from `$LEXGROUND_REDIS_SERVER`, else from PATH.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { accessSync, constants } from "node:fs";
import { createConnection, createServer } from "node:net";
import { delimiter, join } from "node:path";

/** The redis-server binary, or undefined when there is none. */
export function findRedisServer(): string | undefined {
  const configured = process.env.LEXGROUND_REDIS_SERVER;
  const candidates = configured
    ? [configured]
    : (process.env.PATH ?? "")
        .split(delimiter)
        .filter(Boolean)
        .map((directory) => join(directory, "redis-server"));
  for (const candidate of candidates) {
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // Not there; try the next directory.
    }
  }
  return undefined;
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once("error", reject);
    probe.listen(0, "127.0.0.1", () => {
      const address = probe.address();
      const port = typeof address === "object" && address ? address.port : 0;
      probe.close(() => resolve(port));
    });
  });
}

function encodeCommand(args: string[]): string {
  return `*${args.length}\r\n${args.map((arg) => `$${Buffer.byteLength(arg)}\r\n${arg}\r\n`).join("")}`;
}

/**
 * Sends one command over a fresh connection and returns the raw reply (good enough for admin commands and PING).
 * Rejects on connection errors and after `timeoutMs`.
 */
export async function rawCommand(port: number, args: string[], timeoutMs = 1000): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = createConnection({ host: "127.0.0.1", port });
    let reply = "";
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`redis ${args[0]} timed out`));
    }, timeoutMs);
    socket.on("connect", () => socket.write(encodeCommand(args)));
    socket.on("data", (data) => {
      reply += data.toString("utf8");
      if (reply.endsWith("\r\n")) {
        clearTimeout(timer);
        socket.end();
        resolve(reply);
      }
    });
    socket.on("error", (error) => {
      clearTimeout(timer);
      reject(error);
    });
  });
}

export type RedisProcess = {
  port: number;
  url: string;
  /** Sends an admin command and returns the raw reply. */
  command: (...args: string[]) => Promise<string>;
  kill9: () => Promise<void>;
  pause: () => void;
  resume: () => void;
  /** Starts a fresh, empty server on the same port (after kill9). */
  restart: () => Promise<void>;
  stop: () => Promise<void>;
};

async function waitReady(port: number, child: ChildProcess): Promise<void> {
  for (let attempt = 0; attempt < 200; attempt++) {
    if (child.exitCode !== null) throw new Error(`redis-server exited with ${child.exitCode}`);
    try {
      if ((await rawCommand(port, ["PING"], 200)).startsWith("+PONG")) return;
    } catch {
      // Not listening yet.
    }
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error(`redis-server on port ${port} did not become ready`);
}

function exited(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => child.once("exit", () => resolve()));
}

/** Starts redis-server on a free port and waits until it answers PING. */
export async function startRedis(binary: string): Promise<RedisProcess> {
  const port = await freePort();
  const launch = async (): Promise<ChildProcess> => {
    const child = spawn(
      binary,
      [
        "--port",
        String(port),
        "--bind",
        "127.0.0.1",
        "--save",
        "",
        "--appendonly",
        "no",
        "--loglevel",
        "warning",
      ],
      { stdio: "ignore" },
    );
    await waitReady(port, child);
    return child;
  };
  let child = await launch();
  return {
    port,
    url: `redis://127.0.0.1:${port}`,
    command: (...args) => rawCommand(port, args),
    kill9: async () => {
      child.kill("SIGKILL");
      await exited(child);
    },
    pause: () => {
      child.kill("SIGSTOP");
    },
    resume: () => {
      child.kill("SIGCONT");
    },
    restart: async () => {
      child = await launch();
    },
    stop: async () => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill("SIGCONT");
      child.kill("SIGKILL");
      await exited(child);
    },
  };
}
