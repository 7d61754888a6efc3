import type { Expectation, ExpectKind, GoldVerdict, Outcome } from "./case-schema";

/**
 * Deterministic grading of an outcome against a case's `[[expect]]` assertions (seed 002: the executor
 * cell is graded by assertions alone, no LLM judge). Each assertion is true or false with a reason
 * token. Evidence the outcome does not carry (a path the runner never reported, an exit status nobody
 * recorded) is not a pass and not a failure either: the assertion is `observed: false`, and unknown is
 * not zero, so the case is `unscored` unless an observed assertion already failed it.
 */
export const ASSERTION_REASONS = [
  "file_present",
  "file_missing",
  "file_not_reported",
  "text_found",
  "text_not_found",
  "pattern_matched",
  "pattern_not_matched",
  "exit_status_matched",
  "exit_status_mismatch",
  "exit_status_not_reported",
] as const;
export type AssertionReason = (typeof ASSERTION_REASONS)[number];

export interface AssertionResult {
  /** Index in the case's `expect` array. */
  index: number;
  kind: ExpectKind;
  pass: boolean;
  /** False when the outcome lacks the evidence this assertion reads; `pass` is then false too. */
  observed: boolean;
  reason: AssertionReason;
  detail: string;
}

/** PASS: every assertion observed and true. FAIL: an observed assertion is false. unscored: otherwise. */
export type CaseVerdict = GoldVerdict | "unscored";

export interface CaseScore {
  verdict: CaseVerdict;
  results: AssertionResult[];
}

export function scoreCase(expect: readonly Expectation[], outcome: Outcome): CaseScore {
  const results = expect.map((e, index) => ({ index, kind: e.kind, ...check(e, outcome) }));
  const verdict: CaseVerdict = results.some((r) => r.observed && !r.pass)
    ? "FAIL"
    : results.every((r) => r.observed && r.pass)
      ? "PASS"
      : "unscored";
  return { verdict, results };
}

type Check = Omit<AssertionResult, "index" | "kind">;

function check(e: Expectation, outcome: Outcome): Check {
  switch (e.kind) {
    case "file_exists":
    case "file_absent": {
      const content = fileOf(outcome, e.path);
      if (content === undefined) return unreported(e.path);
      const present = content !== null;
      const wanted = e.kind === "file_exists";
      return result(present === wanted, present ? "file_present" : "file_missing", `${e.path} ${present ? "exists" : "does not exist"}`);
    }
    case "file_contains":
    case "file_not_contains": {
      const content = fileOf(outcome, e.path);
      if (content === undefined) return unreported(e.path);
      // A missing file contains nothing: file_not_contains holds on it, file_contains does not.
      const found = content !== null && content.includes(e.text);
      const reason = content === null ? "file_missing" : found ? "text_found" : "text_not_found";
      return result(
        found === (e.kind === "file_contains"),
        reason,
        `${JSON.stringify(e.text)} ${found ? "found" : "not found"} in ${e.path}`,
      );
    }
    case "text_contains":
    case "text_not_contains": {
      const found = outcome.text.includes(e.text);
      return result(
        found === (e.kind === "text_contains"),
        found ? "text_found" : "text_not_found",
        `${JSON.stringify(e.text)} ${found ? "found" : "not found"} in the reply`,
      );
    }
    case "text_matches": {
      const matched = new RegExp(e.pattern, e.flags ?? "").test(outcome.text);
      return result(
        matched,
        matched ? "pattern_matched" : "pattern_not_matched",
        `/${e.pattern}/${e.flags ?? ""} ${matched ? "matches" : "does not match"} the reply`,
      );
    }
    case "exit_status_is": {
      if (outcome.exit_status === undefined) {
        return { pass: false, observed: false, reason: "exit_status_not_reported", detail: "the outcome carries no exit status" };
      }
      const ok = outcome.exit_status === e.status;
      return result(ok, ok ? "exit_status_matched" : "exit_status_mismatch", `exit status ${outcome.exit_status}, expected ${e.status}`);
    }
  }
}

/** Own properties only: a path named `constructor` must not read Object.prototype. */
function fileOf(outcome: Outcome, path: string): string | null | undefined {
  return Object.hasOwn(outcome.files, path) ? outcome.files[path] : undefined;
}

function result(pass: boolean, reason: AssertionReason, detail: string): Check {
  return { pass, observed: true, reason, detail };
}

function unreported(path: string): Check {
  return { pass: false, observed: false, reason: "file_not_reported", detail: `the outcome does not report ${path}` };
}
