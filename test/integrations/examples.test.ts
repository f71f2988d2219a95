/** The integration examples run offline and print what their comments promise. */
import { execFile } from "node:child_process";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const run = promisify(execFile);

async function runExample(path: string): Promise<string> {
  const { stdout, stderr } = await run(process.execPath, ["--import", "tsx", path], {
    cwd: root,
    // Offline by construction: no provider keys reach the example.
    env: { PATH: process.env.PATH ?? "", NODE_ENV: "test" },
    timeout: 120_000,
  });
  expect(stderr).toBe("");
  return stdout;
}

const VERSION = "[0-9a-f]{12}";

describe.concurrent("examples", () => {
  it("examples/ai-sdk/grounded-generate.ts grounds generate, stream and a tool loop", async () => {
    const output = await runExample("examples/ai-sdk/grounded-generate.ts");
    const [intro, turn1, turn2, turn3] = output.split(/\nTurn \d: /);
    expect(intro).toMatch(/^Knowledge base: \d+ entries\n$/);

    expect(turn1).toContain('[grounding] "What does payouts.instantEnabled do?"');
    expect(turn1).toMatch(
      new RegExp(`answer: +payouts\\.instantEnabled .+ \\[KB:payouts\\.instant-payouts@${VERSION}\\]\\n`),
    );
    expect(turn1).toMatch(/top 3: +payouts\.instant-payouts, /);
    expect(turn1).toContain("confidence: high");

    expect(turn2).toMatch(/^streamText, scoped to the WooCommerce integration/);
    expect(turn2).toMatch(
      new RegExp(`answer: +.+\\[KB:integrations\\.woocommerce-plugin-settings@${VERSION}\\]\\n`),
    );
    expect(turn2).toMatch(/top 3: +integrations\.woocommerce-plugin-settings, /);

    // One grounding for the two steps of the tool loop; the tool found the right entry first.
    expect(turn3!.match(/\[grounding\]/g)).toHaveLength(1);
    expect(turn3).toMatch(new RegExp(`tool found: \\[KB:api\\.rotate-api-key@${VERSION}\\] `));
    expect(turn3).toMatch(new RegExp(`answer: +.+\\[KB:api\\.rotate-api-key@${VERSION}\\]\\n`));
    expect(turn3).toMatch(/steps: +2\n$/);
  });

  it("examples/langchain/retriever.ts retrieves scoped documents and answers through a chain", async () => {
    const output = await runExample("examples/langchain/retriever.ts");
    const [, unscoped, scoped, chain] = output.split(/\n(?=Why are refunds|Chain answer)/);
    const citations = (block: string | undefined) =>
      [...(block ?? "").matchAll(/\[KB:([^@\]]+)@/g)].map((match) => match[1]);

    expect(unscoped).toContain("(no integrations enabled)");
    expect(citations(unscoped)).toHaveLength(4);
    expect(citations(unscoped).some((id) => id?.startsWith("integrations.shopify"))).toBe(false);

    expect(scoped).toContain("(Shopify enabled)");
    expect(citations(scoped)[0]).toBe("integrations.shopify-refunds-not-syncing");
    expect(scoped).toMatch(
      /^ +\d+\.\d\d {2}\[KB:integrations\.shopify-refunds-not-syncing@[0-9a-f]{12}\] {2}confidence \w+$/m,
    );

    expect(chain).toMatch(
      new RegExp(`^Chain answer: .+\\[KB:integrations\\.shopify-refunds-not-syncing@${VERSION}\\]\\n$`),
    );
  });
});
