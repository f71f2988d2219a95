/** `build --index` writes a prebuilt index beside the manifest; `query --kb kb.json` loads it when it matches. */
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { readIndexArtifactHeader } from "../../src/index.js";
import { run, withTemporaryDirectory } from "./helpers.js";

const exampleKb = join(import.meta.dirname, "../../examples/knowledge-base");

describe("prebuilt index artifact through the CLI", () => {
  it("is written by build --index and used by query, and ignored with a note once stale", async () => {
    await withTemporaryDirectory(async (directory) => {
      const manifest = join(directory, "kb.json");
      const built = await run(["build", exampleKb, "-o", manifest, "--index"]);
      expect(built.code).toBe(0);
      expect(built.stdout).toContain(`wrote prebuilt index ${join(directory, "kb.lxg")}`);
      const header = readIndexArtifactHeader(await readFile(join(directory, "kb.lxg")));
      expect(header.entryCount).toBeGreaterThan(150);

      const fresh = JSON.parse((await run(["query", "instant payouts", "--kb", manifest, "--json"])).stdout);
      expect(fresh.knowledgeBase.index).toBe("artifact");

      // Edit one entry's summary in the manifest: the artifact no longer matches its content.
      const edited = JSON.parse(await readFile(manifest, "utf8"));
      edited.catalogs[0].entries[0].summary = "Edited after the index was built.";
      await writeFile(manifest, JSON.stringify(edited));
      const stale = JSON.parse((await run(["query", "instant payouts", "--kb", manifest, "--json"])).stdout);
      expect(stale.knowledgeBase.index).toBe("built");
      expect(stale.knowledgeBase.indexNote).toContain("different content or index settings");
      expect(fresh.primary.length).toBeGreaterThan(0);
      expect(stale.primary).toEqual(fresh.primary);
    });
  });

  it("needs a place to write", async () => {
    const result = await run(["build", exampleKb, "--index"]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("--index needs --output or a path");
  });
});
