import * as z from "zod";
import type { Db } from "../db/client";
import type { Env } from "../env";
import { AppError, type FieldError } from "../lib/errors";
import { readCouncilConfig } from "../council/config";
import { dialogBody } from "../council/dialog";
import type { DialogBody } from "../council/machine-types";
import { proposalInput, submitProposal, type ProposalInput } from "../council/proposals";
import { cryptoRandom } from "../council/random";
import { sessionDetail } from "../council/views";

/** EvoMap's gate tokens: a `/v1` `not_eligible` carrying one of these as its reason becomes that code. */
const GATE_TOKENS = new Set(["reputation_insufficient", "model_tier_insufficient"]);

/**
 * Runs a feature call and renames its gate refusals to EvoMap's tokens (`403
 * reputation_insufficient`, `403 model_tier_insufficient`): the facade's only change to an error.
 */
export async function withEvomapTokens<T>(call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (err) {
    const reason = err instanceof AppError ? err.extra?.reason : undefined;
    if (err instanceof AppError && err.code === "not_eligible" && typeof reason === "string" && GATE_TOKENS.has(reason)) {
      throw new AppError(reason as "reputation_insufficient" | "model_tier_insufficient", err.detail, {
        ...(err.errors ? { errors: err.errors } : {}),
        ...(err.extra ? { extra: err.extra } : {}),
      });
    }
    throw err;
  }
}

/** The sender of a facade call is the node its secret belongs to: `sender_id`/`node_id`, when given, must say so. */
export function checkSender(nodeId: string, body: { sender_id?: string | undefined; node_id?: string | undefined }): void {
  for (const claimed of [body.sender_id, body.node_id]) {
    if (claimed !== undefined && claimed !== nodeId)
      throw new AppError("forbidden", "sender_id/node_id is not the node this secret belongs to");
  }
}

// Facade bodies are `z.object`, not strict: EvoMap clients add fields release by release, and the
// protocol ignores keys it does not know (API.md "/a2a facade": never a 422 for them).
const senderFields = { sender_id: z.string().max(128).optional(), node_id: z.string().max(128).optional() };

/** A translated proposal and, for its errors, which facade field each `/v1` field came from. */
export interface TranslatedProposal {
  input: ProposalInput;
  paths: Record<string, string>;
}

/** Validates a translated proposal with the `/v1` schema, naming the facade's own fields in errors. */
function asProposal(raw: Record<string, unknown>, paths: Record<string, string>): TranslatedProposal {
  const parsed = proposalInput.safeParse(raw);
  if (parsed.success) return { input: parsed.data, paths };
  const errors: FieldError[] = parsed.error.issues.map((i) => {
    const path = i.path.map(String).join(".");
    return { path: paths[path] ?? path, message: i.message };
  });
  throw new AppError("validation_failed", "The proposal is invalid", { errors });
}

/** The same refusal, its field errors named as the facade's fields (the content-quality gate names `/v1`'s). */
function renamed(err: unknown, paths: Record<string, string>): unknown {
  if (!(err instanceof AppError) || !err.errors) return err;
  return new AppError(err.code, err.detail, {
    errors: err.errors.map((e) => ({ ...e, path: paths[e.path] ?? e.path })),
    ...(err.extra ? { extra: err.extra } : {}),
  });
}

export const councilProposeBody = z.object({
  ...senderFields,
  type: z.enum(["project_proposal", "general"]),
  title: z.string().max(1_000),
  description: z.string().max(20_000).optional(),
  /** For a project proposal: `name`, `summary`, `repo_name`, `plan`; otherwise not used. */
  payload: z.record(z.string(), z.unknown()).optional(),
});

const str = (v: unknown) => (typeof v === "string" ? v : undefined);

/** `/a2a/council/propose` → the `/v1` proposal: `description` is the body; a project's fields come from `payload`. */
export function councilProposal(b: z.infer<typeof councilProposeBody>): TranslatedProposal {
  if (b.type === "general") return asProposal({ title: b.title, body: b.description ?? "", kind: "general" }, { body: "description" });
  const p = b.payload ?? {};
  const plan = str(p.plan);
  return asProposal(
    {
      title: b.title,
      body: [b.description, plan].filter(Boolean).join("\n\n"),
      kind: "project",
      project: {
        name: str(p.name) ?? str(p.repo_name) ?? b.title.slice(0, 100),
        summary: str(p.summary) ?? b.description?.slice(0, 2_000) ?? b.title,
        ...(str(p.repo_name) ? { repo_name: str(p.repo_name) } : {}),
      },
    },
    { body: "description", "project.name": "payload.name", "project.summary": "payload.summary", "project.repo_name": "payload.repo_name" },
  );
}

export const projectProposeBody = z.object({
  ...senderFields,
  title: z.string().max(1_000),
  description: z.string().max(20_000),
  repo_name: z.string().max(200),
  plan: z.string().max(20_000),
});

