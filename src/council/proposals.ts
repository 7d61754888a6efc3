import { and, eq, inArray, sql, type SQL } from "drizzle-orm";
import type { BatchItem } from "drizzle-orm/batch";
import * as z from "zod";
import type { Db } from "../db/client";
import { batchable } from "../db/raw";
import { guarded, isGuardFailure } from "../db/guard";
import { councilProposals, events, jobs, PROPOSAL_KINDS, type PrescreenRecord } from "../db/schema";
import type { Env } from "../env";
import { AppError, notFound } from "../lib/errors";
import { appendEvent } from "../lib/events";
import { appendEventWhere } from "../lib/guarded-insert";
import { newId } from "../lib/ids";
import { label, prose } from "../lib/validation";
import { repoNameField } from "../projects/repo-name";
import type { JobEnd } from "../jobs/job-end";
import { dispatchJob, prepareJob } from "../jobs/submit";
import { notifySelectedStatement } from "../nodes/events";
import { enqueuePushes } from "../nodes/webhook";
import { assertNotSuspended, getNode } from "../nodes/registry";
import { penaltyStatements } from "../nodes/reputation";
import { reputationConfig } from "../nodes/reputation-config";
import { readSection } from "../lib/config";
import { sha256HexSync } from "./sha256";
import type { CouncilConfig } from "./config";
import { openSession, type ProposalForSession } from "./open-session";
import { prescreenPrompt, readPrescreen } from "./prescreen";
import { checkQuality } from "./quality";
import type { Random } from "./random";
import { COUNCIL_RULES, HOUR, type CouncilRules } from "./rules";
import { scanText } from "./scan";

export const proposalInput = z
  .strictObject({
    title: label(200),
    body: prose(20_000),
    kind: z.enum(PROPOSAL_KINDS),
    // `repo_name`: the repository the project asks for in the organisation (default: its name as a slug).
    project: z.strictObject({ name: label(100), summary: prose(2_000), repo_name: repoNameField.optional() }).optional(),
  })
  .superRefine((p, ctx) => {
    if (p.kind === "project" && !p.project)
      ctx.addIssue({ code: "custom", path: ["project"], message: "a project proposal names its project" });
    if (p.kind === "general" && p.project)
      ctx.addIssue({ code: "custom", path: ["project"], message: "only a project proposal has a project" });
  });
export type ProposalInput = z.infer<typeof proposalInput>;

export type ProposalRow = typeof councilProposals.$inferSelect;

export type SubmitResult =
  | { status: 201; proposal_id: string; session_id: string | null; proposal_status: string }
  | { status: 202; proposal_id: string; session_id: null; proposal_status: "prescreening" };

function rateCondition(nodeId: string, now: Date, rules: CouncilRules): { recent: SQL; pending: SQL; ok: SQL } {
  const since = new Date(now.getTime() - HOUR).toISOString();
  const recent = sql`(SELECT COUNT(*) FROM council_proposals WHERE node_id = ${nodeId} AND created_at > ${since})`;
  const pending = sql`(SELECT COUNT(*) FROM council_proposals WHERE node_id = ${nodeId} AND status IN ('prescreening', 'deliberating'))`;
  return { recent, pending, ok: sql`${recent} < ${rules.proposalsPerHour} AND ${pending} < ${rules.maxPendingProposals}` };
}

/**
 * The screening gates in the documented order (API.md "Clarifications"): eligibility (403
 * not_eligible), rate (429), content quality (422), static scan (403 security_scan), then the model
 * prescreen. Anything refused before the prescreen writes nothing. The rate is checked again inside
 * the insert itself, so racing submissions cannot exceed it.
 */
