/**
 * NeuroLink accepts any non-empty id and any version: a knowledge base with ids such as "payments settings",
 * "Ünïcode id" or "a[1]" compiles, builds a prebuilt index, loads it back, and answers with the original ids in
 * its citations and percent-encoded ids in its markers (issue 11, NeuroLink registries we refuse).
 */
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { parseKnowledgeCitation } from "../../src/index.js";
import { run, withTemporaryDirectory } from "./helpers.js";

const ENTRIES = `- id: payments settings
  title: Payments Settings
  summary: Where payout schedules and payment methods are configured.
  domain: payments
  integrations: []
  relatedEntryIds: ["a[1]"]
- id: Ünïcode id
  title: Unicode Identifiers
  summary: Entry ids may use letters of any script.
  domain: docs
  integrations: []
- id: a[1]
  title: Bracketed Identifier
  summary: An id with brackets, which a marker encodes.
  domain: docs
  integrations: []
`;

describe("ids NeuroLink accepts, through the CLI", () => {
  it("compile, prebuilt index and query round-trip them; markers parse back to the original ids", async () => {
    await withTemporaryDirectory(async (directory) => {
      await mkdir(join(directory, "catalog"));
      await writeFile(join(directory, "catalog", "entries.yaml"), ENTRIES);
      const manifest = join(directory, "kb.json");
      const built = await run(["build", join(directory, "catalog"), "-o", manifest, "--index"]);
      expect(built.code, built.stderr).toBe(0);
      expect(built.stdout + built.stderr).toContain("3 warning(s)");

      const validated = await run(["validate", join(directory, "catalog")]);
      expect(validated.code).toBe(0);
      expect(validated.stdout + validated.stderr).toContain("encoded-in-citation");

      for (const [query, id] of [
        ["payments settings", "payments settings"],
        ["Ünïcode id", "Ünïcode id"],
        ["bracketed identifier", "a[1]"],
      ] as const) {
        const result = await run(["query", query, "--kb", manifest, "--json"]);
        expect(result.code, result.stderr).toBe(0);
        const report = JSON.parse(result.stdout);
        expect(report.knowledgeBase.index).toBe("artifact");
        expect(report.primary[0].id).toBe(id);
        expect(report.context.citations[0].id).toBe(id);
        const markers = (report.context.text as string)
          .split("\n")
          .filter((line) => line.startsWith("[KB:"))
          .map(parseKnowledgeCitation);
        expect(markers).toEqual(report.context.citations);
      }
      const payments = JSON.parse(
        (await run(["query", "payments settings", "--kb", manifest, "--json"])).stdout,
      );
      expect(payments.context.text).toContain(
        `[KB:payments%20settings@${payments.knowledgeBase.contentVersion}]`,
      );
      expect(payments.context.text).toContain(`[KB:a%5B1%5D@${payments.knowledgeBase.contentVersion}]`);
    });
  });
});
