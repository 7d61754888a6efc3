import { and, desc, eq, sql } from "drizzle-orm";
import type { BatchItem } from "drizzle-orm/batch";
import type { Db } from "../db/client";
import { guarded } from "../db/guard";
import { aeeJobs, aeeRounds, type AeeJobPurpose, type AeeRoundRow, type EmployeeRow } from "../db/schema";
import type { Env } from "../env";
import { bundledSuites, caseJobPayload, casePrompt, caseRefs, findCase } from "../eval/case-job";
import { evalConfig } from "../eval/config";
import type { Suite } from "../eval/suites";
import { readSection } from "../lib/config";
import { modelWorkConfig } from "../jobs/model-work";
import { utilityPayload, type Runtime } from "../jobs/payloads";
import { dispatchJob, prepareJob, type PreparedJob } from "../jobs/submit";
import { sha256HexSync } from "../council/sha256";
import type { CaseResult } from "./aee-measure";
import type { RecordedTranscript } from "./aee-gate";
import { playbookForCase } from "./aee-prompts";
import type { RoundState } from "./aee-round";
import { isLive, type PlaybookEntry } from "./playbook";
import type { RoundSummary } from "./stagnation";
import type { DriftLedger } from "./commit-gate";

/**
 * What an AEE round needs around its pure core (aee-round.ts): its plan (the cases it measures, the
 * runtimes its jobs run on), the jobs it submits, and the guarded write of each step. A round's jobs
 * are owned by the round (`{kind: "aee_round", id}`); a settle window's by its item.
 */
export const ROUND_LOCK_MS = 30 * 60_000;
/** Cases a round measures: every case the live entries link (up to the cap), then a per-round draw of the rest. */
export const ROUND_CASES = 6;
export const MAX_ROUND_CASES = 12;
/** The generator's and judge's limit (a utility job). */
export const MODEL_JOB_TIMEOUT_MS = 10 * 60_000;

export interface RoundPlan {
  employee_name: string;
  cases: string[];
  /** Where the employee runs: its cases run there, as the employee would answer them. */
  runtime: Runtime;
  model: string;
  tools: { allowed_tools?: string[]; denied_tools?: string[] };
  /** Where the generator and judge run: `model_work` when set, else the employee's own runtime. */
  model_work: { runtime: Runtime; model?: string; set_by: "model_work" | "employee" };
}

export class NoSuitesError extends Error {}

/** A batch's statements as D1's batch takes them (at least one). */
export function batchOf(items: readonly BatchItem<"sqlite">[]): [BatchItem<"sqlite">, ...BatchItem<"sqlite">[]] {
  if (items.length === 0) throw new Error("an empty batch");
  return items as [BatchItem<"sqlite">, ...BatchItem<"sqlite">[]];
}

/** The shipped suites; a round cannot measure anything without them. */
export function suitesOrThrow(): Suite[] {
  const suites = bundledSuites();
  if (!suites) throw new NoSuitesError("the shipped eval suites do not load");
  return suites;
}

export async function planFor(db: Db, employee: EmployeeRow, cases: string[]): Promise<RoundPlan> {
  const work = await readSection(db, modelWorkConfig);
  return {
    employee_name: employee.name,
    cases,
    runtime: employee.runtime,
    model: employee.modelPreferred,
    tools: employee.capabilities ?? {},
    model_work: work.runtime
      ? { runtime: work.runtime, ...(work.model ? { model: work.model } : {}), set_by: "model_work" }
      : { runtime: employee.runtime, model: employee.modelPreferred, set_by: "employee" },
  };
}

/**
 * The round's cases: those the live entries link (ranked by the round's draw when over the cap), then
 * other cases by the same draw up to ROUND_CASES. Deterministic per round, different every round.
 */
export function roundCases(entries: readonly PlaybookEntry[], all: readonly string[], roundSeq: number): string[] {
  const known = new Set(all);
  const rank = (refs: Iterable<string>) =>
    [...new Set(refs)]
      .map((ref) => ({ ref, key: sha256HexSync(`cases:${roundSeq}:${ref}`) }))
      .sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0))
      .map((x) => x.ref);
  const linked = rank(
    entries
      .filter(isLive)
      .flatMap((e) => e.eval_cases)
      .filter((r) => known.has(r)),
  ).slice(0, MAX_ROUND_CASES);
  const taken = new Set(linked);
  const rest = rank(all.filter((r) => !taken.has(r))).slice(0, Math.max(0, ROUND_CASES - linked.length));
  return [...linked, ...rest].sort();
}

