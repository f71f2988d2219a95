#!/usr/bin/env node
/** The `lexground` executable: runs {@link main} on the process's streams and sets the exit code. */
import { main } from "./main.js";

process.exitCode = await main(process.argv.slice(2), {
  stdout: process.stdout,
  stderr: process.stderr,
  env: process.env,
  cwd: process.cwd(),
  stdin: process.stdin,
});
