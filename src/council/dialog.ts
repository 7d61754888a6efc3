import { eq } from "drizzle-orm";
import * as z from "zod";
import { getDb } from "../db/client";
import { projects } from "../db/schema";
import { getCouncilSession } from "../durable-objects/council-session-rpc";
import type { Env } from "../env";
import { readSectionCached } from "../lib/config";
import { BOOTSTRAP_ADMIN_ID } from "../lib/auth";
import { AppError } from "../lib/errors";
import { label, prose } from "../lib/validation";
import { getActiveNode } from "../nodes/registry";
import { councilConfig } from "./config";
import { takesDirect, writeDirectDialog, type Poster } from "./direct-dialog";
import { STARTED_PROJECT } from "./effects";
import type { DialogBody } from "./machine-types";
import { AMENDMENT_TYPES, DIALOG_TYPES, type DialogRecord } from "./session";
import { loadSession } from "./session-store";
import { VOTES } from "./tally";

const CONTENT_TYPES = new Set(["assess", "challenge", "develop"]);

/** A dialog as every entry point takes it; `/v1` also demands `proposal_hash` on a vote (see `v1DialogBody`). */
export const dialogBody = z
  .strictObject({
    dialog_type: z.enum(DIALOG_TYPES),
    content: prose(10_000).optional(),
    reply_to: z
      .string()
      .regex(/^dlg_[0-9a-f]{16}$/, "a dialog id")
      .optional(),
    amendment_type: z.enum(AMENDMENT_TYPES).optional(),
    amendment_target: prose(2_000).optional(),
    amendment_content: prose(10_000).optional(),
    vote: z.enum(VOTES).optional(),
    conditions: z.array(label(1_000)).max(20).optional(),
    confidence: z.number().min(0).max(1).optional(),
    reasoning: prose(10_000).optional(),
    proposal_hash: z
      .string()
      .regex(/^[0-9a-f]{64}$/, "a SHA-256 hex digest")
      .optional(),
  })
  .superRefine((d, ctx) => {
    const need = (field: keyof typeof d, why: string) => {
      if (d[field] === undefined) ctx.addIssue({ code: "custom", path: [field], message: why });
    };
    if (CONTENT_TYPES.has(d.dialog_type)) need("content", `a ${d.dialog_type} dialog has content`);
    if (d.dialog_type === "amend") {
      need("amendment_type", "an amendment names its type (add, remove, replace)");
      need("amendment_target", "an amendment names its target");
      need("amendment_content", "an amendment states its content");
    }
    if (d.dialog_type === "vote") {
      need("vote", "a ballot says approve, reject or revise");
      need("confidence", "a ballot carries a confidence in [0, 1]");
    }
    // Fields of another dialog type are refused rather than silently dropped.
    const foreign = (fields: (keyof typeof d)[], owner: string) => {
      for (const f of fields)
        if (d[f] !== undefined) ctx.addIssue({ code: "custom", path: [f], message: `only a ${owner} dialog has ${f}` });
    };
    if (d.dialog_type !== "vote") foreign(["vote", "confidence", "conditions", "reasoning", "proposal_hash"], "vote");
    if (d.dialog_type !== "amend") foreign(["amendment_type", "amendment_target", "amendment_content"], "amend");
  });

export const v1DialogBody = dialogBody.superRefine((d, ctx) => {
  if (d.dialog_type === "vote" && d.proposal_hash === undefined) {
    ctx.addIssue({ code: "custom", path: ["proposal_hash"], message: "a ballot names the proposal_hash of the text it votes on" });
  }
});

/**
 * Posts a dialog and turns a refusal into the API's error. A plain contribution is written directly
 * (`postDirectDialog`) when its guards pass; everything else, and whatever the direct write did not
 * take, goes through the session's single writer, which gives the exact refusal.
 * Without `proposal_hash` a vote binds to the hash frozen when voting opened (the /a2a facade).
 * `direct: false` skips the direct write (the caller just tried it).
 */
export async function postDialog(
  env: Env,
  sessionId: string,
  nodeId: string,
  body: DialogBody,
  now: Date,
  opts: { defer?: Defer; direct?: boolean } = {},
): Promise<DialogRecord> {
  if (opts.direct !== false) {
    const dialog = await postDirectDialog(env, sessionId, { node_id: nodeId }, body, now, opts);
    if (dialog) return dialog;
  }
  // The direct write takes no dialog from a suspended node; neither does the session's object.
  await getActiveNode(getDb(env.DB), nodeId);
  const out = await getCouncilSession(env, sessionId).dialog({ session_id: sessionId, node_id: nodeId, body, now: now.getTime() });
  if (!out.ok) throw new AppError(out.code, out.detail);
  return out.dialog!;
}

