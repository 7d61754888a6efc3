import type { ExecutorRun, VerifierRun } from "../../../src/eval/cells";
import type { GoldVerdict } from "../../../src/eval/case-schema";
import { DEFAULT_DESIGN, type MatrixDesign, type ModelRef } from "../../../src/eval/design";
import type { CaseVerdict } from "../../../src/eval/score";
import type { VerifierReply } from "../../../src/eval/verifier-reply";

export const HAIKU: ModelRef = { runtime: "claude", model: "claude-haiku-4-5" };
export const SONNET: ModelRef = { runtime: "claude", model: "claude-sonnet-4-6" };

export function design(overrides: Partial<MatrixDesign> = {}): MatrixDesign {
  return { ...DEFAULT_DESIGN, ...overrides };
}

/** One executor run per verdict, case ids `<prefix>1…`, in one domain. */
export function executorRuns(domain: string, verdicts: readonly CaseVerdict[], model: ModelRef = HAIKU, prefix = "c"): ExecutorRun[] {
  return verdicts.map((verdict, i) => ({ role: "executor", domain, case_id: `${prefix}${i + 1}`, ...model, verdict }));
}

/** Executor runs from 0/1 scores. */
export function binaryRuns(domain: string, scores: readonly number[], model: ModelRef, prefix = "c"): ExecutorRun[] {
  return executorRuns(
    domain,
    scores.map((s) => (s === 1 ? "PASS" : "FAIL")),
    model,
    prefix,
  );
}

export function verifierRun(
  domain: string,
  case_id: string,
  gold: GoldVerdict,
  reply: VerifierReply,
  model: ModelRef = HAIKU,
): VerifierRun {
  return { role: "verifier", domain, case_id, ...model, gold, reply };
}
