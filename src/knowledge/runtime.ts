/**
 * The few host facilities the engine needs beyond the language, looked up at run time so the root export imports
 * no `node:` module and runs unchanged in Node, browsers, and edge and worker runtimes.
 */

type HostGlobals = {
  setImmediate?: (callback: () => void) => unknown;
  MessageChannel?: new () => {
    port1: { onmessage: ((event: unknown) => void) | null; close(): void };
    port2: { postMessage(message: unknown): void; close(): void };
  };
  process?: { getBuiltinModule?: (name: string) => unknown };
};

const host = globalThis as unknown as HostGlobals;

/**
 * Resolves on the next turn of the event loop, letting timers and I/O run: `setImmediate` in Node, a message
 * channel in browsers and workers (a nested `setTimeout(0)` is clamped to 4 ms there, which would slow a sliced
 * build by half), `setTimeout` as the last resort.
 */
export function yieldToEventLoop(): Promise<void> {
  return new Promise<void>((resolve) => {
    if (typeof host.setImmediate === "function") {
      host.setImmediate(resolve);
    } else if (typeof host.MessageChannel === "function") {
      const channel = new host.MessageChannel();
      channel.port1.onmessage = () => {
        channel.port1.close();
        resolve();
      };
      channel.port2.postMessage(null);
    } else {
      setTimeout(resolve, 0);
    }
  });
}

/**
 * A Node built-in module when the host is Node (`process.getBuiltinModule`, Node >= 20.16), otherwise undefined.
 * No `import` of a `node:` specifier appears, so browser bundlers have nothing to resolve or polyfill.
 */
export function nodeBuiltin<Module>(name: string): Module | undefined {
  try {
    return host.process?.getBuiltinModule?.(name) as Module | undefined;
  } catch {
    return undefined;
  }
}

/** Reads a file in Node; elsewhere throws an error that says to pass the bytes instead. */
export async function readFileBytes(path: string): Promise<Uint8Array> {
  const fs = nodeBuiltin<{ readFile(path: string): Promise<Uint8Array> }>("node:fs/promises");
  if (!fs) {
    throw new Error(
      `a file path (${path}) needs Node's file system, which this runtime does not have: pass the artifact's bytes (a Uint8Array) instead`,
    );
  }
  return fs.readFile(path);
}

const typedArrayTag = Object.getOwnPropertyDescriptor(
  Object.getPrototypeOf(Uint8Array.prototype),
  Symbol.toStringTag,
)?.get as ((this: unknown) => string | undefined) | undefined;

/**
 * Whether `value` is a Uint8Array (a Node Buffer included), from any realm, and not an object merely claiming to be
 * one: the typed-array brand check that `node:util`'s `types.isUint8Array` does, without importing it.
 */
export function isUint8Array(value: unknown): value is Uint8Array {
  return typedArrayTag !== undefined && typedArrayTag.call(value) === "Uint8Array";
}
