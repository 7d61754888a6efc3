import { and, eq, isNull, like } from "drizzle-orm";
import * as z from "zod";
import type { Db } from "../db/client";
import { credentials } from "../db/schema";
import { mintCredential } from "../lib/credentials";
import { TEAM_ROLES } from "./settings";

/**
 * A member token is the foundation's `member` credential (stored hashed, shown once) whose
 * `subject` pins it to one (task, round, role) and the stage it was minted for. Its name lets a
 * round's tokens be revoked together when the round ends.
 */
export const memberScope = z.object({
  kind: z.literal("team_stage"),
  task_id: z.string().min(1),
  round: z.number().int().min(1),
  round_id: z.string().min(1),
  role: z.enum(TEAM_ROLES),
  stage_id: z.string().min(1),
});
export type MemberScope = z.infer<typeof memberScope>;

/** A member identity that is not pinned to a task/round/role is no team identity at all. */
export function parseMemberScope(subject: string): MemberScope | null {
  try {
    const parsed = memberScope.safeParse(JSON.parse(subject));
    return parsed.success ? parsed.data : null;
  } catch {
    return null;
  }
}

const tokenName = (roundId: string, stageId: string) => `team:${roundId}:${stageId}`;

/** Mints a stage's member token; the insert is returned un-executed for the caller's batch. */
export function mintMemberToken(db: Db, scope: MemberScope, expiresAt: Date, now: Date) {
  return mintCredential(
    db,
    { kind: "member", name: tokenName(scope.round_id, scope.stage_id), subject: JSON.stringify(scope), expiresAt },
    now,
  );
}

/** Revokes every live member token of a round (it ended): a straggler member can hand off nothing more. */
export function revokeRoundMemberTokens(db: Db, roundId: string, now: Date) {
  return db
    .update(credentials)
    .set({ revokedAt: now.toISOString() })
    .where(and(eq(credentials.kind, "member"), like(credentials.name, `team:${roundId}:%`), isNull(credentials.revokedAt)));
}
