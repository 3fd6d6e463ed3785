// host/user-input.ts: the known name nearest a misspelt one, and where JSON text breaks (issue 29 §3).
import { describe, it, expect } from "vitest";
import { editDistance, nearest, jsonSyntaxError, parseJson, JsonTextError } from "../host/user-input.js";

describe("did you mean", () => {
  it("finds the nearest known name within a third of its letters, case aside, and none when two tie", () => {
    expect([editDistance("trafic", "traffic"), editDistance("topolgy", "topology"), editDistance("tset", "test"), editDistance("JSON", "json")]).toEqual([1, 1, 1, 0]);
    expect(nearest("fabirc", ["name", "fabric", "faults"])).toBe("fabric"); // two letters swapped: one edit
    expect(nearest("messagebytes", ["messages", "messageBytes"])).toBe("messageBytes");
    expect(nearest("frobnicate", ["run", "fw", "help"])).toBeNull();
    expect(nearest("ab", ["ax", "ay"])).toBeNull(); // a tie: no guess
  });
});

describe("where JSON text breaks", () => {
  it("agrees with JSON.parse on what is JSON, and says the line and column of the first error", () => {
    const json = ["{}", "[]", "1", "-0.5e+3", '"a\\u00e9\\n"', '{"a":[1,{"b":null}],"c":true}', " [ ] \n"];
    for (const t of json) expect(jsonSyntaxError(t), t).toBeNull();
    const broken: [string, string][] = [
      ['{\n  "a": 1,\n}', `3:1 expected a double-quoted property name, got "}"`],
      ['{"a": 1', "1:8 expected ',' or '}', got the end of the text"],
      ["", "1:1 expected a value, got the end of the text"],
      ["[1, 2,, 3]", '1:7 expected a value, got ","'], // Node 20's message has no position for this one
      ['{"a" 1}', '1:6 expected \':\' after the property name, got "1"'],
      ['{"a":1} x', '1:9 expected the end of the text after the value, got "x"'],
      ['["é", x]', '1:7 expected a value, got "x"'], // columns count characters
      ['"\\q"', '1:3 a bad escape in a string, got "q"'],
      ["01", '1:2 expected the end of the text after the value, got "1"'],
      ['"a\nb"', '1:3 a control character in a string (write it as an escape, \\n for a new line), got "\\n"'],
      ["[", "1:2 expected a value, got the end of the text"],
    ];
    for (const [t, want] of broken) {
      expect(() => JSON.parse(t), t).toThrow();
      const e = jsonSyntaxError(t)!;
      expect(`${e.line}:${e.column} ${e.message}`, t).toBe(want);
    }
    expect(() => parseJson('{\n  "a": 1,\n}')).toThrow(new JsonTextError(3, 1, 'expected a double-quoted property name, got "}"'));
    expect(() => parseJson("{,}")).toThrow(/^line 1, column 2: expected a double-quoted property name or '}', got ","$/);
  });
});
