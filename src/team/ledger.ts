import { asc, desc, eq, sql } from "drizzle-orm";
import type { Db } from "../db/client";
import { roleTurns, type EvidenceGrade, type FaultSide } from "../db/schema";
import { sha256Hex } from "../lib/crypto";

/**
 * The role ledger (seed 002 "役割ごとの帰属"): one append-only row per stage, with what was asked
 * (runtime, model, effort) apart from what answered, the evidence grade the composer observed, how
 * the stage ended, and usage summed over every leg. Rows of a task are chained by SHA-256.
 */
export interface UsageFigures {
  input_tokens?: number;
  output_tokens?: number;
  cache_read_input_tokens?: number;
  cache_creation_input_tokens?: number;
}

const USAGE_KEYS = ["input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens"] as const;

const saturatingAdd = (a: number, b: number) => Math.min(Number.MAX_SAFE_INTEGER, a + b);

/**
 * Sums usage over a stage's legs. A dimension only one leg measured keeps that leg's value (the
 * others are not zeroed into it); `usage_legs` counts the legs that reported anything. No leg
 * reported anything → both are absent: 0 would claim "measured, and free".
 */
export function sumUsageLegs(legs: readonly (UsageFigures | undefined)[]): { usage?: UsageFigures; usage_legs?: number } {
  const usage: UsageFigures = {};
  let contributing = 0;
  for (const leg of legs) {
    if (!leg) continue;
    let reported = false;
    for (const key of USAGE_KEYS) {
      const v = leg[key];
      if (typeof v !== "number" || !Number.isFinite(v) || v < 0) continue;
      usage[key] = saturatingAdd(usage[key] ?? 0, Math.floor(v));
      reported = true;
    }
    if (reported) contributing++;
  }
  return contributing > 0 ? { usage, usage_legs: contributing } : {};
}

/** Graded by the composer from what the runner observed, never from what the member claims. */
export function evidenceGrade(evidence: { native_tool_events?: number; mcp_calls?: number } | undefined): EvidenceGrade {
  if ((evidence?.native_tool_events ?? 0) > 0) return "full";
  if ((evidence?.mcp_calls ?? 0) > 0) return "mcp_only";
  return "none";
}

export const FAILURE_EDGES = ["admission", "budget", "dispatch", "spawn", "run", "handoff", "lease"] as const;
export type FailureEdge = (typeof FAILURE_EDGES)[number];

/**
 * Where a failed stage broke (`failure_edge`) and whose side that is (`fault_side`, a closed set),
 * decided deterministically from the error code; an ambiguous failure is `unknown`, which lets no
 * one blame the model.
 */
export function classifyFailure(code: string | undefined): { failure_edge: FailureEdge | null; fault_side: FaultSide } {
  switch (code) {
    case "admission_expired":
    case "admission_refused":
      return { failure_edge: "admission", fault_side: "platform" };
    case "budget_exhausted":
      return { failure_edge: "budget", fault_side: "platform" };
    case "dispatch_failed":
    case "invalid_stage_request":
    case "no_runner":
      return { failure_edge: "dispatch", fault_side: "platform" };
    case "lease_expired":
    case "attempts_exhausted":
      return { failure_edge: "lease", fault_side: "unknown" };
    case "not_logged_in":
    case "spawn_failed":
    case "member_mcp_config_missing":
    case "mcp_server_failed":
    case "unsupported_job":
      return { failure_edge: "spawn", fault_side: "runtime" };
    case "cli_error":
    case "timeout":
    case "incomplete_output":
    case "network_error":
    case "api_unavailable":
      return { failure_edge: "run", fault_side: "runtime" };
    case "runner_shutdown":
      return { failure_edge: "run", fault_side: "platform" };
    // The runner caps a stage result well under the Worker's limit, so one refused as too large is a
    // platform defect, not the member's doing.
    case "result_too_large":
      return { failure_edge: "run", fault_side: "platform" };
    // The round ended under the member (it was stopped, or never started): not the model's doing.
    case "round_ended":
      return { failure_edge: "run", fault_side: "platform" };
    // A stage job rebuilt from its D1 row has no member token left (the row never keeps it).
    case "member_token_unrecoverable":
      return { failure_edge: "dispatch", fault_side: "platform" };
    case "max_turns":
      return { failure_edge: "run", fault_side: "member" };
    case "no_packets":
      return { failure_edge: "handoff", fault_side: "member" };
    default:
      return { failure_edge: null, fault_side: "unknown" };
  }
}

