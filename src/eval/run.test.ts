import { describe, expect, it } from "vitest";
import { EvalDataError, parseBeirQueries, parseQrels, parseQuestions } from "./data.js";
import { calibrate, discrimination } from "./run.js";

describe("confidence calibration figures", () => {
  const results = [
    { confidence: "high" as const, topRelevant: true },
    { confidence: "medium" as const, topRelevant: true },
    { confidence: "medium" as const, topRelevant: false },
    { confidence: "low" as const, topRelevant: false },
  ];

  it("counts queries and relevant top results per class", () => {
    expect(calibrate(results)).toEqual({
      high: { count: 1, relevantTop: 1, precision: 1 },
      medium: { count: 2, relevantTop: 1, precision: 0.5 },
      low: { count: 1, relevantTop: 0, precision: 0 },
      none: { count: 0, relevantTop: 0, precision: null },
    });
  });

  it("computes the class AUC by hand: pairs (high,medium) (high,low) (medium,low) win, (medium,medium) ties", () => {
    expect(discrimination(results)).toBe(3.5 / 4);
    expect(discrimination(results.map((result) => ({ ...result, confidence: "medium" as const })))).toBe(0.5);
    expect(discrimination(results.filter((result) => result.topRelevant))).toBeNull();
    expect(
      discrimination([
        { confidence: "low", topRelevant: true },
        { confidence: "high", topRelevant: false },
      ]),
    ).toBe(0);
  });
});

describe("query and judgment files", () => {
  it("reads BEIR TSV with a header and TREC four-column qrels", () => {
    const beir = parseQrels("query-id\tcorpus-id\tscore\nq1\td1\t2\nq1\td2\t0\nq2\td1\t1\n", "x.tsv");
    expect([...beir.get("q1")!]).toEqual([
      ["d1", 2],
      ["d2", 0],
    ]);
    const trec = parseQrels("401 0 FT1 1\n401 0 FT2 0\n", "x.qrels");
    expect([...trec.get("401")!]).toEqual([
      ["FT1", 1],
      ["FT2", 0],
    ]);
    expect(() => parseQrels("q1\td1\t1\nq1\td2\tmuch\n", "x.tsv")).toThrow(
      'x.tsv:2: grade must be a number, got "much"',
    );
    expect(() => parseQrels("\n", "x.tsv")).toThrow("x.tsv: no judgments found");
  });

  it("reads BEIR queries and rejects duplicates and missing fields with the line", () => {
    expect(parseBeirQueries('{"_id": 1, "text": "a"}\n\n{"_id": "b", "text": "c"}\n', "q.jsonl")).toEqual([
      { id: "1", text: "a" },
      { id: "b", text: "c" },
    ]);
    expect(() => parseBeirQueries('{"_id": "a", "text": "x"}\n{"_id": "a", "text": "y"}', "q.jsonl")).toThrow(
      'q.jsonl:2: duplicate query id "a"',
    );
    expect(() => parseBeirQueries('{"text": "x"}', "q.jsonl")).toThrow('q.jsonl:1: line has no "_id"');
    expect(() => parseBeirQueries("{", "q.jsonl")).toThrow(EvalDataError);
  });

  it("reads question files: expected ids are grade-1 judgments, integrations per question", () => {
    const { queries, qrels } = parseQuestions(
      [
        { question: "How?", expected: ["a.b"] },
        { question: "Why?", expected: ["c", "d"], integrations: ["slack"] },
      ],
      "questions.json",
    );
    expect(queries).toEqual([
      { id: "q1", text: "How?" },
      { id: "q2", text: "Why?", integrations: ["slack"] },
    ]);
    expect([...qrels.get("q2")!]).toEqual([
      ["c", 1],
      ["d", 1],
    ]);
    expect(() => parseQuestions([{ question: "x", expected: [] }], "questions.json")).toThrow(
      "questions.json: [0].expected must be a non-empty array of entry ids",
    );
    expect(() =>
      parseQuestions([{ question: "x", expected: ["a"], integrations: "slack" }], "q.json"),
    ).toThrow("q.json: [0].integrations must be an array of strings");
    expect(() => parseQuestions({}, "q.json")).toThrow("q.json: must be a JSON array of questions");
    expect(
      parseQuestions([{ question: "x", expected: ["a"], passage: "the answer" }], "q.json").queries,
    ).toEqual([{ id: "q1", text: "x", passage: "the answer" }]);
    expect(() => parseQuestions([{ question: "x", expected: ["a"], passage: " " }], "q.json")).toThrow(
      "q.json: [0].passage must be a non-empty string",
    );
  });
});

describe("failing queries name the cut-off that removed a relevant entry", () => {
  it("a relevant second entry below the relative floor is reported as cut by minRelativeScore", async () => {
    const { normalizeAndValidate } = await import("../knowledge/resolve.js");
    const { evaluateConfigurations } = await import("./run.js");
    const { entries } = normalizeAndValidate(
      [
        {
          id: "s",
          entries: [
            {
              id: "refunds",
              title: "Refunds",
              summary: "refund refund refund",
              domain: "d",
              integrations: [],
            },
            {
              id: "refund-fees",
              title: "Fees",
              summary: "a refund costs a fee",
              domain: "d",
              integrations: [],
            },
          ],
        },
      ],
      { manifestVersion: "1" },
    );
    const report = evaluateConfigurations(
      entries,
      [{ id: "q", text: "refund" }],
      new Map([["q", new Map([["refund-fees", 1]])]]),
      [{ name: "floor", settings: { retrieval: { minRelativeScore: 1 } } }],
      { warmup: 0 },
    );
    const [failure] = report.configurations[0]!.failures;
    expect(failure?.included.map((entry) => entry.id)).toEqual(["refunds"]);
    expect(failure?.expected[0]).toMatchObject({
      id: "refund-fees",
      code: "cut",
      reason: expect.stringMatching(/^cut by minRelativeScore: its score is below \d+\.\d\d$/),
    });
  });
});
