/** `build --index` writes a prebuilt index beside the manifest; `query --kb kb.json` loads it when it matches. */
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { readIndexArtifactHeader } from "../../src/index.js";
import { checksum32 } from "../../src/knowledge/checksum.js";
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

  it("a relative --kb kb.json finds its kb.lxg from the working directory the CLI was given", async () => {
    await withTemporaryDirectory(async (directory) => {
      expect((await run(["build", exampleKb, "-o", join(directory, "kb.json"), "--index"])).code).toBe(0);
      const relative = await run(["query", "instant payouts", "--kb", "kb.json", "--json"], {
        cwd: directory,
      });
      expect(relative.code).toBe(0);
      expect(JSON.parse(relative.stdout).knowledgeBase.index).toBe("artifact");
    });
  });

  it("query --kb kb.lxg answers from the self-contained artifact alone, as from the manifest", async () => {
    await withTemporaryDirectory(async (directory) => {
      const manifest = join(directory, "kb.json");
      expect((await run(["build", exampleKb, "-o", manifest, "--index"])).code).toBe(0);
      const artifact = join(directory, "kb.lxg");
      for (const question of ["instant payouts", "How do I re-submit rejected payouts?"]) {
        const fromManifest = JSON.parse((await run(["query", question, "--kb", manifest, "--json"])).stdout);
        const fromArtifact = JSON.parse((await run(["query", question, "--kb", artifact, "--json"])).stdout);
        expect(fromArtifact.knowledgeBase.index).toBe("artifact");
        expect(fromArtifact.knowledgeBase.entries).toBe(fromManifest.knowledgeBase.entries);
        expect(fromArtifact.knowledgeBase.contentVersion).toBe(fromManifest.knowledgeBase.contentVersion);
        for (const key of ["candidates", "primary", "expanded", "context", "confidence", "excluded"]) {
          expect(fromArtifact[key]).toEqual(fromManifest[key]);
        }
      }
      // The artifact was built with the default settings: another preset needs its own artifact.
      const mismatch = await run(["query", "instant payouts", "--kb", artifact, "--preset", "recommended"]);
      expect(mismatch.code).toBe(1);
      expect(mismatch.stderr).toContain("other index settings");
      expect(mismatch.stderr).toContain("--preset");
      expect(
        (await run(["build", exampleKb, "-o", manifest, "--index", "--preset", "recommended"])).code,
      ).toBe(0);
      const recommended = JSON.parse(
        (await run(["query", "instant payouts", "--kb", artifact, "--preset", "recommended", "--json"]))
          .stdout,
      );
      const recommendedFromManifest = JSON.parse(
        (await run(["query", "instant payouts", "--kb", manifest, "--preset", "recommended", "--json"]))
          .stdout,
      );
      expect(recommended.primary).toEqual(recommendedFromManifest.primary);
      expect(recommended.context).toEqual(recommendedFromManifest.context);
    });
  });

  it("a damaged or missing kb.lxg is a one-line failure naming it", async () => {
    await withTemporaryDirectory(async (directory) => {
      const manifest = join(directory, "kb.json");
      expect((await run(["build", exampleKb, "-o", manifest, "--index"])).code).toBe(0);
      const artifact = join(directory, "kb.lxg");
      const bytes = await readFile(artifact);
      await writeFile(artifact, bytes.subarray(0, bytes.length - 1000));
      const damaged = await run(["query", "instant payouts", "--kb", artifact]);
      expect(damaged.code).toBe(1);
      expect(damaged.stderr).toContain("damaged");
      const missing = await run(["query", "instant payouts", "--kb", join(directory, "none.lxg"), "--json"]);
      expect(missing.code).toBe(1);
      expect(JSON.parse(missing.stdout).error.code).toBe("artifact-unreadable");
    });
  });

  it("query --kb kb.lxg decodes only the entries it uses: the integrations it lists come from the header", async () => {
    await withTemporaryDirectory(async (directory) => {
      const manifest = join(directory, "kb.json");
      expect((await run(["build", exampleKb, "-o", manifest, "--index"])).code).toBe(0);
      const artifact = join(directory, "kb.lxg");
      const question = "instant payouts";
      const hint = (output: string) => output.split("\n").find((line) => line.startsWith("note: "));
      const expectedHint = hint((await run(["query", question, "--kb", manifest])).stdout);
      expect(expectedHint).toContain("pass --integrations ");
      const everyIntegration = JSON.parse(
        (await run(["query", question, "--kb", manifest, "--all-integrations", "--json"])).stdout,
      );
      const used = JSON.parse((await run(["query", question, "--kb", manifest, "--json"])).stdout);
      // An entry the turn never reads: not a candidate, not expanded, and no entry relates to it.
      type ManifestEntry = { id: string; relatedEntryIds?: string[]; parentEntryId?: string };
      const entries = (
        JSON.parse(await readFile(manifest, "utf8")) as { catalogs: { entries: ManifestEntry[] }[] }
      ).catalogs.flatMap((catalog) => catalog.entries);
      const touched = new Set<string>(
        [...used.candidates, ...used.primary, ...used.expanded].map((entry: { id: string }) => entry.id),
      );
      for (const entry of entries)
        for (const target of [...(entry.relatedEntryIds ?? []), entry.parentEntryId ?? ""])
          touched.add(target);
      const untouched = entries.find((entry) => !touched.has(entry.id))!;
      expect(untouched).toBeDefined();
      // Damage that entry's record: reading it would fail the command (the CLI once decoded every entry to list
      // the integrations).
      const bytes = await readFile(artifact);
      const recordsStart = bytes.length - readIndexArtifactHeader(bytes).entryRecords.length;
      const at = bytes.indexOf(Buffer.from(JSON.stringify(untouched.id)), recordsStart);
      expect(at).toBeGreaterThan(recordsStart);
      bytes[at + 1]! ^= 0x01;
      await writeFile(artifact, bytes);
      const human = await run(["query", question, "--kb", artifact]);
      expect(human.code).toBe(0);
      expect(hint(human.stdout)).toBe(expectedHint);
      const all = await run(["query", question, "--kb", artifact, "--all-integrations", "--json"]);
      expect(all.code).toBe(0);
      const fromArtifact = JSON.parse(all.stdout);
      expect(fromArtifact.enabledIntegrations).toEqual(everyIntegration.enabledIntegrations);
      expect(fromArtifact.primary).toEqual(everyIntegration.primary);
    });
  });

  it("an artifact without the integration list in its header (written before it) still lists them", async () => {
    await withTemporaryDirectory(async (directory) => {
      const manifest = join(directory, "kb.json");
      expect((await run(["build", exampleKb, "-o", manifest, "--index"])).code).toBe(0);
      const artifact = join(directory, "kb.lxg");
      const expected = JSON.parse(
        (await run(["query", "payouts", "--kb", manifest, "--all-integrations", "--json"])).stdout,
      );
      await writeFile(artifact, withoutIntegrationNames(await readFile(artifact)));
      expect(readIndexArtifactHeader(await readFile(artifact)).integrationNames).toBeUndefined();
      const older = await run(["query", "payouts", "--kb", artifact, "--all-integrations", "--json"]);
      expect(older.code).toBe(0);
      expect(JSON.parse(older.stdout).enabledIntegrations).toEqual(expected.enabledIntegrations);
    });
  });

  it("needs a place to write", async () => {
    const result = await run(["build", exampleKb, "--index"]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("--index needs --output or a path");
  });
});

/**
 * The artifact with its header rewritten without `integrationNames` (as written before the field was added): the
 * prefix is magic (8 bytes), format version, header length, header checksum (little-endian 32-bit words) and 4
 * reserved bytes; the header JSON pads to an 8-byte boundary, so the payload keeps its alignment.
 */
function withoutIntegrationNames(bytes: Buffer): Buffer {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const headerLength = view.getUint32(12, true);
  const header = JSON.parse(
    bytes
      .subarray(24, 24 + headerLength)
      .toString("utf8")
      .trimEnd(),
  );
  delete header.integrationNames;
  let text = JSON.stringify(header);
  while (text.length < headerLength) text += " ";
  const rewritten = Buffer.concat([
    bytes.subarray(0, 24),
    Buffer.from(text),
    bytes.subarray(24 + headerLength),
  ]);
  const rewrittenView = new DataView(rewritten.buffer, rewritten.byteOffset, rewritten.byteLength);
  rewrittenView.setUint32(16, checksum32(rewritten.subarray(24, 24 + headerLength)), true);
  return rewritten;
}
