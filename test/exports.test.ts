/** Every path in package.json `exports` points at a module that exists in the source (and so in `dist/`). */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";

const root = join(import.meta.dirname, "..");
const manifest = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as {
  exports: Record<string, string | Record<string, string>>;
  bin: Record<string, string>;
};

describe("package exports", () => {
  it.each(Object.entries(manifest.exports).filter(([, target]) => typeof target === "object"))(
    "%s has a source module for every condition",
    (_, target) => {
      const conditions = target as Record<string, string>;
      expect(Object.keys(conditions).at(-1), "default comes last").toBe("default");
      expect(Object.keys(conditions)).not.toContain("import");
      for (const [condition, path] of Object.entries(conditions)) {
        if (condition === "node-addons") {
          // Node's entry of the root export, written by the build from the default one (scripts/engineScript.mjs).
          expect(path, condition).toBe(conditions.default!.replace(/\.js$/, ".node.js"));
          continue;
        }
        const source =
          condition === "types"
            ? path.replace("./dist/", "src/").replace(/\.d\.ts$/, ".ts")
            : path.replace("./dist/", "src/").replace(/\.js$/, ".ts");
        expect(existsSync(join(root, source)), `${condition}: ${source}`).toBe(true);
      }
    },
  );
  it("the bin has a source module", () => {
    for (const target of Object.values(manifest.bin)) {
      expect(existsSync(join(root, target.replace("./dist/", "src/").replace(/\.js$/, ".ts")))).toBe(true);
    }
  });
});

describe("build script", () => {
  // That the build leaves the CLI executable is checked on the built and packed package (test/package/pack.test.ts
  // › ships the CLI executable, with a node shebang, as npm ci also builds it in the repository).
  it("npm ci builds the package: prepare runs the build", () => {
    const scripts = (
      JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as { scripts: Record<string, string> }
    ).scripts;
    expect(scripts.prepare).toBe("npm run build");
  });
});
