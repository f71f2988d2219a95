import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { propertyRuns, propertySeed } from "../../test/property/seed.js";
import { findJsonSyntaxError, lineAndColumn, locateJsonSyntaxError } from "./json.js";

function parses(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}

function locate(text: string) {
  try {
    JSON.parse(text);
  } catch (error) {
    return locateJsonSyntaxError(text, error);
  }
  throw new Error("expected a syntax error");
}

describe("JSON syntax error location", () => {
  it("names the line and column where the text stops being JSON", () => {
    expect(locate('{\n  "a": 1,\n  "b": tru\n}')).toEqual({
      line: 3,
      column: 11,
      reason: "Unexpected token '\\n'",
    });
    expect(locate('{"a": 1,}')).toMatchObject({ line: 1, column: 9 });
    expect(locate('{\n  "catalogs": [\n')).toEqual({
      line: 3,
      column: 1,
      reason: "Unexpected end of JSON input",
    });
    expect(locate("[1, 2] x")).toMatchObject({ line: 1, column: 8 });
    expect(locate('{"a": "b\nc"}')).toMatchObject({ line: 1, column: 9 });
    expect(locate('{"a": "\\x"}')).toMatchObject({ line: 1, column: 9 });
    expect(locate('{"a": "\\u12G4"}')).toMatchObject({ line: 1, column: 12 });
    expect(locate("[01]")).toMatchObject({ line: 1, column: 3 });
    expect(locate("[1.]")).toMatchObject({ line: 1, column: 4 });
    expect(locate("[1e+]")).toMatchObject({ line: 1, column: 5 });
    expect(locate("// comment\n{}")).toMatchObject({ line: 1, column: 1 });
    expect(locate("")).toMatchObject({ line: 1, column: 1 });
    expect(locate('\r\n{"a" 1}')).toMatchObject({ line: 2, column: 6 });
  });

  it("deep nesting does not overflow the stack", () => {
    const deep = `${"[".repeat(200_000)}${"]".repeat(199_999)}`;
    expect(findJsonSyntaxError(deep)).toBe(deep.length);
    expect(findJsonSyntaxError(`${"[".repeat(200_000)}${"]".repeat(200_000)}`)).toBe(-1);
  });

  it("lineAndColumn counts from 1", () => {
    expect(lineAndColumn("ab\ncd", 0)).toEqual({ line: 1, column: 1 });
    expect(lineAndColumn("ab\ncd", 3)).toEqual({ line: 2, column: 1 });
    expect(lineAndColumn("ab\ncd", 5)).toEqual({ line: 2, column: 3 });
  });

  it("agrees with JSON.parse on what is valid, on JSON and on damaged JSON (property)", () => {
    const damaged = fc
      .tuple(
        fc.json(),
        fc.nat(),
        fc.constantFrom("", ",", "}", "]", '"', ":", "x", "\\", "\n", "0", "-", "{", "["),
      )
      .map(([text, at, insert]) => {
        const position = text.length === 0 ? 0 : at % (text.length + 1);
        return `${text.slice(0, position)}${insert}${text.slice(position + (at % 2))}`;
      });
    fc.assert(
      fc.property(fc.oneof(fc.json(), damaged, fc.string()), (text) => {
        const offset = findJsonSyntaxError(text);
        expect(offset === -1).toBe(parses(text));
        if (offset !== -1) {
          expect(offset).toBeGreaterThanOrEqual(0);
          expect(offset).toBeLessThanOrEqual(text.length);
          // The first bad character: the text before it has no error of its own (it is JSON, or JSON cut short).
          expect([-1, offset]).toContain(findJsonSyntaxError(text.slice(0, offset)));
        }
      }),
      { seed: propertySeed("JSON syntax error offset"), numRuns: propertyRuns(500) },
    );
  });
});
