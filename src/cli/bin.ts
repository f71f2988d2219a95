#!/usr/bin/env node
/** The `lexground` executable: runs {@link main} on the process's streams and sets the exit code. */
import { main } from "./main.js";

// A reader that stops early (`lexground query … | head`) closes the pipe: stop quietly, as Unix tools do.
for (const stream of [process.stdout, process.stderr]) {
  stream.on("error", (error: NodeJS.ErrnoException) => {
    if (error.code === "EPIPE") process.exit(process.exitCode ?? 0);
    throw error;
  });
}

process.exitCode = await main(process.argv.slice(2), {
  stdout: process.stdout,
  stderr: process.stderr,
  env: process.env,
  cwd: process.cwd(),
  stdin: process.stdin,
});