export async function screenProposal(db: Db, nodeId: string, input: ProposalInput, now: Date, rules: CouncilRules = COUNCIL_RULES) {
  const node = await getNode(db, nodeId);
  assertNotSuspended(node);
  if (node.reputation < rules.proposeMinReputation) {
    throw new AppError("not_eligible", `Proposing needs reputation ≥ ${rules.proposeMinReputation} (this node has ${node.reputation})`, {
      extra: { reason: "reputation_insufficient" },
    });
  }
  if (node.modelTier < rules.proposeMinTier) {
    throw new AppError("not_eligible", `Proposing needs model tier ≥ ${rules.proposeMinTier} (this node has ${node.modelTier})`, {
      extra: { reason: "model_tier_insufficient" },
    });
  }
  const rate = rateCondition(nodeId, now, rules);
  const counts = await db.get<{ recent: number; pending: number }>(sql`SELECT ${rate.recent} AS recent, ${rate.pending} AS pending`);
  rateCheck(counts.recent, counts.pending, rules);
  const quality = checkQuality(input);
  if (quality.length > 0)
    throw new AppError("validation_failed", "The proposal does not meet the content-quality bar", { errors: quality });
  const scan = scanText(input.title, input.body, input.project?.name, input.project?.summary);
  if (!scan.clean) {
    // The one refusal that leaves a trace: the attempt is the offence. `scan_failed` is charged once
    // per text (the reference is its hash), so a retry of the same text costs nothing more.
    const reference = sha256HexSync(JSON.stringify([input.title, input.body, input.project?.name ?? "", input.project?.summary ?? ""]));
    const penalty = penaltyStatements(db, await readSection(db, reputationConfig), "scan_failed", [{ node_id: nodeId, reference }], now, {
      detail: { categories: scan.categories },
    });
    if (penalty.length > 0) await db.batch(penalty as [BatchItem<"sqlite">, ...BatchItem<"sqlite">[]]);
    throw new AppError("security_scan", `The proposal matched the static security scan (${scan.categories.join(", ")})`, {
      extra: { categories: scan.categories },
    });
  }
  return node;
}

function rateCheck(recent: number, pending: number, rules: CouncilRules) {
  if (recent >= rules.proposalsPerHour) {
    throw new AppError("rate_limited", `At most ${rules.proposalsPerHour} proposals per hour`, { extra: { limit: "proposals_per_hour" } });
  }
  if (pending >= rules.maxPendingProposals) {
    throw new AppError("rate_limited", `At most ${rules.maxPendingProposals} proposals pending at once`, {
      extra: { limit: "pending_proposals" },
    });
  }
}

function insertProposal(
  db: Db,
  id: string,
  nodeId: string,
  input: ProposalInput,
  status: SQL | string,
  prescreen: PrescreenRecord,
  sessionId: string | null,
  now: Date,
  rules: CouncilRules,
) {
  const at = now.toISOString();
  const rate = rateCondition(nodeId, now, rules);
  return db.insert(councilProposals).values({
    id,
    nodeId,
    title: input.title,
    body: input.body,
    kind: input.kind,
    project: input.project ?? null,
    status: guarded(rate.ok, typeof status === "string" ? sql`${status}` : status) as unknown as "prescreening",
    sessionId,
    prescreen,
    createdAt: at,
    updatedAt: at,
  });
}

function submittedEvent(db: Db, id: string, nodeId: string, input: ProposalInput, prescreen: PrescreenRecord, now: Date) {
  return appendEvent(
    db,
    {
      type: "council.proposal_submitted",
      subject: id,
      payload: { proposal_id: id, node_id: nodeId, kind: input.kind, title: input.title, prescreen },
    },
    now,
  );
}

/**
 * Submits a proposal that passed the deterministic gates. Prescreen off: the proposal and its
 * session land together (201). Prescreen on: a `utility` job judges it; the call waits up to
 * `prescreen_wait_ms` (real time: it bounds an HTTP request) for the verdict, then answers 201,
 * 422 prescreen_rejected, or 202 with the verdict to land later.
 */
export async function submitProposal(
  env: Env,
  db: Db,
  nodeId: string,
  input: ProposalInput,
  now: Date,
  opts: { config: CouncilConfig; random: Random; rules?: CouncilRules; sleep?: (ms: number) => Promise<void> },
): Promise<SubmitResult> {
  const rules = opts.rules ?? COUNCIL_RULES;
  await screenProposal(db, nodeId, input, now, rules);
  const id = newId("prop");
  try {
    if (opts.config.prescreen === "off") {
      const plan = opts.config.model_work.prescreen;
      // Why no model screened it, decided now (model_work unset, the stage off, its runtime not offered).
      const prescreen: PrescreenRecord = {
        mode: "off",
        status: "skipped",
        source: "off",
        fell_back_because: plan.fell_back_because ?? "stage_off",
        ...(plan.wanted_runtime ? { wanted_runtime: plan.wanted_runtime } : {}),
      };
      const opened = await openSession(
        env,
        db,
        proposalForSession(id, nodeId, input),
        now,
        opts.random,
        opts.config,
        (sessionId, status) => [
          insertProposal(db, id, nodeId, input, status, prescreen, sessionId, now, rules),
          submittedEvent(db, id, nodeId, input, prescreen, now),
        ],
        rules,
      );
      const row = await getProposal(db, id);
      return { status: 201, proposal_id: id, session_id: opened.session_id, proposal_status: row.status };
    }
    return await submitForPrescreen(env, db, id, nodeId, input, now, opts.config, rules, opts.sleep);
  } catch (err) {
    if (isGuardFailure(err, "council_proposals.status")) {
      const counts = await db.get<{ recent: number; pending: number }>(
        sql`SELECT ${rateCondition(nodeId, now, rules).recent} AS recent, ${rateCondition(nodeId, now, rules).pending} AS pending`,
      );
      rateCheck(counts.recent, counts.pending, rules);
      throw new AppError("rate_limited", "Too many proposals from this node right now", { extra: { limit: "pending_proposals" } });
    }
    throw err;
  }
}

