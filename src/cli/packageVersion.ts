/**
 * The installed package's version, for `--version` and the MCP server's info: read from the nearest `package.json`
 * named `lexground` above this module. Searched upwards rather than at a fixed `../..`, because the built package
 * bundles its modules into files at other depths than the sources'.
 */
import { readFileSync } from "node:fs";

/** Directories searched above the module (the bundle lies two below the package root, the sources one or two). */
const LEVELS = 5;

/** The version in lexground's `package.json`, or "0.0.0" when it cannot be found or read. */
export function packageVersion(): string {
  let directory = new URL("./", import.meta.url);
  for (let level = 0; level < LEVELS; level++) {
    try {
      const manifest = JSON.parse(readFileSync(new URL("package.json", directory), "utf8")) as {
        name?: unknown;
        version?: unknown;
      };
      if (manifest.name === "lexground")
        return typeof manifest.version === "string" ? manifest.version : "0.0.0";
    } catch {
      // No readable package.json here: look further up.
    }
    directory = new URL("../", directory);
  }
  return "0.0.0";
}
