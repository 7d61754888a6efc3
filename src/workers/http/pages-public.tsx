/** @jsxImportSource hono/jsx */
import { Hono } from "hono";
import { inArray } from "drizzle-orm";
import * as z from "zod";
import { checkAgainstPrinciples, queryPrinciples } from "../../council/principles";
import { councilOverview, sessionDetail } from "../../council/views";
import { getDb } from "../../db/client";
import { nodes } from "../../db/schema";
import { AppError } from "../../lib/errors";
import { label, prose } from "../../lib/validation";
import { validate } from "../middleware/validate";
import { listContributions } from "../../projects/contributions";
import { listProjects, projectId } from "../../projects/store";
import { CouncilPage, PrinciplesPage, ProjectPage, ProjectsPage, SessionPage, type NodeFacts } from "../../web/pages/public";
import type { AppEnv } from "../app-env";
import { htmlPages } from "../middleware/html-pages";
import { describe } from "../openapi/describe";
import { formProblem, page, problemStatus, readForm } from "./html";
import { projectDetail } from "./projects";

/** How many of the newest sessions `/council` shows with their whole trail (the rest are links). */
const TRAILS_ON_COUNCIL = 5;

const sessionParam = z.object({ id: z.string().regex(/^delib_[0-9a-f]{16}$/, "a session id") });
const checkForm = z.object({ text: prose(20_000) });

/** Public facts of the nodes a page names: name, tier and reputation, as `GET /v1/nodes/:id` shows them. */
async function nodeFacts(db: ReturnType<typeof getDb>, ids: string[]): Promise<Record<string, NodeFacts>> {
  if (ids.length === 0) return {};
  const rows = await db
    .select({ id: nodes.id, name: nodes.name, modelTier: nodes.modelTier, reputation: nodes.reputation })
    .from(nodes)
    .where(inArray(nodes.id, ids))
    .all();
  return Object.fromEntries(rows.map((r) => [r.id, { name: r.name, model_tier: r.modelTier, reputation: r.reputation }]));
}

/**
 * The public observation pages (issue 25 item 1): no login, only what the public JSON routes show
 * (the same feature functions), live from `/v1/public/events/stream`.
 */
// Mounted at the root: the middleware goes on each route, never `use()` (it would cover /v1 too).
const html = htmlPages();

export const publicPagesRoutes = new Hono<AppEnv>()
  .get(
    "/council",
    describe({
      summary: "The council's public page",
      responses: {
        200: {
          description: "The current term and its members, the recent sessions, the newest five with their whole trail",
          type: "text/html",
        },
      },
    }),
    html,
    async (c) => {
      const db = getDb(c.env.DB);
      const overview = await councilOverview(db);
      const trails = await Promise.all(overview.sessions.slice(0, TRAILS_ON_COUNCIL).map((s) => sessionDetail(db, s.session_id)));
      return page(
        c,
        <CouncilPage
          overview={overview}
          nodes={await nodeFacts(
            db,
            overview.members.map((m) => m.node_id),
          )}
          trails={trails}
        />,
      );
    },
  )
  .get(
    "/council/sessions/:id",
    describe({
      summary: "A council session's public page",
      responses: { 200: { description: "The session and its whole trail", type: "text/html" } },
      errors: ["not_found"],
    }),
    html,
    validate("param", sessionParam),
    async (c) => {
      const s = await sessionDetail(getDb(c.env.DB), c.req.valid("param").id);
      return page(c, <SessionPage s={s} />);
    },
  )
  .get(
    "/principles",
    describe({
      summary: "The council's principles, searched",
      responses: {
        200: { description: "The principles (matching `q` when given) and the form to check a text against them", type: "text/html" },
      },
    }),
    html,
    validate("query", z.object({ q: label(500).optional() })),
    async (c) => {
      const q = c.req.valid("query").q;
      return page(c, <PrinciplesPage principles={await queryPrinciples(getDb(c.env.DB), q)} q={q} />);
    },
  )
  // The checker changes nothing, so it needs no session and no form token.
  .post(
    "/principles/check",
    describe({
      summary: "Check a text against the principles (the principles page's form)",
      description: "A form post (`text`). The checker changes nothing, so it needs no session and no form token.",
      responses: {
        200: { description: "The principles page with the check's outcome", type: "text/html" },
        422: { description: "No text, or too long: the principles page, the problem inline", type: "text/html" },
      },
      errors: ["validation_failed"],
    }),
    html,
    async (c) => {
      const db = getDb(c.env.DB);
      const form = await readForm(c);
      const principles = await queryPrinciples(db);
      const parsed = checkForm.safeParse(form);
      if (!parsed.success) {
        const err = new AppError("validation_failed", "The text cannot be checked", {
          errors: parsed.error.issues.map((i) => ({ path: i.path.join("."), message: i.message })),
        });
        return page(c, <PrinciplesPage principles={principles} text={form.text} problem={formProblem(err)} />, problemStatus(err));
      }
      const check = await checkAgainstPrinciples(db, parsed.data.text);
      return page(c, <PrinciplesPage principles={principles} text={parsed.data.text} check={check} />);
    },
  )
  .get(
    "/projects",
    describe({
      summary: "The official projects' public page",
      responses: { 200: { description: "The newest 100 projects", type: "text/html" } },
    }),
    html,
    async (c) => {
      const { projects } = await listProjects(getDb(c.env.DB), { limit: 100 });
      return page(c, <ProjectsPage projects={projects} />);
    },
  )
  .get(
    "/projects/:id",
    describe({
      summary: "An official project's public page",
      responses: { 200: { description: "The project, its tasks in decomposition order, and its contributions", type: "text/html" } },
      errors: ["not_found"],
    }),
    html,
    validate("param", z.object({ id: projectId })),
    async (c) => {
      const db = getDb(c.env.DB);
      const id = c.req.valid("param").id;
      const project = await projectDetail(db, id, c.var.clock.now());
      return page(c, <ProjectPage project={project} contributions={await listContributions(db, id)} />);
    },
  );
