/**
 * The package as a user gets it: `npm pack` of the built `dist/`, installed into an empty project with npm, offline
 * when npm's cache holds the three dependencies (it does after `npm ci`), with the registry as a fallback.
 *
 * Other suites can reuse {@link installPackedPackage} (for example to bundle the installed root export for a
 * browser): it packs and installs once per test process.
 */
import { execFile } from "node:child_process";
import { existsSync, readdirSync, statSync } from "node:fs";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";

export const repositoryRoot = join(import.meta.dirname, "../..");
const execute = promisify(execFile);
const npm = process.platform === "win32" ? "npm.cmd" : "npm";

/** One file of `npm pack --json` (`mode`: its Unix permission bits in the tarball). */
export type PackedFile = { path: string; size: number; mode: number };

/** A packed and installed lexground. */
export type InstalledPackage = {
  /** The tarball `npm pack` wrote. */
  tarball: string;
  /** Files in the tarball. */
  files: PackedFile[];
  /** An empty project (`package.json` only) where the tarball is installed. */
  project: string;
  /** How npm installed it: from its cache only, or reaching the registry. */
  installMode: "offline" | "prefer-offline";
  /** Removes the tarball and the project. */
  remove(): Promise<void>;
};

/** Newest modification time of the files below `directory` (or of `directory` itself when it is a file). */
function newestModification(path: string, skip: (name: string) => boolean): number {
  const info = statSync(path);
  if (!info.isDirectory()) return info.mtimeMs;
  let newest = 0;
  for (const name of readdirSync(path)) {
    if (skip(name)) continue;
    newest = Math.max(newest, newestModification(join(path, name), skip));
  }
  return newest;
}

/**
 * Builds `dist/` when it is missing or older than a source file (after `npm ci`, `prepare` has just built it, and
 * nothing is done). The test packs `dist/` as it is, with `--ignore-scripts`, so it does not build twice.
 */
export async function ensureBuilt(): Promise<void> {
  const built = join(repositoryRoot, "dist/index.js");
  const sources = Math.max(
    newestModification(join(repositoryRoot, "src"), (name) => name.includes(".test.")),
    ...["package.json", "tsconfig.json", "tsconfig.build.json"].map(
      (file) => statSync(join(repositoryRoot, file)).mtimeMs,
    ),
  );
  if (existsSync(built) && statSync(built).mtimeMs >= sources) return;
  await execute(npm, ["run", "build"], { cwd: repositoryRoot, timeout: 300_000 });
}

async function npmInstall(project: string, args: string[]): Promise<InstalledPackage["installMode"]> {
  const common = ["install", ...args, "--no-audit", "--no-fund", "--loglevel=error"];
  try {
    await execute(npm, [...common, "--offline"], { cwd: project, timeout: 120_000 });
    return "offline";
  } catch {
    await execute(npm, [...common, "--prefer-offline"], { cwd: project, timeout: 300_000 });
    return "prefer-offline";
  }
}

let installed: Promise<InstalledPackage> | undefined;

/** Packs the package and installs the tarball into an empty project (once per process). */
export function installPackedPackage(): Promise<InstalledPackage> {
  installed ??= (async () => {
    await ensureBuilt();
    const workspace = await mkdtemp(join(tmpdir(), "lexground-packed-"));
    const { stdout } = await execute(
      npm,
      ["pack", "--ignore-scripts", "--json", "--pack-destination", workspace, "--loglevel=error"],
      { cwd: repositoryRoot, timeout: 120_000 },
    );
    const [packed] = JSON.parse(stdout) as [{ filename: string; files: PackedFile[] }];
    const project = join(workspace, "app");
    await mkdir(project);
    await writeFile(
      join(project, "package.json"),
      `${JSON.stringify({ name: "app", version: "1.0.0", private: true }, null, 2)}\n`,
    );
    const tarball = join(workspace, packed.filename);
    const installMode = await npmInstall(project, [tarball]);
    return {
      tarball,
      files: packed.files,
      project,
      installMode,
      remove: () => rm(workspace, { recursive: true, force: true }),
    };
  })();
  return installed;
}
