import { and, eq, isNull } from "drizzle-orm";
import * as z from "zod";
import type { Db } from "../db/client";
import { credentials } from "../db/schema";
import type { Principal } from "../lib/auth";
import { mintCredential } from "../lib/credentials";

/**
 * The token an employee's own run (an `employee_turn` job) acts with: the foundation's `member`
 * credential (stored hashed, shown once), its subject pinned to the employee and the job, expiring
 * with the job and revoked the moment it ends. It reaches only what the employee may do about itself
 * (its evolution status and toggles, seed 003 §7); a team member's endpoints refuse it (its scope is
 * no task, round and role).
 */
export const employeeTurnScope = z.object({
  kind: z.literal("employee_turn"),
  employee_id: z.string().min(1),
  job_id: z.string().min(1),
});
export type EmployeeTurnScope = z.infer<typeof employeeTurnScope>;

export function parseEmployeeTurnScope(subject: string): EmployeeTurnScope | null {
  try {
    const parsed = employeeTurnScope.safeParse(JSON.parse(subject));
    return parsed.success ? parsed.data : null;
  } catch {
    return null;
  }
}

const tokenName = (jobId: string) => `employee_turn:${jobId}`;

/** Mints the token of one employee run; the insert is returned un-executed for the caller's batch. */
export function mintEmployeeToken(db: Db, scope: Omit<EmployeeTurnScope, "kind">, expiresAt: Date, now: Date) {
  return mintCredential(
    db,
    { kind: "member", name: tokenName(scope.job_id), subject: JSON.stringify({ kind: "employee_turn", ...scope }), expiresAt },
    now,
  );
}

/** The run ended: its token stops working at once. */
export function revokeEmployeeToken(db: Db, jobId: string, now: Date) {
  return db
    .update(credentials)
    .set({ revokedAt: now.toISOString() })
    .where(and(eq(credentials.kind, "member"), eq(credentials.name, tokenName(jobId)), isNull(credentials.revokedAt)));
}

/** Whether `principal` is the employee's own run (its employee_turn token). */
export function actsAsEmployee(principal: Principal, employeeId: string): boolean {
  if (principal.kind !== "member") return false;
  return parseEmployeeTurnScope(principal.scope)?.employee_id === employeeId;
}
