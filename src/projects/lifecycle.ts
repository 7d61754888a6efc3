import { PROJECT_STATUSES, type ProjectStatus } from "../db/schema";

/**
 * The lifecycle of an official project (seed 004 "ライフサイクル"):
 *
 *     proposed → council_review → approved → active → completed → archived
 *
 * as a table of the moves that exist and who makes each. Everything not in the table is illegal
 * (`409 illegal_transition`), for everyone.
 *
 * - `council`: the deliberation's effects. A project proposal puts its project under review; a
 *   tabled, abandoned or revise outcome returns it to `proposed` (re-submittable); an approval
 *   approves it; a rejection archives it. A veto returns an approved project to `proposed`, and a
 *   veto that lapses restores the decision (so `proposed → approved` and `proposed → archived`).
 * - `decomposition`: a project becomes `active` only when a valid decomposition lands its tasks in
 *   the same batch (seed 004 "タスク分解保護").
 * - `manager`: the operator moves after that: complete, archive; and withdrawing a proposed or an
 *   approved project (archive). A manager never approves (that is the council's binding decision)
 *   and never activates without tasks.
 */
export const ACTORS = ["council", "decomposition", "manager"] as const;
export type Actor = (typeof ACTORS)[number];

type Move = `${ProjectStatus}>${ProjectStatus}`;

export const MOVES: ReadonlyMap<Move, readonly Actor[]> = new Map<Move, readonly Actor[]>([
  ["proposed>council_review", ["council"]],
  ["proposed>approved", ["council"]],
  ["proposed>archived", ["council", "manager"]],
  ["council_review>proposed", ["council"]],
  ["council_review>approved", ["council"]],
  ["council_review>archived", ["council"]],
  ["approved>proposed", ["council"]],
  ["approved>active", ["decomposition"]],
  ["approved>archived", ["manager"]],
  ["active>completed", ["manager"]],
  ["active>archived", ["manager"]],
  ["completed>archived", ["manager"]],
]);

export type TransitionVerdict =
  | { ok: true }
  | {
      ok: false;
      /** `same_status`, `not_a_move` (no such move exists) or `not_for_actor` (someone else makes it). */
      reason: "same_status" | "not_a_move" | "not_for_actor";
      detail: string;
      /** Who makes this move, when it exists. */
      made_by?: readonly Actor[];
    };

/** Whether `actor` may move a project from `from` to `to`. */
export function transitionVerdict(from: ProjectStatus, to: ProjectStatus, actor: Actor): TransitionVerdict {
  if (from === to) return { ok: false, reason: "same_status", detail: `The project is already ${to}` };
  const by = MOVES.get(`${from}>${to}`);
  if (!by) return { ok: false, reason: "not_a_move", detail: `A project never moves from ${from} to ${to}` };
  if (!by.includes(actor)) {
    return {
      ok: false,
      reason: "not_for_actor",
      detail: `Only the ${by.join(" or ")} moves a project from ${from} to ${to}`,
      made_by: by,
    };
  }
  return { ok: true };
}

/** The statuses `actor` may move a project in `from` to, in lifecycle order. */
export function legalTargets(from: ProjectStatus, actor: Actor): ProjectStatus[] {
  return PROJECT_STATUSES.filter((to) => transitionVerdict(from, to, actor).ok);
}

/** Of `candidates`, the statuses `actor` may move a project from to `to` (council effects use this). */
export function legalSources(to: ProjectStatus, candidates: readonly ProjectStatus[], actor: Actor): ProjectStatus[] {
  return candidates.filter((from) => transitionVerdict(from, to, actor).ok);
}

/** A project that is finished with: its open tasks are revoked when it gets here. */
export function isClosed(status: ProjectStatus): boolean {
  return status === "completed" || status === "archived";
}
