/** @jsxImportSource hono/jsx */
import { Hono, type Context } from "hono";
import * as z from "zod";
import { getDb } from "../../db/client";
import { skillBody } from "../../evolution/skills";
import { changeSkillState, createSkill, listSkills, type SkillAction } from "../../evolution/skills-store";
import { roleAtLeast } from "../../lib/auth";
import { AppError, fieldErrorsFromIssues } from "../../lib/errors";
import { employeeId, getEmployeeView } from "../../tasks/employees";
import { SkillsPage, type SkillDraft, type SkillProblem } from "../../web/pages/console-skills";
import { requireConsole, type ConsoleEnv } from "../middleware/console-session";
import { htmlPages } from "../middleware/html-pages";
import { validate } from "../middleware/validate";
import { describe, type ResponseDoc } from "../openapi/describe";
import { formProblem, page, problemStatus, readForm, refusalOf } from "./html";

type C = Context<ConsoleEnv>;

/** A console page in the document (as console.tsx's pageDoc). */
const pageDoc = (description: string): ResponseDoc => ({ description, type: "text/html" });

// Mounted by console.tsx before its own `htmlPages()`, so each route takes the page middleware here.
const html = htmlPages();
const idParam = z.object({ id: employeeId });
const switchParam = idParam.extend({
  skill_id: z
    .string()
    .min(1)
    .max(64)
    .regex(/^[A-Za-z0-9_-]+$/),
  action: z.enum(["activate", "deactivate", "retire"]),
});

async function skillsPage(
  c: C,
  id: string,
  problem: SkillProblem | null = null,
  draft?: SkillDraft,
  status: 200 | 403 | 404 | 409 | 422 | 429 = 200,
) {
  const db = getDb(c.env.DB);
  const [employee, list] = await Promise.all([getEmployeeView(db, id), listSkills(db, id)]);
  const s = c.var.session;
  return page(
    c,
    <SkillsPage
      viewer={{ name: s.principal.name, role: s.principal.role, csrf: s.csrfToken }}
      employee={employee}
      list={list}
      canWrite={roleAtLeast(s.principal.role, "manager")}
      draft={draft}
      problem={problem}
    />,
    status,
  );
}

/**
 * The employee's skills tab (`/console/employees/:id/skills`): read as `GET /v1/employees/:id/skills`
 * reads it, changed through the same functions its POST routes call, behind the session, the manager
 * role and the form token.
 */
export const consoleSkillsRoutes = new Hono<ConsoleEnv>()
  .get(
    "/employees/:id/skills",
    describe({
      summary: "An employee's skills tab",
      responses: { 200: pageDoc("Each skill with its state, uses and lift; for a manager its switches and the create form") },
      errors: ["not_found"],
    }),
    html,
    requireConsole("viewer"),
    validate("param", idParam),
    (c) => skillsPage(c, c.req.valid("param").id),
  )
  .post(
    "/employees/:id/skills",
    describe({
      summary: "Create a skill (the skills tab's form), as `POST /v1/employees/:id/skills` does",
      responses: {
        303: { description: "Created: back to the skills tab" },
        403: pageDoc("The security scan refused it: the tab with the draft, the problem inline"),
        409: pageDoc("The name is taken: the tab with the draft, the problem inline"),
        422: pageDoc("A missing or invalid field: the tab with the draft, each problem by its field"),
      },
      errors: ["not_found", "validation_failed", "conflict", "security_scan"],
    }),
    html,
    requireConsole("manager"),
    validate("param", idParam),
    async (c) => {
      const id = c.req.valid("param").id;
      const form = await readForm(c);
      const draft: SkillDraft = { name: form.name, description: form.description, triggers: form.triggers, body: form.body };
      try {
        const parsed = skillBody.safeParse({
          name: form.name ?? "",
          description: form.description ?? "",
          triggers: (form.triggers ?? "")
            .split(/\r?\n/)
            .map((t) => t.trim())
            .filter(Boolean),
          body: form.body ?? "",
        });
        if (!parsed.success) {
          throw new AppError("validation_failed", "The skill was not created", { errors: fieldErrorsFromIssues(parsed.error.issues) });
        }
        const created = await createSkill(getDb(c.env.DB), id, parsed.data, c.var.session.principal.id, c.var.clock.now());
        return c.redirect(`/console/employees/${id}/skills#skill-${created.skill_id}`, 303);
      } catch (err) {
        const refused = refusalOf(err);
        return skillsPage(c, id, { skillId: null, problem: formProblem(refused)! }, draft, problemStatus(refused));
      }
    },
  )
  .post(
    "/employees/:id/skills/:skill_id/:action",
    describe({
      summary: "Activate, deactivate or retire a skill (the skills tab's buttons), as the API's routes do",
      responses: {
        303: { description: "Done (or already so): back to the skill on the skills tab" },
        409: pageDoc("No place left under max_active_skills, or the skill is retired: the tab, the problem on the skill"),
      },
      errors: ["not_found", "conflict", "illegal_transition"],
    }),
    html,
    requireConsole("manager"),
    validate("param", switchParam),
    async (c) => {
      const { id, skill_id, action } = c.req.valid("param");
      try {
        await changeSkillState(getDb(c.env.DB), id, skill_id, action as SkillAction, c.var.session.principal.id, c.var.clock.now());
        return c.redirect(`/console/employees/${id}/skills#skill-${skill_id}`, 303);
      } catch (err) {
        const refused = refusalOf(err);
        return skillsPage(c, id, { skillId: skill_id, problem: formProblem(refused)! }, undefined, problemStatus(refused));
      }
    },
  );
