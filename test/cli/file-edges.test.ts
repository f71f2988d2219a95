/**
 * Hostile and damaged knowledge files (issue 11, item 13): an oversized file is refused from its size before it
 * is read, a YAML alias bomb or cyclic alias is a located error, and invalid UTF-8 or binary content is a warning
 * naming the file while the run continues.
 *
 * `node:fs/promises` is wrapped so the tests can see how many bytes the compiler read from each file.
 */
import type { FileHandle } from "node:fs/promises";
import { mkdir, symlink, truncate, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import { compileKnowledgeBase, readKnowledgeBase } from "../../src/files/compile.js";
import { KnowledgeCompileError } from "../../src/files/errors.js";
import { MAX_ENTRY_FILE_BYTES, MAX_MANIFEST_FILE_BYTES } from "../../src/files/fileText.js";
import { MAX_YAML_ANCHORS_AND_ALIASES } from "../../src/files/yaml.js";
import { run, withTemporaryDirectory } from "./helpers.js";

/** Bytes read through `open()` handles, per path. */
const bytesRead = new Map<string, number>();

vi.mock("node:fs/promises", async (importOriginal) => {
  const actual = await importOriginal<typeof import("node:fs/promises")>();
  const count = (path: unknown, bytes: number) => {
    const key = String(path);
    bytesRead.set(key, (bytesRead.get(key) ?? 0) + bytes);
  };
  const open = async (...args: Parameters<typeof actual.open>): Promise<FileHandle> => {
    const handle = await actual.open(...args);
    const read = handle.read.bind(handle) as (...rest: unknown[]) => Promise<{ bytesRead: number }>;
    const readFile = handle.readFile.bind(handle) as (...rest: unknown[]) => Promise<string | Buffer>;
    return Object.assign(handle, {
      read: async (...rest: unknown[]) => {
        const result = await read(...rest);
        count(args[0], result.bytesRead);
        return result;
      },
      readFile: async (...rest: unknown[]) => {
        const result = await readFile(...rest);
        count(args[0], Buffer.byteLength(result));
        return result;
      },
    });
  };
  const readFile = async (...args: Parameters<typeof actual.readFile>) => {
    const result = await actual.readFile(...args);
    count(args[0], Buffer.byteLength(result as string | Buffer));
    return result;
  };
  return { ...actual, open, readFile, default: { ...actual, open, readFile } };
});

afterEach(() => bytesRead.clear());

const FRONT_MATTER = "id: {id}\ntitle: Entry {id}\nsummary: A summary.\ndomain: docs\nintegrations: []\n";
const markdown = (id: string, extra = "", body = "Body text.") =>
  `---\n${FRONT_MATTER.replaceAll("{id}", id)}${extra}---\n${body}\n`;

async function compileError(load: () => Promise<unknown>): Promise<KnowledgeCompileError> {
  try {
    await load();
  } catch (error) {
    if (error instanceof KnowledgeCompileError) return error;
    throw new Error(`expected a KnowledgeCompileError, got ${String(error)}`);
  }
  throw new Error("expected a KnowledgeCompileError, got success");
}

/** The classic "billion laughs": ten levels of ten, 10^10 values from twelve lines. */
function billionLaughs(): string {
  const lines = ['l0: &l0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol","lol"]'];
  for (let level = 1; level <= 9; level++)
    lines.push(
      `l${level}: &l${level} [${Array(10)
        .fill(`*l${level - 1}`)
        .join(",")}]`,
    );
  return `${lines.join("\n")}\n`;
}

describe("oversized files are refused from their size, before they are read", () => {
  it("a 200 MB Markdown entry: a located file-too-large error, and not one byte read", async () => {
    await withTemporaryDirectory(async (directory) => {
      const folder = join(directory, "kb");
      await mkdir(folder);
      await writeFile(join(folder, "small.md"), markdown("small"));
      const big = join(folder, "big.md");
      await writeFile(big, markdown("big"));
      await truncate(big, 200_000_000); // sparse: no disk space, no time
      const error = await compileError(() => compileKnowledgeBase(["kb"], { cwd: directory }));
      expect(error.code).toBe("file-too-large");
      expect(error.file).toBe("kb/big.md");
      expect(error.message).toBe(
        "kb/big.md: 200000000 bytes (190.7 MiB); the limit is 64 MiB, so it was not read",
      );
      expect(bytesRead.get(big) ?? 0).toBe(0);

      bytesRead.clear();
      const cli = await run(["build", "kb", "-o", "kb.json"], { cwd: directory });
      expect(cli.code).toBe(1);
      expect(cli.stderr).toContain("kb/big.md: 200000000 bytes");
      expect(bytesRead.get(big) ?? 0).toBe(0);
    });
  });

  it("one byte over MAX_ENTRY_FILE_BYTES is refused unread", async () => {
    await withTemporaryDirectory(async (directory) => {
      const file = join(directory, "edge.md");
      await writeFile(file, markdown("edge"));
      await truncate(file, MAX_ENTRY_FILE_BYTES + 1);
      const error = await compileError(() => compileKnowledgeBase([file], { cwd: directory }));
      expect(error.message).toBe(
        "edge.md: 67108865 bytes (64.0 MiB); the limit is 64 MiB, so it was not read",
      );
      expect(bytesRead.get(file) ?? 0).toBe(0);
    });
  });

  it("a manifest over its limit (--kb kb.json) is refused unread", async () => {
    await withTemporaryDirectory(async (directory) => {
      const manifest = join(directory, "kb.json");
      await writeFile(manifest, '{"catalogs": []}');
      await truncate(manifest, MAX_MANIFEST_FILE_BYTES + 1);
      const cli = await run(["query", "anything", "--kb", "kb.json"], { cwd: directory });
      expect(cli.code).toBe(1);
      expect(cli.stderr).toContain("error: kb.json: 268435457 bytes (256.0 MiB); the limit is 256 MiB");
      expect(bytesRead.get(manifest) ?? 0).toBe(0);
    });
  });

  it("a file without a size (a device without end) stops at the limit", async () => {
    await withTemporaryDirectory(async (directory) => {
      const link = join(directory, "endless.md");
      await symlink("/dev/zero", link);
      const error = await compileError(() => compileKnowledgeBase([link], { cwd: directory }));
      expect(error.code).toBe("file-too-large");
      expect(error.file).toBe("endless.md");
      expect(bytesRead.get(link)).toBe(MAX_ENTRY_FILE_BYTES + 1);
    });
  });
});

describe("YAML aliases are bounded: no alias bomb, no cycle", () => {
  it("an alias bomb in front matter is a yaml-aliases error at the alias where it explodes", async () => {
    await withTemporaryDirectory(async (directory) => {
      await writeFile(join(directory, "bomb.md"), markdown("bomb", `${billionLaughs()}keywords: *l9\n`));
      const error = await compileError(() => compileKnowledgeBase(["bomb.md"], { cwd: directory }));
      expect(error.code).toBe("yaml-aliases");
      // Front matter starts at line 2; its sixth line (l0) is line 7, and l5 (10^5 values each) is line 12.
      expect(error.message).toBe(
        'bomb.md:12: YAML aliases expand past 1,000,000 values at this alias (an alias bomb, "billion laughs")',
      );
      const cli = await run(["validate", "bomb.md"], { cwd: directory });
      expect(cli).toMatchObject({ code: 1, stderr: "" });
      expect(cli.stdout).toMatch(/^bomb\.md:12: error: YAML aliases expand past/);
    });
  });

  it("an alias bomb in a YAML entry list and in catalog.yaml", async () => {
    await withTemporaryDirectory(async (directory) => {
      const list = `${billionLaughs()}entries:\n  - id: a\n    title: A\n    summary: s\n    domain: d\n    integrations: []\n    keywords: *l9\n`;
      await writeFile(join(directory, "list.yaml"), list);
      const error = await compileError(() => compileKnowledgeBase(["list.yaml"], { cwd: directory }));
      expect([error.code, error.file, error.line]).toEqual(["yaml-aliases", "list.yaml", 6]);

      const catalog = join(directory, "catalog");
      await mkdir(catalog);
      await writeFile(join(catalog, "catalog.yaml"), `id: c\nname: *l9\n${billionLaughs()}`);
      await writeFile(join(catalog, "entry.md"), markdown("entry"));
      const catalogError = await compileError(() => compileKnowledgeBase(["catalog"], { cwd: directory }));
      expect([catalogError.code, catalogError.file]).toEqual(["yaml-aliases", "catalog/catalog.yaml"]);
    });
  });

  it("an alias without its anchor is a located error", async () => {
    await withTemporaryDirectory(async (directory) => {
      await writeFile(join(directory, "orphan.md"), markdown("orphan", "keywords: [a, *nope]\n"));
      const error = await compileError(() => compileKnowledgeBase(["orphan.md"], { cwd: directory }));
      expect(error.code).toBe("yaml-aliases");
      expect(error.message).toBe("orphan.md:7: YAML alias *nope has no anchor of that name before it");
    });
  });

  it("an alias inside the node it names is a located error, not a TypeError", async () => {
    await withTemporaryDirectory(async (directory) => {
      await writeFile(join(directory, "cycle.md"), markdown("cycle", "keywords: &k [a, *k]\n"));
      const error = await compileError(() => compileKnowledgeBase(["cycle.md"], { cwd: directory }));
      expect(error.code).toBe("yaml-aliases");
      expect(error.message).toBe(
        "cycle.md:7: YAML alias *k refers to a node that contains it, so it never ends",
      );
    });
  });

  it("more anchors and aliases than the limit is an error at the first one", async () => {
    await withTemporaryDirectory(async (directory) => {
      const aliases = Array(MAX_YAML_ANCHORS_AND_ALIASES).fill("*k").join(", ");
      await writeFile(join(directory, "many.md"), markdown("many", `keywords: [&k a, ${aliases}]\n`));
      const error = await compileError(() => compileKnowledgeBase(["many.md"], { cwd: directory }));
      expect(error.message).toBe(
        `many.md:7: ${MAX_YAML_ANCHORS_AND_ALIASES + 1} YAML anchors and aliases; the limit is ${MAX_YAML_ANCHORS_AND_ALIASES} per file`,
      );
    });
  });

  it("an ordinary alias shared by 300 entries is accepted (the YAML library alone allows 100 uses)", async () => {
    await withTemporaryDirectory(async (directory) => {
      const entries = Array.from(
        { length: 300 },
        (_, index) =>
          `- id: e${index}\n  title: Entry ${index}\n  summary: s\n  domain: d\n  integrations: ${index === 0 ? "&shop [shopify]" : "*shop"}\n`,
      ).join("");
      await writeFile(join(directory, "shared.yaml"), entries);
      const loaded = await compileKnowledgeBase(["shared.yaml"], { cwd: directory });
      const compiled = loaded.manifest.catalogs[0]!.entries;
      expect(compiled).toHaveLength(300);
      expect(compiled.every((entry) => JSON.stringify(entry.integrations) === '["shopify"]')).toBe(true);
    });
  });
});

describe("invalid UTF-8 and binary content are read with a warning", () => {
  it("warns naming the file and line of the first bad byte; the run continues", async () => {
    await withTemporaryDirectory(async (directory) => {
      const folder = join(directory, "kb");
      await mkdir(folder);
      // Latin-1 "café" on body line 2 (file line 9), after valid multi-byte UTF-8 on line 8.
      await writeFile(
        join(folder, "latin.md"),
        Buffer.concat([
          Buffer.from(markdown("latin", "", "Ünïcødé 🙂 line").replace(/\n$/, "\n")),
          Buffer.from([0x63, 0x61, 0x66, 0xe9, 0x0a]),
        ]),
      );
      await writeFile(
        join(folder, "binary.md"),
        Buffer.concat([Buffer.from(markdown("binary")), Buffer.from([0x00, 0x01, 0x02, 0x0a])]),
      );
      await writeFile(join(folder, "clean.md"), `\uFEFF${markdown("clean", "", "Ünïcødé 🙂")}`);

      const loaded = await compileKnowledgeBase(["kb"], { cwd: directory });
      expect(loaded.notes).toEqual([
        {
          level: "warning",
          code: "binary-content",
          message: "contains NUL bytes: binary data, not text (a UTF-16 file, an image, a compressed file?)",
          file: "kb/binary.md",
          line: 9,
        },
        {
          level: "warning",
          code: "invalid-utf8",
          message: "not valid UTF-8 (saved in another encoding?); the invalid bytes were read as U+FFFD",
          file: "kb/latin.md",
          line: 9,
        },
      ]);
      // The text is read as before (replacement character), and every entry is compiled.
      const bodies = Object.fromEntries(
        loaded.manifest.catalogs[0]!.entries.map((entry) => [entry.id, entry.body]),
      );
      expect(bodies.latin).toBe("Ünïcødé 🙂 line\ncaf\uFFFD");
      expect(bodies.clean).toBe("Ünïcødé 🙂");

      const built = await run(["build", "kb", "-o", "kb.json"], { cwd: directory });
      expect(built.code).toBe(0);
      expect(built.stderr).toBe(
        "kb/binary.md:9: warning: contains NUL bytes: binary data, not text (a UTF-16 file, an image, a compressed file?) [binary-content]\n" +
          "kb/latin.md:9: warning: not valid UTF-8 (saved in another encoding?); the invalid bytes were read as U+FFFD [invalid-utf8]\n",
      );
      const queried = await run(["query", "cafe", "--kb", "kb"], { cwd: directory });
      expect(queried.code).toBe(0);
      expect(queried.stderr).toContain("kb/latin.md:9: warning: not valid UTF-8");
      const validated = await run(["validate", "kb"], { cwd: directory });
      expect(validated.stdout).toContain("kb/binary.md:9: warning: contains NUL bytes");
    });
  });

  it("a UTF-16 file: the syntax error says the file may not be text", async () => {
    await withTemporaryDirectory(async (directory) => {
      const utf16 = Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(markdown("wide"), "utf16le")]);
      await writeFile(join(directory, "wide.md"), utf16);
      const error = await compileError(() => compileKnowledgeBase(["wide.md"], { cwd: directory }));
      expect(error.code).toBe("missing-front-matter");
      expect(error.hint).toContain("The file may not be text: line 1: not valid UTF-8");
      expect(error.hint).toContain("line 1: contains NUL bytes");
    });
  });

  it("a manifest with invalid UTF-8 loads with the warning", async () => {
    await withTemporaryDirectory(async (directory) => {
      const manifest = {
        schemaVersion: "1",
        contentVersion: "v1",
        generatedAt: "2026-01-01T00:00:00.000Z",
        catalogs: [
          {
            id: "c",
            entries: [{ id: "a", title: "Caf", summary: "s", domain: "d", integrations: [] }],
          },
        ],
      };
      const text = Buffer.from(JSON.stringify(manifest, null, 2));
      const at = text.indexOf("Caf") + 3;
      await writeFile(
        join(directory, "kb.json"),
        Buffer.concat([text.subarray(0, at), Buffer.from([0xe9]), text.subarray(at)]),
      );
      const loaded = await readKnowledgeBase("kb.json", { cwd: directory });
      expect(loaded.notes.map((note) => [note.code, note.file, note.line])).toEqual([
        ["invalid-utf8", "kb.json", 11],
      ]);
      expect(loaded.manifest.catalogs[0]!.entries[0]!.title).toBe("Caf\uFFFD");
    });
  });
});
