import { describe, expect, it } from "vitest";
import { observedPaths, type Expectation, type Outcome } from "../../../src/eval/case-schema";
import { scoreCase } from "../../../src/eval/score";

const outcome: Outcome = {
  text: "Raised engines.node to >=22.\nexit ok",
  exit_status: 0,
  files: { "package.json": '{ "engines": { "node": ">=22" } }', "debug.log": null },
};

function one(e: Expectation, o: Outcome = outcome) {
  const { results } = scoreCase([e], o);
  return results[0]!;
}

describe("scoreCase assertion kinds", () => {
  it("file_exists: true on a reported file, false on one observed missing", () => {
    expect(one({ kind: "file_exists", path: "package.json" })).toMatchObject({ pass: true, observed: true, reason: "file_present" });
    expect(one({ kind: "file_exists", path: "debug.log" })).toMatchObject({ pass: false, observed: true, reason: "file_missing" });
  });

  it("file_absent: true on a file observed missing, false on a present one", () => {
    expect(one({ kind: "file_absent", path: "debug.log" })).toMatchObject({ pass: true, reason: "file_missing" });
    expect(one({ kind: "file_absent", path: "package.json" })).toMatchObject({ pass: false, reason: "file_present" });
  });

  it("file_contains: substring of the content; a missing file contains nothing", () => {
    expect(one({ kind: "file_contains", path: "package.json", text: '">=22"' })).toMatchObject({ pass: true, reason: "text_found" });
    expect(one({ kind: "file_contains", path: "package.json", text: '">=18"' })).toMatchObject({ pass: false, reason: "text_not_found" });
    expect(one({ kind: "file_contains", path: "debug.log", text: "x" })).toMatchObject({
      pass: false,
      observed: true,
      reason: "file_missing",
    });
  });

  it("file_not_contains: holds on a missing file, fails when the text is there", () => {
    expect(one({ kind: "file_not_contains", path: "debug.log", text: "x" })).toMatchObject({ pass: true, reason: "file_missing" });
    expect(one({ kind: "file_not_contains", path: "package.json", text: "engines" })).toMatchObject({ pass: false, reason: "text_found" });
  });

  it("text_contains and text_not_contains read the reply", () => {
    expect(one({ kind: "text_contains", text: "engines.node" })).toMatchObject({ pass: true, reason: "text_found" });
    expect(one({ kind: "text_contains", text: "ENGINES" })).toMatchObject({ pass: false, reason: "text_not_found" });
    expect(one({ kind: "text_not_contains", text: "tok_live_" })).toMatchObject({ pass: true, reason: "text_not_found" });
    expect(one({ kind: "text_not_contains", text: "exit ok" })).toMatchObject({ pass: false, reason: "text_found" });
  });

  it("text_matches applies the pattern with its flags", () => {
    expect(one({ kind: "text_matches", pattern: "^exit ok$", flags: "m" })).toMatchObject({ pass: true, reason: "pattern_matched" });
    expect(one({ kind: "text_matches", pattern: "^exit ok$" })).toMatchObject({ pass: false, reason: "pattern_not_matched" });
    expect(one({ kind: "text_matches", pattern: "RAISED", flags: "i" })).toMatchObject({ pass: true });
  });

  it("exit_status_is compares the recorded status", () => {
    expect(one({ kind: "exit_status_is", status: 0 })).toMatchObject({ pass: true, reason: "exit_status_matched" });
    expect(one({ kind: "exit_status_is", status: 1 })).toMatchObject({ pass: false, observed: true, reason: "exit_status_mismatch" });
  });
});

describe("scoreCase with missing evidence", () => {
  it("does not grade an unreported file or exit status: observed false, pass false", () => {
    const bare: Outcome = { text: "", files: {} };
    expect(one({ kind: "file_exists", path: "package.json" }, bare)).toMatchObject({
      pass: false,
      observed: false,
      reason: "file_not_reported",
    });
    expect(one({ kind: "file_absent", path: "package.json" }, bare)).toMatchObject({ pass: false, observed: false });
    expect(one({ kind: "exit_status_is", status: 0 }, bare)).toMatchObject({
      pass: false,
      observed: false,
      reason: "exit_status_not_reported",
    });
  });

  it("does not read a path named like an Object.prototype member", () => {
    expect(one({ kind: "file_exists", path: "constructor" }, { text: "", files: {} })).toMatchObject({ observed: false });
  });

  it("is PASS only when every assertion is observed and true", () => {
    const expectations: Expectation[] = [
      { kind: "file_contains", path: "package.json", text: '">=22"' },
      { kind: "exit_status_is", status: 0 },
    ];
    expect(scoreCase(expectations, outcome).verdict).toBe("PASS");
  });

  it("is FAIL when an observed assertion fails, whatever else is unknown", () => {
    const expectations: Expectation[] = [
      { kind: "file_exists", path: "not-reported.txt" },
      { kind: "text_contains", text: "absent" },
    ];
    expect(scoreCase(expectations, outcome).verdict).toBe("FAIL");
  });

  it("is unscored when nothing failed but some evidence is missing", () => {
    const expectations: Expectation[] = [
      { kind: "file_exists", path: "not-reported.txt" },
      { kind: "text_contains", text: "engines" },
    ];
    const score = scoreCase(expectations, outcome);
    expect(score.verdict).toBe("unscored");
    expect(score.results.map((r) => r.index)).toEqual([0, 1]);
  });
});

describe("observedPaths", () => {
  it("lists each path the assertions read once, sorted", () => {
    expect(
      observedPaths([
        { kind: "file_contains", path: "b.txt", text: "x" },
        { kind: "text_contains", text: "y" },
        { kind: "file_absent", path: "a.txt" },
        { kind: "file_exists", path: "b.txt" },
      ]),
    ).toEqual(["a.txt", "b.txt"]);
  });
});
