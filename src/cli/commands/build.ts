/** `lexground build`: compile authored files into a manifest, refusing to write one that would not load. */
import { mkdir, open, rename, rm, writeFile } from "node:fs/promises";
import { dirname, resolve } from "node:path";
import { CONTENT_WARNING_CODES } from "../../files/fileText.js";
import { knowledgeBaseIssues } from "../../files/issues.js";
import { serializeManifest } from "../../files/manifest.js";
import { buildIndexArtifactChunks, manifestToSources, resolveGroundingConfiguration } from "../../index.js";
import { CliUsageError } from "../errors.js";
import { type CommandContext, printError, println } from "../io.js";
import { formatIssue } from "../report.js";
import { defaultIndexPath, openKnowledgeBase, parsePreset } from "../session.js";

export type BuildFlags = {
  output?: string;
  /** Also write a prebuilt index artifact: `true` for the default path beside the manifest, or a path. */
  index?: string | boolean;
  contentVersion?: string;
  generatedAt?: string;
  /** The preset whose index settings the artifact is built with (an engine must use the same to load it alone). */
  preset?: string;
  force?: boolean;
  json?: boolean;
  /** A PostgreSQL URL: also publish the knowledge base there (a new generation, or the serving one reused). */
  backend?: string;
  backendSchema?: string;
};

/** Writes through a temporary file and a rename, so a reader never sees half a manifest. */
async function writeAtomically(
  path: string,
  text: string | Uint8Array | readonly Uint8Array[],
): Promise<void> {
  await mkdir(dirname(path), { recursive: true });
  const temporary = `${path}.${process.pid}.tmp`;
  try {
    if (Array.isArray(text)) {
      // An artifact in pieces (it may exceed what one buffer holds).
      const handle = await open(temporary, "w");
      try {
        for (const piece of text as readonly Uint8Array[]) {
          // One write() call moves at most about 2 GiB: loop until the piece is written.
          let written = 0;
          while (written < piece.byteLength) {
            const { bytesWritten } = await handle.write(
              piece,
              written,
              Math.min(piece.byteLength - written, 1 << 30),
            );
            written += bytesWritten;
          }
        }
      } finally {
        await handle.close();
      }
    } else {
      await writeFile(temporary, text as string | Uint8Array);
    }
    await rename(temporary, path);
  } catch (error) {
    await rm(temporary, { force: true });
    throw error;
  }
}

export async function runBuild(
  context: CommandContext,
  inputs: string[],
  flags: BuildFlags,
): Promise<number> {
  if (flags.json && !flags.output && flags.backend === undefined) {
    throw new CliUsageError(
      "--json needs --output",
      "without -o the manifest itself is printed to standard output",
    );
  }
  const knowledgeBase = await openKnowledgeBase(context, inputs, {
    ...(flags.contentVersion !== undefined ? { contentVersion: flags.contentVersion } : {}),
    ...(flags.generatedAt !== undefined ? { generatedAt: flags.generatedAt } : {}),
  });
  const { manifest } = knowledgeBase;
  const { issues } = knowledgeBaseIssues(knowledgeBase);
  const errors = issues.filter((issue) => issue.level === "error");
  const warnings = issues.filter((issue) => issue.level === "warning");
  const entryCount = manifest.catalogs.reduce((sum, catalog) => sum + catalog.entries.length, 0);
  const refused = errors.length > 0 && !flags.force;

  if (!flags.json) {
    // Errors, and the warnings that say a file's text is damaged (the other warnings are counted below).
    for (const issue of issues) {
      if (issue.level === "error" || CONTENT_WARNING_CODES.has(issue.code))
        context.io.stderr.write(`${formatIssue(issue, context.err)}\n`);
    }
  }
  let written = false;
  let indexPath: string | null = null;
  if (flags.index !== undefined && flags.index !== false && !flags.output && flags.index === true) {
    throw new CliUsageError(
      "--index needs --output or a path",
      "use -o manifest.json --index, or --index kb.lxg",
    );
  }
  if (!refused) {
    const text = serializeManifest(manifest);
    if (flags.output) {
      await writeAtomically(resolve(context.io.cwd, flags.output), text);
      written = true;
    } else if (flags.backend === undefined) {
      context.io.stdout.write(text);
    }
    if (flags.index !== undefined && flags.index !== false && errors.length === 0) {
      indexPath = typeof flags.index === "string" ? flags.index : defaultIndexPath(flags.output!);
      const retrieval = resolveGroundingConfiguration({ preset: parsePreset(flags.preset) }).retrieval;
      const artifact = await buildIndexArtifactChunks(manifestToSources(manifest), {
        fieldWeights: retrieval.fieldWeights,
        k1: retrieval.k1,
        b: retrieval.b,
        analyzer: retrieval.analyzer,
        scoring: retrieval.scoring,
      });
      await writeAtomically(resolve(context.io.cwd, indexPath), artifact);
    }
  }
  let published: { generation: number | null; reused: boolean; entryCount: number } | null = null;
  if (!refused && errors.length === 0 && flags.backend !== undefined) {
    const { publishManifest } = await import("./backend.js");
    published = await publishManifest(
      context,
      flags.backend,
      flags.backendSchema,
      manifestToSources(manifest),
      flags.preset,
    );
  }

  if (flags.json) {
    println(
      context,
      JSON.stringify(
        {
          ok: !refused,
          output: flags.output ?? null,
          written,
          index: indexPath,
          ...(published ? { published } : {}),
          schemaVersion: manifest.schemaVersion,
          contentVersion: manifest.contentVersion,
          generatedAt: manifest.generatedAt,
          catalogs: manifest.catalogs.map((catalog) => ({ id: catalog.id, entries: catalog.entries.length })),
          entryCount,
          errorCount: errors.length,
          warningCount: warnings.length,
          errors,
        },
        null,
        2,
      ),
    );
    return refused ? 1 : 0;
  }
  if (refused) {
    printError(
      context,
      `not written: ${errors.length} validation error${errors.length === 1 ? "" : "s"} in ${inputs.join(", ")}`,
      "fix the errors above (or pass --force to write anyway); 'lexground validate' lists warnings too",
    );
    return 1;
  }
  // With the manifest on stdout, the summary goes to stderr so the output stays valid JSON.
  const summaryStream = flags.output ? context.io.stdout : context.io.stderr;
  const colors = flags.output ? context.out : context.err;
  const counts = `${manifest.catalogs.length} catalog${manifest.catalogs.length === 1 ? "" : "s"}, ${entryCount} entr${entryCount === 1 ? "y" : "ies"}`;
  summaryStream.write(
    `${colors.green("✔")} ${flags.output ? `wrote ${flags.output}` : "built manifest"}: ${counts}, content version ${colors.bold(manifest.contentVersion)}, generated at ${manifest.generatedAt}\n`,
  );
  if (indexPath) summaryStream.write(`${colors.green("✔")} wrote prebuilt index ${indexPath}\n`);
  if (warnings.length > 0 || errors.length > 0) {
    summaryStream.write(
      `${colors.yellow("!")} ${errors.length ? `${errors.length} error(s) written anyway (--force), ` : ""}${warnings.length} warning(s); run 'lexground validate ${inputs.join(" ")}' for details\n`,
    );
  }
  return 0;
}
