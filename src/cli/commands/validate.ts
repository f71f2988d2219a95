/** `lexground validate`: every engine issue, compiler note and author lint, located at `file:line`. */

import { knowledgeBaseIssues, lintKnowledgeBase } from "../../files/issues.js";
import { type CommandContext, println } from "../io.js";
import { formatIssue } from "../report.js";
import { openKnowledgeBase } from "../session.js";

export type ValidateFlags = { json?: boolean; strict?: boolean };

function plural(count: number, word: string): string {
  return `${count} ${word}${count === 1 ? "" : "s"}`;
}

export async function runValidate(
  context: CommandContext,
  inputs: string[],
  flags: ValidateFlags,
): Promise<number> {
  // A file that cannot be compiled is one error among the others, not the end of the run.
  const knowledgeBase = await openKnowledgeBase(context, inputs, { locate: true, collectFileErrors: true });
  const { manifest } = knowledgeBase;
  const { issues } = knowledgeBaseIssues(knowledgeBase, lintKnowledgeBase(knowledgeBase));
  const errorCount = issues.filter((issue) => issue.level === "error").length;
  const warningCount = issues.filter((issue) => issue.level === "warning").length;
  const entryCount = manifest.catalogs.reduce((sum, catalog) => sum + catalog.entries.length, 0);
  const failed = errorCount > 0 || (flags.strict === true && warningCount > 0);

  if (flags.json) {
    println(
      context,
      JSON.stringify(
        {
          ok: !failed,
          errorCount,
          warningCount,
          entryCount,
          catalogs: manifest.catalogs.map((catalog) => ({ id: catalog.id, entries: catalog.entries.length })),
          contentVersion: manifest.contentVersion,
          issues,
        },
        null,
        2,
      ),
    );
    return failed ? 1 : 0;
  }
  for (const issue of issues) println(context, formatIssue(issue, context.out));
  const { out } = context;
  const scope = `${plural(entryCount, "entry").replace("entrys", "entries")} in ${plural(manifest.catalogs.length, "catalog")}`;
  if (errorCount === 0 && warningCount === 0) {
    println(context, `${out.green("✔")} no issues: ${scope}`);
  } else {
    const mark = errorCount > 0 ? out.red("✖") : out.yellow("!");
    println(context, `${mark} ${plural(errorCount, "error")}, ${plural(warningCount, "warning")}: ${scope}`);
  }
  return failed ? 1 : 0;
}
