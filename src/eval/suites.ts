import { parse as parseToml, TomlError } from "smol-toml";
import type { z } from "zod";
import { BUNDLED_SUITE_FILES } from "./bundled-suites";
import { caseFileSchema, SLUG, transcriptOutcome, type CaseFile, type Expectation, type Transcript } from "./case-schema";
import { scoreCase } from "./score";

/**
 * Eval suites as data (issue 22 part 1). A suite is a directory `evals/<domain>/`, the domain and the
 * cluster key of the matrix statistics; each `<case_id>.toml` in it is one case. Suites are validated
 * on load and a bad case is refused naming its file and field. Loading is all or nothing: a half-loaded
 * suite would measure a different suite under the same name.
 */
export interface SuiteFile {
  /** Repository-relative path, `evals/<domain>/<case_id>.toml`. */
  path: string;
  text: string;
}

export interface EvalCase {
  domain: string;
  id: string;
  /** Where the case came from, for error messages and reports. */
  file: string;
  title?: string;
  prompt: string;
  acceptance_criteria: string[];
  team_acceptance?: string;
  /** Fixture files to write into the workspace before an executor run. */
  workspace_files: Record<string, string>;
  expect: Expectation[];
  /** Present only on cases usable by verifier cells; its gold was re-derived from `expect` on load. */
  transcript?: Transcript;
}

export interface Suite {
  domain: string;
  /** Sorted by id. */
  cases: EvalCase[];
  gold_pass: number;
  gold_fail: number;
}

export interface SuiteError {
  file: string;
  /** Dotted field path inside the case (`expect[2].pattern`), `toml` for a syntax error, `path` for a misplaced file. */
  field: string;
  message: string;
}

export type LoadSuitesResult = { ok: true; suites: Suite[] } | { ok: false; errors: SuiteError[] };

const CASE_PATH = /^evals\/([^/]+)\/([^/]+)\.toml$/;

/** The suites shipped with the Worker (bundled as text; see bundled-suites.ts), validated. */
export function loadSuites(files: readonly SuiteFile[] = BUNDLED_SUITE_FILES): LoadSuitesResult {
  const errors: SuiteError[] = [];
  const byDomain = new Map<string, EvalCase[]>();
  const seen = new Set<string>();
  for (const file of files) {
    const loaded = loadCase(file);
    if (!loaded.ok) {
      errors.push(...loaded.errors);
      continue;
    }
    const key = `${loaded.case.domain}/${loaded.case.id}`;
    if (seen.has(key)) {
      errors.push({ file: file.path, field: "path", message: `duplicate case ${key}` });
      continue;
    }
    seen.add(key);
    byDomain.set(loaded.case.domain, [...(byDomain.get(loaded.case.domain) ?? []), loaded.case]);
  }
  if (errors.length > 0) return { ok: false, errors };
  const suites = [...byDomain.entries()]
    .sort(([a], [b]) => compare(a, b))
    .map(([domain, cases]) => {
      const sorted = cases.sort((a, b) => compare(a.id, b.id));
      const golds = sorted.flatMap((c) => (c.transcript ? [c.transcript.gold] : []));
      return { domain, cases: sorted, gold_pass: count(golds, "PASS"), gold_fail: count(golds, "FAIL") };
    });
  return { ok: true, suites };
}

type LoadCaseResult = { ok: true; case: EvalCase } | { ok: false; errors: SuiteError[] };

export function loadCase(file: SuiteFile): LoadCaseResult {
  const fail = (field: string, message: string): LoadCaseResult => ({ ok: false, errors: [{ file: file.path, field, message }] });
  const m = CASE_PATH.exec(file.path);
  if (!m) return fail("path", "a case lives at evals/<domain>/<case_id>.toml");
  const [, domain = "", id = ""] = m;
  if (!SLUG.test(domain)) return fail("path", `domain directory ${JSON.stringify(domain)} must match ${SLUG}`);
  if (!SLUG.test(id)) return fail("path", `case file name ${JSON.stringify(id)} must match ${SLUG}`);

  let raw: unknown;
  try {
    raw = parseToml(file.text);
  } catch (err) {
    if (err instanceof TomlError) return fail("toml", `line ${err.line}, column ${err.column}: ${err.message.split("\n")[0]}`);
    throw err;
  }
  const parsed = caseFileSchema.safeParse(raw);
  if (!parsed.success)
    return { ok: false, errors: parsed.error.issues.map((issue) => ({ file: file.path, field: fieldOf(issue), message: issue.message })) };
  const data: CaseFile = parsed.data;

  if (data.transcript) {
    const t = data.transcript;
    const overlap = (t.missing_files ?? []).find((p) => Object.hasOwn(t.files ?? {}, p));
    if (overlap !== undefined) return fail("transcript.missing_files", `${overlap} is both recorded and listed as missing`);
    // The declared gold must be what the assertions say about the recording: a stale transcript
    // (seed 002: recorded transcripts drifted from their assertions) is refused, not believed.
    const score = scoreCase(data.expect, transcriptOutcome(t));
    if (score.verdict === "unscored") {
      const r = score.results.find((x) => !x.observed);
      return fail(`expect[${r?.index ?? 0}]`, `the transcript cannot grade this assertion (${r?.reason}); record the evidence it reads`);
    }
    if (score.verdict !== t.gold) {
      const failed = score.results.filter((x) => !x.pass).map((x) => `expect[${x.index}] ${x.detail}`);
      return fail(
        "transcript.gold",
        `declares ${t.gold} but the assertions grade the transcript ${score.verdict}${failed.length ? ` (${failed.join("; ")})` : ""}`,
      );
    }
  }

  return {
    ok: true,
    case: {
      domain,
      id,
      file: file.path,
      ...(data.case.title !== undefined ? { title: data.case.title } : {}),
      prompt: data.case.prompt,
      acceptance_criteria: data.case.acceptance_criteria,
      ...(data.case.team_acceptance !== undefined ? { team_acceptance: data.case.team_acceptance } : {}),
      workspace_files: data.workspace?.files ?? {},
      expect: data.expect,
      ...(data.transcript ? { transcript: data.transcript } : {}),
    },
  };
}

function fieldOf(issue: z.core.$ZodIssue): string {
  let out = "";
  for (const seg of issue.path) {
    if (typeof seg === "number") out += `[${seg}]`;
    else out += out === "" ? String(seg) : `.${String(seg)}`;
  }
  // An unknown key is reported on its parent; name the key itself.
  if (issue.code === "unrecognized_keys") {
    const keys = issue.keys.join(", ");
    return out === "" ? keys : `${out}.${keys}`;
  }
  return out === "" ? "(root)" : out;
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function count<T>(xs: readonly T[], v: T): number {
  return xs.filter((x) => x === v).length;
}