/** Changes exactly when the role's runtime or model changes. */
export async function configFingerprintHard(role: string, runtime: string, model: string): Promise<string> {
  return (await sha256Hex(`${role}\u0000${runtime}\u0000${model}`)).slice(0, 16);
}

export interface RoleTurnInput {
  task_id: string;
  round: number;
  role: string;
  stage: string;
  stage_id: string;
  member_id?: string | null;
  job_id?: string | null;
  requested_runtime: string;
  request_model: string;
  /** What actually answered, as the run reported it; null for a stage that never spawned. */
  runtime_used?: string | null;
  response_model?: string | null;
  provider?: string | null;
  effort?: string | null;
  packets: string[];
  evidence_grade: EvidenceGrade;
  outcome: string;
  failure_edge?: string | null;
  fault_side?: FaultSide | null;
  config_fingerprint_hard: string;
  usage?: UsageFigures;
  usage_legs?: number;
  cost_usd?: number;
}

export const GENESIS_HASH = "genesis";

function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(",")}]`;
  if (value && typeof value === "object") {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(",")}}`;
  }
  return JSON.stringify(value ?? null);
}

export type RoleTurnRow = typeof roleTurns.$inferSelect;

/** The fields a row's hash covers: everything but `seq` and the hash itself. */
function hashedFields(row: Omit<RoleTurnRow, "seq" | "hash">) {
  return canonical(row);
}

export async function rowHash(row: Omit<RoleTurnRow, "seq" | "hash">): Promise<string> {
  return sha256Hex(`${row.prevHash}\n${hashedFields(row)}`);
}

function toRow(input: RoleTurnInput, prevHash: string, at: string): Omit<RoleTurnRow, "seq" | "hash"> {
  const failover = input.runtime_used ? input.runtime_used !== input.requested_runtime : null;
  return {
    taskId: input.task_id,
    roundNo: input.round,
    role: input.role,
    stage: input.stage,
    stageId: input.stage_id,
    memberId: input.member_id ?? null,
    jobId: input.job_id ?? null,
    requestedRuntime: input.requested_runtime,
    requestModel: input.request_model,
    runtimeUsed: input.runtime_used ?? null,
    responseModel: input.response_model ?? null,
    provider: input.provider ?? null,
    failover,
    effort: input.effort ?? null,
    packets: input.packets,
    evidenceGrade: input.evidence_grade,
    outcome: input.outcome,
    failureEdge: input.failure_edge ?? null,
    faultSide: input.fault_side ?? null,
    configFingerprintHard: input.config_fingerprint_hard,
    inputTokens: input.usage?.input_tokens ?? null,
    outputTokens: input.usage?.output_tokens ?? null,
    cacheReadInputTokens: input.usage?.cache_read_input_tokens ?? null,
    cacheCreationInputTokens: input.usage?.cache_creation_input_tokens ?? null,
    usageLegs: input.usage_legs ?? null,
    costUsd: input.cost_usd ?? null,
    prevHash,
    createdAt: at,
  };
}

const MAX_APPEND_ATTEMPTS = 20;

/**
 * Appends a stage's row once. The row is chained to the task's current head; a concurrent append
 * that took the same head makes this insert a no-op (`UNIQUE(task_id, prev_hash)`), and it retries
 * on the new head. A repeat for the same stage (`UNIQUE(stage_id)`) is a no-op that returns the row.
 */
export async function appendRoleTurn(db: Db, input: RoleTurnInput, now: Date): Promise<RoleTurnRow> {
  for (let attempt = 0; attempt < MAX_APPEND_ATTEMPTS; attempt++) {
    const existing = await db.select().from(roleTurns).where(eq(roleTurns.stageId, input.stage_id)).get();
    if (existing) return existing;
    const head = await db
      .select({ hash: roleTurns.hash })
      .from(roleTurns)
      .where(eq(roleTurns.taskId, input.task_id))
      .orderBy(desc(roleTurns.seq))
      .limit(1)
      .get();
    const row = toRow(input, head?.hash ?? GENESIS_HASH, now.toISOString());
    const hash = await rowHash(row);
    const [inserted] = await db
      .insert(roleTurns)
      .values({ ...row, hash })
      .onConflictDoNothing()
      .returning();
    if (inserted) return inserted;
  }
  throw new Error(`role_turns: could not append stage ${input.stage_id} after ${MAX_APPEND_ATTEMPTS} attempts`);
}

export function listRoleTurns(db: Db, taskId: string): Promise<RoleTurnRow[]> {
  return db.select().from(roleTurns).where(eq(roleTurns.taskId, taskId)).orderBy(asc(roleTurns.seq)).all();
}