async function submitForPrescreen(
  env: Env,
  db: Db,
  id: string,
  nodeId: string,
  input: ProposalInput,
  now: Date,
  config: CouncilConfig,
  rules: CouncilRules,
  sleep = defaultSleep,
): Promise<SubmitResult> {
  const job = prepareJob(
    db,
    {
      kind: "utility",
      payload: {
        runtime: config.prescreen_runtime,
        prompt: prescreenPrompt(input),
        timeout_ms: Math.min(config.prescreen_timeout_ms, 600_000),
        ...(config.prescreen_model ? { model: config.prescreen_model } : {}),
      },
      owner: { kind: "council_proposal", id },
    },
    now,
  );
  const prescreen: PrescreenRecord = { mode: "model", status: "pending", job_id: job.jobId, runtime: config.prescreen_runtime };
  await db.batch([
    insertProposal(db, id, nodeId, input, "prescreening", prescreen, null, now, rules),
    submittedEvent(db, id, nodeId, input, prescreen, now),
    ...job.statements,
  ]);
  try {
    await dispatchJob(env, job.message);
  } catch (cause) {
    await db.batch([
      db.delete(councilProposals).where(eq(councilProposals.id, id)),
      db.delete(jobs).where(eq(jobs.id, job.jobId)),
      db.delete(events).where(inArray(events.subject, [id, job.jobId])),
    ]);
    throw new AppError("unavailable", "The prescreen could not be queued; nothing was recorded", { cause });
  }
  const deadline = Date.now() + config.prescreen_wait_ms;
  for (;;) {
    const row = await getProposal(db, id);
    if (row.status !== "prescreening") return answered(row);
    if (Date.now() >= deadline) break;
    await sleep(Math.min(250, Math.max(0, deadline - Date.now())));
  }
  // Claim the 202 in the row itself: a verdict landing after this claim knows it is late and tells
  // the proposer through a pending event; one landing before it is answered here.
  const claimed = await db.run(
    sql`UPDATE council_proposals SET prescreen = json_set(prescreen, '$.answered', '202') WHERE id = ${id} AND status = 'prescreening'`,
  );
  if ((claimed.meta?.changes ?? 0) > 0) return { status: 202, proposal_id: id, session_id: null, proposal_status: "prescreening" };
  return answered(await getProposal(db, id));
}

function answered(row: ProposalRow): SubmitResult {
  if (row.status === "rejected") {
    throw new AppError("prescreen_rejected", `The prescreen rejected the proposal (${row.rejection?.reason ?? "prescreen_rejected"})`, {
      extra: { proposal_id: row.id, reason: row.rejection?.reason, ...(row.rejection?.detail ? { verdict: row.rejection.detail } : {}) },
    });
  }
  return { status: 201, proposal_id: row.id, session_id: row.sessionId, proposal_status: row.status };
}

const defaultSleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

export function proposalForSession(id: string, nodeId: string, input: ProposalInput | ProposalRow): ProposalForSession {
  return { id, nodeId, title: input.title, body: input.body, kind: input.kind, project: input.project ?? null };
}

export async function getProposal(db: Db, id: string): Promise<ProposalRow> {
  const row = await db.select().from(councilProposals).where(eq(councilProposals.id, id)).get();
  if (!row) throw notFound(`proposal ${id}`);
  return row;
}

/**
 * The prescreen job ended (owner `council_proposal`). Only the job the proposal waits for counts,
 * once: a pass opens the session in the same batch that moves the proposal; anything else rejects
 * it (fail closed) and, if the submitter already got its 202, tells them by a pending event.
 */
