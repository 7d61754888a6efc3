/// <reference types="vite/client" />
import { describe, expect, it } from "vitest";
import { BUNDLED_SUITE_FILES } from "../../../src/eval/bundled-suites";
import { transcriptOutcome } from "../../../src/eval/case-schema";
import { scoreCase } from "../../../src/eval/score";
import { loadCase, loadSuites, type SuiteFile } from "../../../src/eval/suites";

// Vite (not the Worker) lists the directory, so a case file missing from bundled-suites.ts is caught here.
const onDisk = import.meta.glob<string>("../../../evals/**/*.toml", { query: "?raw", import: "default", eager: true });

const GOOD = `
[case]
prompt = "Add dist/ to .gitignore."
acceptance_criteria = [".gitignore ignores dist/"]

[[expect]]
kind = "file_contains"
path = ".gitignore"
text = "dist/"

[transcript]
gold = "PASS"
text = "Added dist/."

[transcript.files]
".gitignore" = "dist/\\n"
`;

function file(text: string, path = "evals/demo/add-dist.toml"): SuiteFile {
  return { path, text };
}

function errorsOf(text: string, path?: string) {
  const result = loadSuites([file(text, path)]);
  if (result.ok) throw new Error("expected the load to fail");
  return result.errors;
}

describe("the shipped suites", () => {
  it("bundles exactly the case files under evals/", () => {
    const bundled = Object.fromEntries(BUNDLED_SUITE_FILES.map((f) => [f.path, f.text]));
    const disk = Object.fromEntries(Object.entries(onDisk).map(([p, text]) => [p.replace(/^(\.\.\/)+/, ""), text]));
    expect(bundled).toEqual(disk);
  });

  it("load and validate: two suites of at least six cases, each with mixed PASS/FAIL gold", () => {
    const result = loadSuites();
    expect(result).toMatchObject({ ok: true });
    if (!result.ok) return;
    expect(result.suites.map((s) => s.domain)).toEqual(["config-edits", "log-triage"]);
    for (const suite of result.suites) {
      expect(suite.cases.length).toBeGreaterThanOrEqual(6);
      expect(suite.gold_pass).toBeGreaterThan(0);
      expect(suite.gold_fail).toBeGreaterThan(0);
      expect(suite.gold_pass + suite.gold_fail).toBe(suite.cases.length);
    }
  });

  it("grade every recorded transcript to its declared gold", () => {
    const result = loadSuites();
    if (!result.ok) throw new Error(JSON.stringify(result.errors));
    for (const c of result.suites.flatMap((s) => s.cases)) {
      expect(c.transcript, c.file).toBeDefined();
      expect(scoreCase(c.expect, transcriptOutcome(c.transcript!)).verdict, c.file).toBe(c.transcript!.gold);
      expect(c.team_acceptance, c.file).toBeDefined();
    }
  });

  it("give each case its domain, id, fixture and assertions", () => {
    const result = loadSuites();
    if (!result.ok) throw new Error("load failed");
    const c = result.suites[1]!.cases.find((x) => x.id === "fix-failing-test")!;
    expect(c).toMatchObject({ domain: "log-triage", id: "fix-failing-test", file: "evals/log-triage/fix-failing-test.toml" });
    expect(Object.keys(c.workspace_files).sort()).toEqual(["src/sum.test.ts", "src/sum.ts"]);
    expect(c.transcript?.gold).toBe("FAIL");
  });
});

describe("loadSuites refusals name the file and the field", () => {
  it("accepts a well-formed case", () => {
    expect(loadSuites([file(GOOD)])).toMatchObject({ ok: true, suites: [{ domain: "demo", gold_pass: 1, gold_fail: 0 }] });
  });

  it("names a regex that does not compile", () => {
    const text = GOOD.replace(
      'kind = "file_contains"\npath = ".gitignore"\ntext = "dist/"',
      'kind = "text_matches"\npattern = "(unclosed"',
    );
    expect(errorsOf(text)).toEqual([
      { file: "evals/demo/add-dist.toml", field: "expect[0].pattern", message: expect.stringContaining("regular expression") },
    ]);
  });

  it("names a missing prompt", () => {
    expect(errorsOf(GOOD.replace('prompt = "Add dist/ to .gitignore."\n', ""))).toEqual([
      { file: "evals/demo/add-dist.toml", field: "case.prompt", message: expect.any(String) },
    ]);
  });

  it("names an unknown key instead of silently dropping it", () => {
    const errors = errorsOf(GOOD.replace('text = "dist/"', 'text = "dist/"\nnegate = true'));
    expect(errors).toEqual([{ file: "evals/demo/add-dist.toml", field: "expect[0].negate", message: expect.any(String) }]);
  });

  it("names an unknown assertion kind", () => {
    expect(errorsOf(GOOD.replace('kind = "file_contains"', 'kind = "file_matches"'))[0]).toMatchObject({ field: "expect[0].kind" });
  });

  it("names a path that escapes the workspace", () => {
    expect(errorsOf(GOOD.replace('path = ".gitignore"', 'path = "../.gitignore"'))[0]).toMatchObject({ field: "expect[0].path" });
  });

  it("refuses a transcript whose declared gold its assertions contradict", () => {
    const errors = errorsOf(GOOD.replace('gold = "PASS"', 'gold = "FAIL"'));
    expect(errors).toEqual([
      { file: "evals/demo/add-dist.toml", field: "transcript.gold", message: expect.stringContaining("grade the transcript PASS") },
    ]);
  });

  it("refuses a transcript that cannot grade an assertion", () => {
    const errors = errorsOf(GOOD.replace('[transcript.files]\n".gitignore" = "dist/\\n"', ""));
    expect(errors[0]).toMatchObject({ field: "expect[0]", message: expect.stringContaining("file_not_reported") });
  });

  it("refuses a file both recorded and listed as missing", () => {
    const errors = errorsOf(GOOD.replace('text = "Added dist/."', 'text = "Added dist/."\nmissing_files = [".gitignore"]'));
    expect(errors[0]).toMatchObject({ field: "transcript.missing_files" });
  });

  it("names a TOML syntax error with its line", () => {
    expect(errorsOf(GOOD.replace("[[expect]]", "[[expect]"))[0]).toMatchObject({
      field: "toml",
      message: expect.stringMatching(/^line 6, column/),
    });
  });

  it("refuses a file outside evals/<domain>/<case>.toml and a bad slug", () => {
    expect(errorsOf(GOOD, "evals/add-dist.toml")[0]).toMatchObject({ field: "path" });
    expect(errorsOf(GOOD, "evals/Demo/add-dist.toml")[0]).toMatchObject({ field: "path" });
  });

  it("reports every bad file, and loads nothing when any is bad", () => {
    const result = loadSuites([file(GOOD), file("[case]", "evals/demo/a.toml"), file(GOOD, "evals/demo/add-dist.toml")]);
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.errors.map((e) => `${e.file} ${e.field}`)).toEqual([
      "evals/demo/a.toml case.prompt",
      "evals/demo/a.toml case.acceptance_criteria",
      "evals/demo/a.toml expect",
      "evals/demo/add-dist.toml path",
    ]);
  });

  it("loadCase reads one case without a suite", () => {
    expect(loadCase(file(GOOD))).toMatchObject({ ok: true, case: { domain: "demo", id: "add-dist", workspace_files: {} } });
  });
});
