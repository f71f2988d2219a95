/** The README's engine example is run as written (with the package import pointed at the source). */
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it, vi } from "vitest";

const root = join(import.meta.dirname, "..");

describe("README", () => {
  it("the ten-line engine example runs and prints a cited block with high confidence", async () => {
    const readme = await readFile(join(root, "README.md"), "utf8");
    const section = readme.slice(readme.indexOf("## Use the engine"));
    const code = /```ts\n([\s\S]*?)```/.exec(section)?.[1];
    expect(code).toBeDefined();
    expect(code!.trim().split("\n").length).toBeLessThanOrEqual(12);
    const directory = await mkdtemp(join(root, "test", ".readme-"));
    const logged: unknown[][] = [];
    const spy = vi.spyOn(console, "log").mockImplementation((...args: unknown[]) => {
      logged.push(args);
    });
    try {
      const file = join(directory, "example.ts");
      await writeFile(
        file,
        code!.replace('from "lexground"', `from ${JSON.stringify(join(root, "src/index.ts"))}`),
      );
      await import(file);
    } finally {
      spy.mockRestore();
      await rm(directory, { recursive: true, force: true });
    }
    const [content, confidence] = logged[0]!;
    expect(content).toContain("[KB:payouts.instant@2026-07-14]");
    expect(confidence).toBe("high");
  });
});
