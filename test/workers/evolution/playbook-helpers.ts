import type { CaseResult, MeasureVector } from "../../../src/evolution/aee-measure";
import { caseScores } from "../../../src/evolution/aee-measure";
import type { GateContext } from "../../../src/evolution/aee-gate";
import { EMPTY_CONTRACT } from "../../../src/evolution/contract";
import type { Playbook, PlaybookEntry } from "../../../src/evolution/playbook";

export const NOW = new Date("2026-08-10T12:00:00.000Z");
export const AGENT = "emp_alpha";

export const CASES = ["release/notes-order", "release/changelog-scope", "support/refund-policy", "support/tone", "ops/deploy-check"];
export const caseExists = (ref: string) => CASES.includes(ref);

/** A stored entry with sensible defaults. */
export function entry(over: Partial<PlaybookEntry> & { entry_id: string }): PlaybookEntry {
  const at = over.created_at ?? "2026-08-01T00:00:00.000Z";
  return {
    agent_id: AGENT,
    category: "repair",
    signals_match: [],
    content: `Rule ${over.entry_id}: cite the ticket number in the first line of every status update.`,
    eval_cases: ["support/tone"],
    assertions: [],
    failure_history: [],
    applications: [],
    success_streak: 0,
    derived_from: [{ kind: "operator", id: "op_1" }],
    state: "active",
    state_reason: "settle_accept",
    state_since: at,
    created_at: at,
    updated_at: at,
    version: 1,
    ...over,
  };
}

export function playbook(entries: PlaybookEntry[]): Playbook {
  return { agent_id: AGENT, entries: [...entries].sort((a, b) => (a.entry_id < b.entry_id ? -1 : 1)) };
}

/** The three entries most tests start from. */
export function basePlaybook(): Playbook {
  return playbook([
    entry({
      entry_id: "pbe_a",
      content: "When asked for release notes, list the version number and release date before any change.",
      eval_cases: ["release/notes-order"],
      signals_match: ["release|changelog"],
    }),
    entry({
      entry_id: "pbe_b",
      content: "Quote the refund policy section number whenever a customer asks about refunds.",
      eval_cases: ["support/refund-policy"],
      signals_match: ["refund|返金"],
    }),
    entry({
      entry_id: "pbe_c",
      content: "Before confirming a deploy, run the health check and paste its exit status.",
      eval_cases: ["ops/deploy-check"],
      signals_match: ["correction"],
    }),
  ]);
}

export const CASE_TEXT: Record<string, string> = {
  "release/notes-order":
    "Write release notes for version 2.4.0 released on 2026-08-01. Acceptance: the notes start with the version number 2.4.0 and the date 2026-08-01.",
  "release/changelog-scope": "Summarize the changelog for the billing component only.",
  "support/refund-policy": "A customer asks whether they can get a refund after 40 days. Acceptance: cites policy section 4.2.",
  "support/tone": "Reply to an angry customer politely.",
  "ops/deploy-check": "Confirm that the deploy of service api succeeded. Acceptance: mentions the health check exit status.",
};

export function gateCtx(pb: Playbook, over: Partial<GateContext> = {}): GateContext {
  return {
    now: NOW,
    caseExists,
    playbook: pb,
    contract: EMPTY_CONTRACT,
    caseText: (ref) => CASE_TEXT[ref],
    canaries: [],
    transcripts: [],
    ...over,
  };
}

/** A valid add op that passes every Gate check (given a PASS transcript for its case, or none). */
export function goodAdd(over: Record<string, unknown> = {}) {
  return {
    op: "add",
    category: "innovate",
    signals_match: ["billing"],
    content: "For billing questions, state which invoice field you read the amount from and link the invoice id.",
    eval_cases: ["release/changelog-scope"],
    assertions: [{ kind: "output_contains", value: "invoice" }],
    derived_from: [{ kind: "aee_round", id: "round_1" }],
    ...over,
  };
}

export function vector(results: CaseResult[], judge: number | null = null): MeasureVector {
  return {
    cases: caseScores(results),
    judge,
    judge_status: judge === null ? "not_run" : "scored",
    anti_sycophancy: { hits: [] },
    novelty: null,
    relevance: null,
    zeroed: null,
  };
}

/** n case results with `pass` of them passing (refs c00…). */
export function results(n: number, pass: number, prefix = "d/c"): CaseResult[] {
  return Array.from({ length: n }, (_, i) => ({ case_ref: `${prefix}${String(i).padStart(2, "0")}`, verdict: i < pass ? "PASS" : "FAIL" }));
}
