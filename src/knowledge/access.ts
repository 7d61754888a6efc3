import type { Db } from "../db/client";
import type { Principal } from "../lib/auth";
import { AppError } from "../lib/errors";
import { parseMemberScope } from "../team/member-token";
import { findTeamSpec } from "../team/spec-store";

/**
 * Who may read an employee's memory and wiki: operators (viewer and up, checked by the route), and
 * the employee's own role members with their member token — the token is pinned to a task, and the
 * task's frozen team spec names the employee it works for. A member of one employee's round never
 * reads another employee's knowledge.
 */
export async function assertMayReadKnowledge(db: Db, principal: Principal, employeeId: string): Promise<void> {
  if (principal.kind === "operator") return;
  if (principal.kind === "member") {
    const scope = parseMemberScope(principal.scope);
    if (!scope) throw new AppError("forbidden", "This member token is not pinned to a task, round and role");
    const spec = await findTeamSpec(db, scope.task_id);
    if (spec?.employeeId === employeeId) return;
    throw new AppError("forbidden", "A member token reads only the memory and wiki of the employee its round works for");
  }
  throw new AppError("forbidden", "This token may not read an employee's memory or wiki");
}