export function allCaseRefs(suites: readonly Suite[]): string[] {
  return caseRefs(suites);
}

/** A case's statement for H1 (prompt, criteria, the texts its assertions look for). */
export function caseTextOf(suites: readonly Suite[], ref: string): string | undefined {
  const c = findCase(suites, ref);
  if (!c) return undefined;
  const needles = c.expect.flatMap((e) => ("text" in e ? [e.text] : "pattern" in e ? [e.pattern] : []));
  return [c.prompt, ...c.acceptance_criteria, ...needles].join("\n");
}

/** The suites' recorded transcripts, for G-Assertions (no tool record: tool assertions stay unverified). */
export function recordedTranscripts(suites: readonly Suite[]): RecordedTranscript[] {
  return suites.flatMap((s) =>
    s.cases.flatMap((c) => (c.transcript ? [{ case_ref: `${c.domain}/${c.id}`, gold: c.transcript.gold, text: c.transcript.text }] : [])),
  );
}

export function caseTitle(suites: readonly Suite[], ref: string): string {
  const c = findCase(suites, ref);
  return c?.title ?? c?.prompt.split("\n")[0]?.slice(0, 100) ?? ref;
}

export interface NewRoundJob {
  prepared: PreparedJob;
  statements: BatchItem<"sqlite">[];
}

function jobRow(
  db: Db,
  prepared: PreparedJob,
  ownerId: string,
  agentId: string,
  purpose: AeeJobPurpose,
  attempt: number,
  caseRef: string | null,
  now: Date,
) {
  return db.insert(aeeJobs).values({
    jobId: prepared.jobId,
    ownerId,
    agentId,
    purpose,
    attempt,
    caseRef,
    status: "dispatched",
    createdAt: now.toISOString(),
  });
}

/** One case run of the playbook `entries` (the live ones are in play), for the batch that needs it. */
export function caseJob(
  db: Db,
  owner: { kind: "aee_round" | "playbook_settle"; id: string },
  agentId: string,
  plan: Pick<RoundPlan, "runtime" | "model" | "tools">,
  suites: readonly Suite[],
  ref: string,
  purpose: Extract<AeeJobPurpose, "champion_case" | "candidate_case" | "settle_case">,
  attempt: number,
  entries: readonly PlaybookEntry[],
  timeoutMs: number,
  now: Date,
): NewRoundJob | null {
  const c = findCase(suites, ref);
  if (!c) return null;
  const payload = caseJobPayload({
    case: c,
    runtime: plan.runtime,
    model: plan.model,
    run_id: owner.id,
    employee: { id: agentId, capabilities: plan.tools },
    extra_prompt: playbookForCase(entries, casePrompt(c)),
    timeout_ms: timeoutMs,
  });
  const prepared = prepareJob(db, { kind: "eval_case", payload, owner }, now);
  return { prepared, statements: [...prepared.statements, jobRow(db, prepared, owner.id, agentId, purpose, attempt, ref, now)] };
}

/** A generator or judge call (a utility job on the round's model-work runtime). */
export function modelJob(
  db: Db,
  round: Pick<AeeRoundRow, "id" | "agentId">,
  plan: RoundPlan,
  purpose: Extract<AeeJobPurpose, "generator" | "champion_judge" | "judge">,
  attempt: number,
  prompt: string,
  now: Date,
): NewRoundJob {
  const payload = utilityPayload.parse({
    runtime: plan.model_work.runtime,
    ...(plan.model_work.model ? { model: plan.model_work.model } : {}),
    prompt,
    timeout_ms: MODEL_JOB_TIMEOUT_MS,
  });
  const prepared = prepareJob(db, { kind: "utility", payload, owner: { kind: "aee_round", id: round.id } }, now);
  return { prepared, statements: [...prepared.statements, jobRow(db, prepared, round.id, round.agentId, purpose, attempt, null, now)] };
}

export async function caseTimeoutMs(db: Db): Promise<number> {
  return (await readSection(db, evalConfig)).case_timeout_ms;
}

