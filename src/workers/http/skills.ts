import { Hono } from "hono";
import * as z from "zod";
import { getDb } from "../../db/client";
import { skillBody } from "../../evolution/skills";
import { changeSkillState, createSkill, listSkills, updateSkill, type SkillAction } from "../../evolution/skills-store";
import { requireAuth } from "../middleware/require-auth";
import { validate } from "../middleware/validate";
import { employeeId } from "../../tasks/employees";
import type { AppEnv } from "../app-env";
import { describe } from "../openapi/describe";
import { skillListSchema, skillSchema } from "../openapi/responses/employees-skills";

const idParam = z.object({ id: employeeId });
const skillParam = idParam.extend({
  skill_id: z
    .string()
    .min(1)
    .max(64)
    .regex(/^[A-Za-z0-9_-]+$/),
});
const skillPatch = skillBody.partial().refine((b) => Object.keys(b).length > 0, "name at least one field to change");

/**
 * An employee's skills (seed 003 §5.1 step 5, §7), mounted on `/v1/employees`. Read by viewers;
 * created, changed and switched by managers. With `skill_security_scan` on, a new or changed text is
 * refused (`security_scan`, 403) when the static scan finds an attack in it.
 */
export const skillRoutes = new Hono<AppEnv>()
  .get(
    "/:id/skills",
    describe({ summary: "The employee's skills, with their state and lift", responses: { 200: skillListSchema }, errors: ["not_found"] }),
    requireAuth({ operator: "viewer" }),
    validate("param", idParam),
    async (c) => c.json(await listSkills(getDb(c.env.DB), c.req.valid("param").id)),
  )
  .post(
    "/:id/skills",
    describe({
      summary: "Create a skill (inactive) from a name, a description, trigger terms and a body",
      responses: { 201: skillSchema },
      errors: ["not_found", "conflict", "security_scan"],
    }),
    requireAuth({ operator: "manager" }),
    validate("param", idParam),
    validate("json", skillBody),
    async (c) => {
      const out = await createSkill(getDb(c.env.DB), c.req.valid("param").id, c.req.valid("json"), c.var.principal.id, c.var.clock.now());
      return c.json(out, 201);
    },
  )
  .patch(
    "/:id/skills/:skill_id",
    describe({
      summary: "Change a skill's text or triggers (its state and lift stay)",
      responses: { 200: skillSchema },
      errors: ["not_found", "conflict", "illegal_transition", "security_scan"],
    }),
    requireAuth({ operator: "manager" }),
    validate("param", skillParam),
    validate("json", skillPatch),
    async (c) => {
      const { id, skill_id } = c.req.valid("param");
      return c.json(await updateSkill(getDb(c.env.DB), id, skill_id, c.req.valid("json"), c.var.principal.id, c.var.clock.now()));
    },
  )
  .post(
    "/:id/skills/:skill_id/activate",
    describe({
      summary: "Activate a skill (409 with reason `max_active_skills` when the employee has no place left)",
      responses: { 200: skillSchema },
      errors: ["not_found", "conflict", "illegal_transition"],
    }),
    requireAuth({ operator: "manager" }),
    validate("param", skillParam),
    async (c) => changed(c.env.DB, c.req.valid("param"), "activate", c.var.principal.id, c.var.clock.now()).then((v) => c.json(v)),
  )
  .post(
    "/:id/skills/:skill_id/deactivate",
    describe({
      summary: "Deactivate a skill (it keeps its lift and can be activated again)",
      responses: { 200: skillSchema },
      errors: ["not_found", "conflict", "illegal_transition"],
    }),
    requireAuth({ operator: "manager" }),
    validate("param", skillParam),
    async (c) => changed(c.env.DB, c.req.valid("param"), "deactivate", c.var.principal.id, c.var.clock.now()).then((v) => c.json(v)),
  )
  .post(
    "/:id/skills/:skill_id/retire",
    describe({
      summary: "Retire a skill (the archive, never a delete; a retired skill stays retired)",
      responses: { 200: skillSchema },
      errors: ["not_found", "conflict", "illegal_transition"],
    }),
    requireAuth({ operator: "manager" }),
    validate("param", skillParam),
    async (c) => changed(c.env.DB, c.req.valid("param"), "retire", c.var.principal.id, c.var.clock.now()).then((v) => c.json(v)),
  );

function changed(d1: D1Database, p: { id: string; skill_id: string }, action: SkillAction, actor: string, now: Date) {
  return changeSkillState(getDb(d1), p.id, p.skill_id, action, actor, now);
}
