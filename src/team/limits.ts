import { inArray } from "drizzle-orm";
import * as z from "zod";
import type { Db } from "../db/client";
import { settings } from "../db/schema";
import { TEAM_DISPATCH_FIELDS, TEAM_DISPATCH_GUARD_FIELDS } from "../tasks/dispatch/team-fields";

const dispatchPart = z.object(TEAM_DISPATCH_FIELDS);
const guardPart = z.object(TEAM_DISPATCH_GUARD_FIELDS);

export type TeamLimits = z.infer<typeof dispatchPart> & z.infer<typeof guardPart>;

/** A stored section that does not parse counts as no section: a corrupt value is no value. */
export async function readTeamLimits(db: Db): Promise<TeamLimits> {
  const rows = await db
    .select()
    .from(settings)
    .where(inArray(settings.section, ["dispatch", "dispatch_guard"]))
    .all();
  const value = (name: string) => rows.find((r) => r.section === name)?.value ?? {};
  const d = dispatchPart.safeParse(value("dispatch"));
  const g = guardPart.safeParse(value("dispatch_guard"));
  return { ...(d.success ? d.data : dispatchPart.parse({})), ...(g.success ? g.data : guardPart.parse({})) };
}
