import { evalCasePayload, type EvalCasePayload } from "../jobs/payloads";
import { scoreCase, type CaseVerdict } from "./score";
import { loadSuites, type EvalCase, type Suite } from "./suites";

/**
 * One eval case as a runner job and the scoring of its end, shared by the capability matrix
 * (`run.ts`) and the evolution rounds, which score a playbook by running its cases with the entries
 * in play (seed 003 §12.5 eval_scorer). The job is an `eval_case`: a fresh directory seeded with the
 * case's files, the case prompt (first line `# Eval case <domain>/<case_id>`, which the runner's
 * fakes and reports key on), optionally followed by extra prompt text. Scoring is the case's own
 * deterministic assertions; no model judges.
 */
export interface CaseJobInput {
  case: EvalCase;
  /** A runtime name (validated by the payload schema). */
  runtime: string;
  model?: string | undefined;
  /** What the job reports under: a measurement's run id, an evolution round's id. */
  run_id: string;
  /** The employee whose tools the run gets (absent: the runner's default tool set). */
  employee?: { id: string; capabilities?: { allowed_tools?: string[]; denied_tools?: string[] } | null } | undefined;
  /** Appended after the case prompt, separated by a blank line (the playbook entries in play). */
  extra_prompt?: string | undefined;
  timeout_ms: number;
}

/** The case as the runner is asked to do it: its prompt, then its acceptance criteria. */
export function casePrompt(c: EvalCase): string {
  return [`# Eval case ${c.domain}/${c.id}`, c.prompt, "", "Acceptance criteria:", ...c.acceptance_criteria.map((a, i) => `${i + 1}. ${a}`)].join("\n");
}

export function caseJobPayload(input: CaseJobInput): EvalCasePayload {
  const c = input.case;
  const extra = input.extra_prompt?.trim();
  return evalCasePayload.parse({
    runtime: input.runtime,
    ...(input.model !== undefined ? { model: input.model } : {}),
    run_id: input.run_id,
    case_id: c.id,
    domain: c.domain,
    ...(input.employee ? { employee_id: input.employee.id, tools: input.employee.capabilities ?? {} } : {}),
    prompt: extra ? `${casePrompt(c)}\n\n${extra}` : casePrompt(c),
    workspace_files: c.workspace_files,
    observe_paths: [...new Set(c.expect.flatMap((e) => ("path" in e ? [e.path] : [])))].sort(),
    timeout_ms: input.timeout_ms,
  });
}

/** How one executor run scored: its verdict and what each assertion saw (or why nothing was scored). */
export interface CaseRunScore {
  verdict: CaseVerdict;
  detail: Record<string, unknown>;
  /** The reply text, when the run produced one. */
  text?: string;
}

/**
 * Scores a finished case job. A job without a result (failed, dead) or a case that is gone is
 * `unscored` with the reason: unknown is not zero.
 */
export function scoreCaseRun(c: EvalCase | undefined, end: { result?: Record<string, unknown> | undefined; error?: { code: string } | undefined }): CaseRunScore {
  const result = end.result;
  if (!result || !c) return { verdict: "unscored", detail: { reason: end.error?.code ?? (c ? "no_result" : "case_gone") } };
  const files = (result.files ?? {}) as Record<string, string | null>;
  const exit = typeof result.exit_status === "number" ? result.exit_status : undefined;
  const text = typeof result.text === "string" ? result.text : "";
  const scored = scoreCase(c.expect, { text, ...(exit !== undefined ? { exit_status: exit } : {}), files });
  return {
    verdict: scored.verdict,
    detail: { results: scored.results.map((r) => ({ index: r.index, kind: r.kind, pass: r.pass, observed: r.observed, reason: r.reason })) },
    text,
  };
}

let bundled: Suite[] | null = null;

/** The shipped suites, loaded once per isolate; null when they do not load (then nothing can be scored). */
export function bundledSuites(): Suite[] | null {
  if (bundled) return bundled;
  const loaded = loadSuites();
  if (!loaded.ok) return null;
  bundled = loaded.suites;
  return bundled;
}

/** A case by its reference `<domain>/<case_id>`. */
export function findCase(suites: readonly Suite[], ref: string): EvalCase | undefined {
  const [domain, id] = ref.split("/");
  return suites.find((s) => s.domain === domain)?.cases.find((c) => c.id === id);
}

/** Every case reference of the suites, sorted. */
export function caseRefs(suites: readonly Suite[]): string[] {
  return suites.flatMap((s) => s.cases.map((c) => `${c.domain}/${c.id}`)).sort();
}