/** Hands recorded jobs to the queue; a refusal is logged and the reconciler re-dispatches from D1. */
export async function dispatchAll(env: Env, jobs: readonly NewRoundJob[]): Promise<void> {
  for (const j of jobs) {
    try {
      await dispatchJob(env, j.prepared.message);
    } catch (err) {
      console.error(`aee: job ${j.prepared.jobId} could not be queued now; the reconciler will`, err);
    }
  }
}

/**
 * The round row's next state, landing only on the version read (a stale write makes the version NULL
 * and aborts the caller's whole batch: see isRoundConflict).
 */
export function roundUpdate(
  db: Db,
  row: Pick<AeeRoundRow, "id" | "version">,
  set: Partial<Omit<AeeRoundRow, "id" | "version">>,
  now: Date,
) {
  return db
    .update(aeeRounds)
    .set({ ...set, version: sql`${guarded(sql`${aeeRounds.version} = ${row.version}`, row.version + 1)}`, updatedAt: now.toISOString() })
    .where(eq(aeeRounds.id, row.id));
}

export function isRoundConflict(err: unknown): boolean {
  const parts: string[] = [];
  for (let e: unknown = err, i = 0; e && i < 5; i++) {
    parts.push(e instanceof Error ? e.message : String(e));
    e = e instanceof Error ? e.cause : undefined;
  }
  const text = parts.join(" | ");
  return (
    (text.includes("NOT NULL constraint failed") && text.includes("aee_rounds.version")) ||
    /UNIQUE constraint failed: aee_rounds\./.test(text)
  );
}

export function stateOf(row: Pick<AeeRoundRow, "state">): RoundState {
  return row.state as unknown as RoundState;
}

export function planOf(row: Pick<AeeRoundRow, "plan">): RoundPlan {
  return row.plan as unknown as RoundPlan;
}

/** The jobs of one step of a round (or settle item): all of them, and whether any still runs. */
export async function stepJobs(db: Db, ownerId: string, purpose: AeeJobPurpose, attempt: number) {
  const rows = await db
    .select()
    .from(aeeJobs)
    .where(and(eq(aeeJobs.ownerId, ownerId), eq(aeeJobs.purpose, purpose), eq(aeeJobs.attempt, attempt)))
    .all();
  return { rows, running: rows.some((r) => r.status === "dispatched") };
}

/** Case results as the Measure reads them, from a step's ended case jobs. */
export function caseResultsOf(
  rows: readonly { caseRef: string | null; outcome: Record<string, unknown> | null }[],
): (CaseResult & { reply_head?: string })[] {
  return rows
    .filter((r) => r.caseRef !== null)
    .map((r) => {
      const o = r.outcome ?? {};
      const verdict: CaseResult["verdict"] = o.verdict === "PASS" || o.verdict === "FAIL" ? o.verdict : "unscored";
      return {
        case_ref: r.caseRef!,
        verdict,
        ...(typeof o.text === "string" ? { response: o.text } : {}),
        ...(typeof o.text === "string" ? { reply_head: o.text.slice(0, 300) } : {}),
      };
    })
    .sort((a, b) => (a.case_ref < b.case_ref ? -1 : a.case_ref > b.case_ref ? 1 : 0));
}

/** Earlier rounds of the agent, for stagnation and the drift ledger. */
export async function roundHistory(db: Db, agentId: string, limit = 20) {
  const rows = await db.select().from(aeeRounds).where(eq(aeeRounds.agentId, agentId)).orderBy(desc(aeeRounds.roundSeq)).limit(limit).all();
  const summaries: RoundSummary[] = rows.flatMap((r): RoundSummary[] => {
    if (r.status === "committed") {
      const v = stateOf(r).accepted?.verdict.verdict;
      return [{ round_seq: r.roundSeq, outcome: "committed", ...(v === "improves" || v === "matches" ? { verdict: v } : {}) }];
    }
    if (r.status === "abandoned" || r.status === "skipped") return [{ round_seq: r.roundSeq, outcome: r.status }];
    return [];
  });
  const lastCommitted = rows.find((r) => r.status === "committed");
  const ledger: DriftLedger | undefined = lastCommitted ? stateOf(lastCommitted).accepted?.verdict.ledger : undefined;
  return { rows, summaries, ledger, nextSeq: (rows[0]?.roundSeq ?? 0) + 1 };
}