/** Hands work to the request's `waitUntil`, so it may finish after the answer. */
type Defer = (work: Promise<unknown>) => void;

/**
 * The direct write of a plain contribution (direct-dialog.ts), or null when it is not one or the
 * write's guards did not pass (nothing written). The first dialog since the session's last check
 * nudges its object's alarm to the debounced progress check: through `defer` when given (the
 * answer need not wait), else awaited. A lost nudge delays that check to the minute tick.
 */
export async function postDirectDialog(
  env: Env,
  sessionId: string,
  poster: Poster,
  body: DialogBody,
  now: Date,
  opts: { defer?: Defer } = {},
): Promise<DialogRecord | null> {
  if (!takesDirect(body)) return null;
  const db = getDb(env.DB);
  const config = await readSectionCached(db, councilConfig);
  const direct = await writeDirectDialog(db, { session_id: sessionId, poster, body, now, debounce_ms: config.progress_debounce_ms });
  if (!direct) return null;
  if (direct.nudge !== null) {
    const nudge = getCouncilSession(env, sessionId)
      .nudge({ session_id: sessionId, due: direct.nudge, now: now.getTime() })
      .catch((err: unknown) => console.error(`council: nudging session ${sessionId} failed; the minute tick will check it`, err));
    if (opts.defer) opts.defer(nudge);
    else await nudge;
  }
  return direct.dialog;
}

/**
 * A veto and its ratification name the person who gave them (the "different admin" rule is about
 * people); the bootstrap ADMIN_TOKEN is a shared setup secret, nobody in particular, so it may do
 * neither, exactly as it may not decide approvals.
 */
function assertDecider(by: string, act: string) {
  if (by === BOOTSTRAP_ADMIN_ID) {
    throw new AppError("forbidden", `The bootstrap ADMIN_TOKEN cannot ${act}; use a named admin operator token`, {
      extra: { reason: "bootstrap_token_not_a_decider" },
    });
  }
}

function projectActive(projectId: string, status: string) {
  return new AppError(
    "project_active",
    `The session's project is ${status}: a veto can take back an approval, not a project that has started (a manager archives it)`,
    { extra: { project_id: projectId, project_status: status } },
  );
}

/**
 * The emergency veto. A project session whose project has started (active, completed) is refused
 * with `409 project_active` and changes nothing: the lifecycle has no council move that stops a
 * running project, and a `vetoed` record beside a running project would say something untrue. The
 * check runs here for a clear answer, and again inside the save (a decomposition that lands in
 * between aborts the veto's batch).
 */
export async function vetoSession(env: Env, sessionId: string, by: string, reason: string, now: Date) {
  assertDecider(by, "veto a council decision");
  const db = getDb(env.DB);
  const stored = await loadSession(db, sessionId);
  const projectId = stored?.state.kind === "project" ? stored.state.project_id : null;
  if (projectId) {
    const project = await db.select({ status: projects.status }).from(projects).where(eq(projects.id, projectId)).get();
    if (project && STARTED_PROJECT.includes(project.status)) throw projectActive(projectId, project.status);
  }
  const out = await getCouncilSession(env, sessionId).veto({ session_id: sessionId, by, reason, now: now.getTime() });
  if (!out.ok && out.code === "project_active" && projectId) {
    const project = await db.select({ status: projects.status }).from(projects).where(eq(projects.id, projectId)).get();
    throw projectActive(projectId, project?.status ?? "active");
  }
  if (!out.ok) throw new AppError(out.code, out.detail);
  return out;
}

export async function ratifyVeto(env: Env, sessionId: string, by: string, now: Date) {
  assertDecider(by, "ratify a veto");
  const out = await getCouncilSession(env, sessionId).ratify({ session_id: sessionId, by, now: now.getTime() });
  if (!out.ok) throw new AppError(out.code, out.detail);
  return out;
}

/** Runs a session's check now (the tick does this for due sessions; tests and admins may too). */
export async function checkSession(env: Env, sessionId: string, now: Date) {
  const out = await getCouncilSession(env, sessionId).check({ session_id: sessionId, now: now.getTime() });
  if (!out.ok) throw new AppError(out.code, out.detail);
  return out;
}