export async function onPrescreenEnded(env: Env, db: Db, end: JobEnd, now: Date, config: CouncilConfig, random: Random) {
  const row = await db.select().from(councilProposals).where(eq(councilProposals.id, end.owner.id)).get();
  if (!row || row.status !== "prescreening" || row.prescreen.job_id !== end.job_id) return { applied: false };
  const verdict = readPrescreen(end);
  const matches = sql`status = 'prescreening' AND json_extract(prescreen, '$.job_id') = ${end.job_id}`;
  if (verdict.passed) {
    try {
      await openSession(env, db, proposalForSession(row.id, row.nodeId, row), now, random, config, (sessionId, status) => [
        batchable(
          db,
          sql`
          UPDATE council_proposals SET status = ${guarded(matches, status)}, session_id = ${sessionId}, updated_at = ${now.toISOString()},
            prescreen = json_set(prescreen, '$.status', 'passed', '$.source', ${verdict.source}, '$.reason', ${verdict.reason}, '$.decided_at', ${now.toISOString()})
          WHERE id = ${row.id}`,
        ),
        appendEvent(
          db,
          {
            type: "council.prescreen_passed",
            subject: row.id,
            payload: { proposal_id: row.id, job_id: end.job_id, source: verdict.source },
          },
          now,
        ),
      ]);
    } catch (err) {
      // A repeated notice lost the race to the first: the session is already open.
      if (isGuardFailure(err, "council_proposals.status")) return { applied: false };
      throw err;
    }
    return { applied: true, passed: true };
  }
  await rejectPrescreen(
    env,
    db,
    row.id,
    end.job_id,
    { reason: verdict.reason, source: verdict.source, ...(verdict.detail ? { detail: verdict.detail } : {}) },
    now,
  );
  return { applied: true, passed: false };
}

/** Rejects a proposal still in prescreening (its verdict, or the tick's timeout). */
export async function rejectPrescreen(
  env: Env,
  db: Db,
  proposalId: string,
  jobId: string | undefined,
  why: { reason: string; source: string; detail?: string },
  now: Date,
) {
  const at = now.toISOString();
  const jobCond = jobId ? sql` AND json_extract(prescreen, '$.job_id') = ${jobId}` : sql``;
  const results = await db.batch([
    batchable(
      db,
      sql`
      UPDATE council_proposals SET status = 'rejected', updated_at = ${at},
        rejection = ${JSON.stringify({ reason: why.reason, ...(why.detail ? { detail: why.detail } : {}) })},
        prescreen = json_set(prescreen, '$.status', 'rejected', '$.source', ${why.source}, '$.reason', ${why.reason}, '$.decided_at', ${at})
      WHERE id = ${proposalId} AND status = 'prescreening'${jobCond}`,
    ),
    // Recorded only when this batch's update rejected it (a repeated verdict, or a verdict that won
    // the race with the timeout, must not add a rejection that did not happen), and once.
    appendEventWhere(
      db,
      {
        type: "council.proposal_rejected",
        subject: proposalId,
        payload: { proposal_id: proposalId, job_id: jobId ?? null, ...why },
        dedupeKey: `council:${proposalId}:rejected`,
      },
      now,
      sql`EXISTS (SELECT 1 FROM council_proposals WHERE id = ${proposalId} AND status = 'rejected' AND json_extract(prescreen, '$.decided_at') = ${at})`,
    ),
    notifySelectedStatement(
      db,
      sql`SELECT node_id FROM council_proposals WHERE id = ${proposalId} AND status = 'rejected' AND json_extract(prescreen, '$.answered') = '202' AND json_extract(prescreen, '$.decided_at') = ${at}`,
      {
        type: "council_proposal_rejected",
        payload: { proposal_id: proposalId, reason: why.reason, ...(why.detail ? { detail: why.detail } : {}) },
        dedupe: `council:${proposalId}:rejected`,
      },
      now,
    ),
  ] as [BatchItem<"sqlite">, ...BatchItem<"sqlite">[]]);
  await enqueuePushes(env, Array.isArray(results[2]) ? (results[2] as never[]) : []);
}

/** Proposals whose prescreen gave no verdict in time: rejected, fail closed (the minute tick). */
export async function expirePrescreens(env: Env, db: Db, now: Date, config: Pick<CouncilConfig, "prescreen_timeout_ms">) {
  const cutoff = new Date(now.getTime() - config.prescreen_timeout_ms).toISOString();
  const stale = await db
    .select({ id: councilProposals.id, prescreen: councilProposals.prescreen })
    .from(councilProposals)
    .where(and(eq(councilProposals.status, "prescreening"), sql`${councilProposals.createdAt} <= ${cutoff}`))
    .limit(100)
    .all();
  for (const p of stale) await rejectPrescreen(env, db, p.id, p.prescreen.job_id, { reason: "prescreen_timeout", source: "timeout" }, now);
  return stale.length;
}
