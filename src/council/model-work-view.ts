import type { PrescreenRecord } from "../db/schema";
import { MODEL_WORK_REASONS, type ModelWorkReason, type StagePlan } from "../jobs/model-work";
import type { SessionState } from "./session";

/**
 * One stage of a session's model work as the public view shows it (`model_work` in
 * `GET /v1/council/sessions/:id`): whether its result came from a model (or is waiting for one), on
 * which runtime, and otherwise why not. Read from what was recorded when the stage was decided (the
 * proposal's prescreen record, the session's `model_work` plans) and what its job answered; nothing
 * is recomputed from today's configuration.
 */
export interface StageView {
  status: "not_reached" | "pending" | "done" | "failed";
  on_model: boolean;
  runtime?: string;
  fell_back_because?: ModelWorkReason;
  wanted_runtime?: string;
  /** The stage's own note or reason (`synthesis_timeout`, `ethics_unparseable:…`), when it has one. */
  detail?: string;
}

const NOT_REACHED: StageView = { status: "not_reached", on_model: false };

const asReason = (r: string | undefined): ModelWorkReason =>
  (MODEL_WORK_REASONS as readonly string[]).includes(r ?? "") ? (r as ModelWorkReason) : "unrecorded";

/** A stage decided without a model: the reason recorded then. */
function fellBack(status: StageView["status"], plan: StagePlan, detail?: string): StageView {
  return {
    status,
    on_model: false,
    ...(plan.runtime ? { runtime: plan.runtime } : {}),
    fell_back_because: plan.fell_back_because ?? "unrecorded",
    ...(plan.wanted_runtime ? { wanted_runtime: plan.wanted_runtime } : {}),
    ...(detail ? { detail } : {}),
  };
}

/** Why a model job gave nothing usable, from the stage's own token (`<stage>_timeout`, `<stage>_job_failed…`). */
function jobReason(token: string): ModelWorkReason {
  if (/_timeout$/.test(token)) return "model_timeout";
  if (/_job_|^job_/.test(token)) return "model_failed";
  if (/offline/.test(token)) return "offline_runtime";
  if (/not_offered/.test(token)) return "runtime_not_offered";
  return "model_unusable";
}

export function prescreenStage(p: PrescreenRecord | undefined): StageView {
  if (!p) return NOT_REACHED;
  if (p.mode === "off") {
    return {
      status: "done",
      on_model: false,
      fell_back_because: asReason(p.fell_back_because),
      ...(p.wanted_runtime ? { wanted_runtime: p.wanted_runtime } : {}),
    };
  }
  const runtime = p.runtime ? { runtime: p.runtime } : {};
  if (p.status === "pending") return { status: "pending", on_model: true, ...runtime };
  // A verdict the model gave (accept, or a reasoned reject) ran on the model; anything else is why not.
  if (p.status === "passed" || p.reason === "prescreen_rejected") return { status: "done", on_model: true, ...runtime };
  const source = p.source ?? "";
  const why: ModelWorkReason =
    source === "timeout"
      ? "model_timeout"
      : source.startsWith("job_")
        ? "model_failed"
        : source === "offline"
          ? "offline_runtime"
          : "model_unusable";
  return { status: "done", on_model: false, ...runtime, fell_back_because: why, ...(p.reason ? { detail: p.reason } : {}) };
}

export function synthesisStage(s: Pick<SessionState, "synthesis" | "model_work">): StageView {
  const syn = s.synthesis;
  if (!syn) return NOT_REACHED;
  const plan = s.model_work?.synthesis;
  const status = syn.status === "pending" ? "pending" : "done";
  if (plan && !plan.on_model) return fellBack(status, plan, syn.note);
  const runtime = syn.runtime ? { runtime: syn.runtime } : {};
  if (syn.status === "pending" || syn.source === "model") return { status, on_model: true, ...runtime };
  const note = syn.note ?? "";
  const why: ModelWorkReason = note === "synthesis_off" ? "stage_off" : note ? jobReason(note) : "unrecorded";
  return { status, on_model: false, ...runtime, fell_back_because: why, ...(note ? { detail: note } : {}) };
}

export function ethicsStage(s: Pick<SessionState, "ethics" | "model_work">): StageView {
  const e = s.ethics;
  if (!e) return NOT_REACHED;
  const plan = s.model_work?.ethics;
  const runtime = plan?.runtime ? { runtime: plan.runtime } : {};
  const m = e.model;
  switch (m.status) {
    case "off":
      return plan ? fellBack("done", plan) : { status: "done", on_model: false, fell_back_because: "unrecorded" };
    case "not_needed":
      // A rejection, or an objection the rules already raised, needs no model review.
      return { status: "done", on_model: false, ...runtime, fell_back_because: "not_needed" };
    case "pending":
      return { status: "pending", on_model: true, ...runtime };
    case "passed":
    case "revise":
      return { status: "done", on_model: true, ...runtime };
    case "unavailable":
      return {
        status: "done",
        on_model: false,
        ...runtime,
        fell_back_because: jobReason(m.reason ?? ""),
        ...(m.reason ? { detail: m.reason } : {}),
      };
  }
}

/**
 * The project's decomposition (project sessions): the plan recorded with its latest attempt (the
 * `project.decomposition_requested` event) and where the project's decomposition stands.
 */
export function decompositionStage(
  requested: { runtime?: unknown; model_work?: unknown } | undefined,
  project: { decompState: string | null; decompSource: string | null; decompReason: string | null } | undefined,
): StageView {
  if (!project?.decompState) return NOT_REACHED;
  const plan = requested?.model_work as StagePlan | undefined;
  const runtime = typeof requested?.runtime === "string" ? { runtime: requested.runtime } : {};
  const status = project.decompState === "pending" ? "pending" : project.decompState === "done" ? "done" : "failed";
  if (status === "done") {
    // Decomposed by hand (a manager, the proposer): not a model's work, whatever the last attempt was.
    if (project.decompSource !== "model") {
      return { status, on_model: false, ...(plan && !plan.on_model ? { fell_back_because: plan.fell_back_because ?? "unrecorded" } : {}) };
    }
    return { status, on_model: true, ...runtime };
  }
  if (plan && !plan.on_model) {
    const reason = project.decompReason ?? undefined;
    return fellBack(status, plan, reason === plan.fell_back_because ? undefined : reason);
  }
  if (status === "pending") return { status, on_model: true, ...runtime };
  const reason = project.decompReason ?? "";
  // A veto took the approval back while the job ran: not the model work's failing.
  if (reason === "project_not_approved") return { status, on_model: false, ...runtime, detail: reason };
  return { status, on_model: false, ...runtime, fell_back_because: jobReason(reason), ...(reason ? { detail: reason } : {}) };
}