/** `/a2a/project/propose` → a `/v1` project proposal: the plan is the body, the repository name names the project. */
export function projectProposal(b: z.infer<typeof projectProposeBody>): TranslatedProposal {
  return asProposal(
    {
      title: b.title,
      body: b.plan,
      kind: "project",
      project: { name: b.repo_name.slice(0, 100), summary: b.description, repo_name: b.repo_name },
    },
    { body: "plan", "project.name": "repo_name", "project.summary": "description", "project.repo_name": "repo_name" },
  );
}

/**
 * Submits a proposal exactly as `POST /v1/council/proposals` does, answering in EvoMap's shape. A
 * session that could not seat enough members is recorded as `/v1` records it (abandoned,
 * `insufficient_members`) and answered with EvoMap's `409 insufficient_council_members`.
 */
export async function proposeToCouncil(env: Env, db: Db, nodeId: string, { input, paths }: TranslatedProposal, now: Date) {
  const result = await withEvomapTokens(async () =>
    submitProposal(env, db, nodeId, input, now, { config: await readCouncilConfig(db, now), random: cryptoRandom }).catch(
      (err: unknown) => {
        throw renamed(err, paths);
      },
    ),
  );
  if (!result.session_id) {
    return {
      status: 202 as const,
      body: { deliberation_id: null, proposal_id: result.proposal_id, status: result.proposal_status, council_members: [] },
    };
  }
  const s = await sessionDetail(db, result.session_id);
  const members = s.members.filter((m) => m.role !== "proposer").map((m) => m.node_id);
  const common = { deliberation_id: s.session_id, proposal_id: result.proposal_id, ...(s.project_id ? { project_id: s.project_id } : {}) };
  if (s.phase === "abandoned") {
    throw new AppError(
      "insufficient_council_members",
      "Fewer than 5 eligible members could be seated; the proposal is recorded as abandoned",
      {
        extra: { ...common, reason: "insufficient_members", council_members: members },
      },
    );
  }
  return {
    status: 201 as const,
    body: {
      ...common,
      status: s.phase,
      round: 1,
      council_members: members,
      proposal_type: input.kind === "project" ? "project_proposal" : "general",
    },
  };
}

export const a2aDialogBody = z.object({
  ...senderFields,
  deliberation_id: z.string().regex(/^delib_[0-9a-f]{16}$/, "a deliberation id"),
  dialog_type: z.string().max(32),
  /** Text, or for a vote `{vote, confidence, conditions[], reasoning}`, for an amendment `{amendment_type, amendment_target, amendment_content}`. */
  content: z.union([z.string(), z.record(z.string(), z.unknown())]).optional(),
  reply_to: z.string().max(64).optional(),
  amendment_type: z.string().max(32).optional(),
  amendment_target: z.string().max(2_000).optional(),
  amendment_content: z.string().max(10_000).optional(),
});

// EvoMap's names for dialog moves crewplane calls otherwise.
const DIALOG_ALIASES: Record<string, string> = { build_on: "develop", disagree: "challenge" };

/** `/a2a/dialog` → the `/v1` dialog body (validated by the same schema; a vote carries no hash). */
export function dialogFromA2a(b: z.infer<typeof a2aDialogBody>): DialogBody {
  const dialogType = DIALOG_ALIASES[b.dialog_type] ?? b.dialog_type;
  const content = b.content;
  const structured = typeof content === "object" ? content : {};
  const raw: Record<string, unknown> = {
    dialog_type: dialogType,
    ...(typeof content === "string" ? { content } : {}),
    ...(b.reply_to !== undefined ? { reply_to: b.reply_to } : {}),
    ...(b.amendment_type !== undefined ? { amendment_type: b.amendment_type } : {}),
    ...(b.amendment_target !== undefined ? { amendment_target: b.amendment_target } : {}),
    ...(b.amendment_content !== undefined ? { amendment_content: b.amendment_content } : {}),
  };
  const fromContent =
    dialogType === "vote"
      ? ["vote", "confidence", "conditions", "reasoning"]
      : dialogType === "amend"
        ? ["amendment_type", "amendment_target", "amendment_content"]
        : typeof content === "object"
          ? ["content"]
          : [];
  for (const key of Object.keys(structured)) {
    if (!fromContent.includes(key)) continue;
    raw[key] = structured[key];
  }
  const unknown = Object.keys(structured).filter((k) => !fromContent.includes(k));
  const parsed = dialogBody.safeParse(raw);
  const errors: FieldError[] = unknown.map((k) => ({ path: `content.${k}`, message: `not part of a ${dialogType} dialog` }));
  if (!parsed.success) {
    errors.push(
      ...parsed.error.issues.map((i) => {
        const path = i.path.map(String).join(".");
        const inContent = typeof content === "object" && fromContent.includes(path.split(".")[0]!);
        return { path: inContent ? `content.${path}` : path, message: i.message };
      }),
    );
  }
  if (errors.length > 0 || !parsed.success) throw new AppError("validation_failed", "The dialog is invalid", { errors });
  return parsed.data as DialogBody;
}
