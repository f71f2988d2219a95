/**
 * Headless Chromium for tests: Debian's `/usr/bin/chromium`, or `LEXGROUND_CHROMIUM`. Without it a test is skipped
 * with a notice, unless `LEXGROUND_REQUIRE_CHROMIUM=1` (CI: `.ci/run` installs it), in which case the absence is a
 * failure.
 */
import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";

export const CHROMIUM = process.env.LEXGROUND_CHROMIUM || "/usr/bin/chromium";
const CHROMIUM_REQUIRED = process.env.LEXGROUND_REQUIRE_CHROMIUM === "1";
const run = promisify(execFile);

/**
 * True when Chromium is there. Otherwise throws when it is required, or warns (naming `what` did not run) and
 * returns false, for the caller to skip.
 */
export function chromiumAvailable(tag: string, what: string): boolean {
  if (existsSync(CHROMIUM)) return true;
  if (CHROMIUM_REQUIRED) {
    throw new Error(
      `${CHROMIUM} is required (LEXGROUND_REQUIRE_CHROMIUM=1) but was not found: apt-get install chromium, or set LEXGROUND_CHROMIUM`,
    );
  }
  console.warn(
    `[${tag}] SKIPPED: ${CHROMIUM} is absent, so ${what} did not run (apt-get install chromium, or set LEXGROUND_CHROMIUM)`,
  );
  return false;
}

/** Runs `use` with headless Chromium's flags for a fresh, throw-away profile; removes the profile afterwards. */
export async function withChromium<Result>(
  use: (runChromium: (args: string[]) => Promise<string>) => Promise<Result>,
): Promise<Result> {
  const profile = await mkdtemp(join(tmpdir(), "lexground-chromium-"));
  const flags = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    `--user-data-dir=${profile}`,
  ];
  try {
    return await use(async (args) => {
      const { stdout } = await run(CHROMIUM, [...flags, ...args], {
        timeout: 90_000,
        maxBuffer: 16 * 1024 * 1024,
      });
      return stdout;
    });
  } finally {
    await rm(profile, { recursive: true, force: true });
  }
}
