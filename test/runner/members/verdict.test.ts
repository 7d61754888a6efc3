import { describe, expect, it } from "vitest";
import { parseVerdict } from "../../../local-runner/src/members/verdict.ts";

describe("parseVerdict", () => {
  it.each([
    ['{"verdict":"PASS","reasons":[]}', { verdict: "PASS", reasons: [] }],
    ['{"verdict":"fail","reasons":["notes/b.md missing"]}', { verdict: "FAIL", reasons: ["notes/b.md missing"] }],
    ['```json\n{"verdict":"FAIL","reasons":["x"]}\n```', { verdict: "FAIL", reasons: ["x"] }],
    ['Here is my verdict: {"verdict":"PASS","reasons":["all receipts exist"]}', { verdict: "PASS", reasons: ["all receipts exist"] }],
    ["PASS", { verdict: "PASS", reasons: [] }],
    ["FAIL: notes/b.md is missing", { verdict: "FAIL", reasons: ["notes/b.md is missing"] }],
    ["**FAIL** the index does not link b", { verdict: "FAIL", reasons: ["the index does not link b"] }],
  ])("reads %j", (text, expected) => {
    expect(parseVerdict(text)).toEqual(expected);
  });

  it.each([
    "",
    "FAKE_OK: looks fine to me",
    "I think it passes", // not a leading token
    '{"verdict":"MAYBE"}',
    '{"decision":"PASS"}',
    "PASSED with flying colours", // PASS must be a whole word
    '{"verdict":"PASS"', // broken JSON, and no leading token
  ])("fails closed on %j (unparseable, never a guessed PASS)", (text) => {
    expect(parseVerdict(text)).toBeUndefined();
  });
});