/** Re-derives every hash of a task's rows in order; the first row that does not match breaks the chain. */
export async function verifyChain(rows: readonly RoleTurnRow[]): Promise<{ ok: true } | { ok: false; broken_at_seq: number }> {
  let prev = GENESIS_HASH;
  for (const row of rows) {
    const { seq, hash, ...rest } = row;
    if (rest.prevHash !== prev || (await rowHash(rest)) !== hash) return { ok: false, broken_at_seq: seq };
    prev = hash;
  }
  return { ok: true };
}

/** A ledger row as the API shows it: usage only when measured (never 0 for unknown). */
export function roleTurnView(r: RoleTurnRow) {
  const usage = Object.fromEntries(
    (
      [
        ["input_tokens", r.inputTokens],
        ["output_tokens", r.outputTokens],
        ["cache_read_input_tokens", r.cacheReadInputTokens],
        ["cache_creation_input_tokens", r.cacheCreationInputTokens],
      ] as const
    ).filter(([, v]) => v !== null),
  );
  return {
    seq: r.seq,
    task_id: r.taskId,
    round: r.roundNo,
    role: r.role,
    stage: r.stage,
    stage_id: r.stageId,
    member_id: r.memberId,
    job_id: r.jobId,
    requested_runtime: r.requestedRuntime,
    request_model: r.requestModel,
    runtime_used: r.runtimeUsed,
    response_model: r.responseModel,
    provider: r.provider,
    failover: r.failover,
    effort: r.effort,
    packets: r.packets,
    evidence_grade: r.evidenceGrade,
    outcome: r.outcome,
    failure_edge: r.failureEdge,
    fault_side: r.faultSide,
    config_fingerprint_hard: r.configFingerprintHard,
    ...(r.usageLegs !== null ? { usage, usage_legs: r.usageLegs } : {}),
    ...(r.costUsd !== null ? { cost_usd: r.costUsd } : {}),
    prev_hash: r.prevHash,
    hash: r.hash,
    created_at: r.createdAt,
  };
}

/**
 * Spend per role and model (`GET /v1/cost/by-role`), optionally for one task (`episode_id`). SUM
 * over NULLs is NULL in SQL, so a group where nobody reported usage stays unknown; a group where
 * only some stages reported says how many did not.
 */
export async function costByRole(db: Db, episodeId?: string) {
  const runtime = sql<string>`COALESCE(${roleTurns.runtimeUsed}, ${roleTurns.requestedRuntime})`;
  const model = sql<string>`COALESCE(${roleTurns.responseModel}, ${roleTurns.requestModel})`;
  const rows = await db
    .select({
      role: roleTurns.role,
      runtime,
      model,
      stages: sql<number>`COUNT(*)`,
      stagesWithUsage: sql<number>`COUNT(${roleTurns.usageLegs})`,
      inputTokens: sql<number | null>`SUM(${roleTurns.inputTokens})`,
      outputTokens: sql<number | null>`SUM(${roleTurns.outputTokens})`,
      cacheRead: sql<number | null>`SUM(${roleTurns.cacheReadInputTokens})`,
      cacheCreation: sql<number | null>`SUM(${roleTurns.cacheCreationInputTokens})`,
      costUsd: sql<number | null>`SUM(${roleTurns.costUsd})`,
      stagesWithCost: sql<number>`COUNT(${roleTurns.costUsd})`,
    })
    .from(roleTurns)
    .where(episodeId ? eq(roleTurns.taskId, episodeId) : undefined)
    .groupBy(roleTurns.role, runtime, model)
    .orderBy(roleTurns.role, runtime, model)
    .all();
  return rows.map((r) => {
    const usage = Object.fromEntries(
      (
        [
          ["input_tokens", r.inputTokens],
          ["output_tokens", r.outputTokens],
          ["cache_read_input_tokens", r.cacheRead],
          ["cache_creation_input_tokens", r.cacheCreation],
        ] as const
      ).filter(([, v]) => v !== null),
    );
    return {
      role: r.role,
      runtime: r.runtime,
      model: r.model,
      stages: r.stages,
      stages_with_usage: r.stagesWithUsage,
      stages_without_usage: r.stages - r.stagesWithUsage,
      usage: r.stagesWithUsage > 0 ? usage : "unknown",
      cost_usd: r.stagesWithCost > 0 ? r.costUsd : "unknown",
      stages_without_cost: r.stages - r.stagesWithCost,
    };
  });
}
