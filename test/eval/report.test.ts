import { readFile, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { loadEvalCollection } from "../../src/eval/collection.js";
import { escapeHtml, renderHtmlReport } from "../../src/eval/report.js";
import { diffConfigurations, evaluateConfigurations } from "../../src/eval/run.js";
import { chromiumAvailable, withChromium } from "../support/chromium.js";
import { withTemporaryDirectory, writeTinyBeir } from "./helpers.js";

async function tinyReport(directory: string, names: [string, string]) {
  const folder = await writeTinyBeir(directory);
  const collection = await loadEvalCollection(folder);
  const report = evaluateConfigurations(
    collection.entries,
    collection.queries,
    collection.qrels,
    [
      { name: names[0], settings: {} },
      { name: names[1], settings: { retrieval: { fieldWeights: { summary: 0, body: 0 } } } },
    ],
    { ignoreIdenticalIds: false, warmup: 2 },
  );
  const html = renderHtmlReport(report, {
    knowledgeBase: folder,
    queriesFile: collection.queriesFile,
    qrelsFile: collection.qrelsFile,
    command: "lexground eval --kb tiny",
    diff: {
      first: names[0],
      second: names[1],
      queries: diffConfigurations(report.configurations[0]!, report.configurations[1]!, collection.queries),
    },
  });
  return { report, html };
}

describe("HTML report", () => {
  it("is one self-contained document: four inline SVG plots, no scripts, no external assets", async () => {
    await withTemporaryDirectory(async (directory) => {
      const { html } = await tinyReport(directory, ["default", "titles only"]);
      expect(html.startsWith("<!doctype html>")).toBe(true);
      expect(html.match(/<svg viewBox/g)?.length).toBe(4);
      expect(html).not.toMatch(/<script|<link|<img|<iframe|\bsrc=|url\(|@import/i);
      expect(html).not.toMatch(/https?:\/\//);
      for (const heading of [
        "Ranking quality per configuration",
        "What each turn hands the model",
        "Failing queries",
        "Confidence calibration",
        "Latency",
      ]) {
        expect(html).toContain(heading);
      }
      expect(html).toContain("Per-query differences: default → titles only");
      expect(html).toContain("wind electricity");
      // Every metric of both configurations is in the table, to four decimals.
      expect(html).toContain('<td class="num">0.5436</td>');
    });
  });

  it("escapes configuration names, queries and paths", async () => {
    await withTemporaryDirectory(async (directory) => {
      const { html } = await tinyReport(directory, ['<b onmouseover="x">a&b</b>', "second"]);
      expect(html).not.toContain("<b onmouseover");
      expect(html).toContain(escapeHtml('<b onmouseover="x">a&b</b>'));
      expect(escapeHtml(`<a href='x'>&"`)).toBe("&lt;a href=&#39;x&#39;&gt;&amp;&quot;");
    });
  });

  it("renders in headless Chromium", async (context) => {
    if (!chromiumAvailable("report", "the headless rendering check")) context.skip();
    await withTemporaryDirectory(async (directory) => {
      const { html } = await tinyReport(directory, ["default", "titles only"]);
      const file = join(directory, "report.html");
      await writeFile(file, html);
      await withChromium(async (runChromium) => {
        // The DOM Chromium built: the plots are there as SVG elements with their bars and curves.
        const dom = await runChromium(["--dump-dom", `file://${file}`]);
        expect(dom.match(/<svg viewBox/g)?.length).toBe(4);
        expect(dom).toContain("<polyline");
        expect(dom.match(/<rect x=/g)?.length).toBeGreaterThanOrEqual(8);
        // And a screenshot of the page: a real PNG of the requested size, not a blank page.
        const screenshot = join(directory, "report.png");
        await runChromium([`--screenshot=${screenshot}`, "--window-size=1000,1400", `file://${file}`]);
        const png = await readFile(screenshot);
        expect(png.subarray(1, 4).toString("latin1")).toBe("PNG");
        expect(png.readUInt32BE(16)).toBe(1000);
        expect(png.readUInt32BE(20)).toBe(1400);
        expect((await stat(screenshot)).size).toBeGreaterThan(20_000);
      });
    });
  });
});
