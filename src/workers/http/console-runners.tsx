/** @jsxImportSource hono/jsx */
import { Hono, type Context } from "hono";
import { getDb } from "../../db/client";
import { runnerActivityEverywhere } from "../../jobs/inbox-routing";
import { listCredentials } from "../../lib/credentials";
import { AppError, fieldErrorsFromIssues } from "../../lib/errors";
import type { Viewer } from "../../web/layout";
import type { FormProblem } from "../../web/components/common";
import { RunnersPage, type CreatedRunner } from "../../web/pages/console-ops";
import { requireConsole, type ConsoleEnv } from "../middleware/console-session";
import { htmlPages } from "../middleware/html-pages";
import { describe, type ResponseDoc } from "../openapi/describe";
import { createRunnerToken, newRunner, runnerView } from "./admin/runners";
import { formProblem, page, readForm } from "./html";

type C = Context<ConsoleEnv>;

const pageDoc = (description: string): ResponseDoc => ({ description, type: "text/html" });
// Mounted by console.tsx before its own `htmlPages()`, so each route takes the page middleware here.
const html = htmlPages();

function viewerOf(c: C): Viewer {
  const s = c.var.session;
  return { name: s.principal.name, role: s.principal.role, csrf: s.csrfToken };
}

async function runnersPage(
  c: C,
  shown: { created?: CreatedRunner; problem?: FormProblem | null; draftName?: string } = {},
  status: 200 | 201 | 422 = 200,
) {
  const [list, activity] = await Promise.all([listCredentials(getDb(c.env.DB), "runner", { limit: 500 }), runnerActivityEverywhere(c.env)]);
  const byId = new Map(activity.map((a) => [a.runner_id, a]));
  const res = page(
    c,
    <RunnersPage
      viewer={viewerOf(c)}
      runners={list.items.map((r) => runnerView(r, byId.get(r.id)))}
      origin={new URL(c.req.url).origin}
      {...shown}
    />,
    status,
  );
  // A page that carries a token is nobody's to keep: not the browser's cache, not a proxy's.
  if (shown.created) res.headers.set("cache-control", "no-store");
  return res;
}

/** The runner fleet, and an admin's form that mints a runner token (docs/runner.md). */
export const consoleRunnersRoutes = new Hono<ConsoleEnv>()
  .get(
    "/runners",
    describe({
      summary: "The runners page",
      responses: { 200: pageDoc("Every runner token (up to 500) with its activity; for an admin, the new-token form") },
    }),
    html,
    requireConsole("viewer"),
    (c) => runnersPage(c),
  )
  .post(
    "/runners",
    describe({
      summary: "Mint a runner token from the console (admin), as `POST /v1/admin/runners` does",
      responses: {
        201: pageDoc("The fleet with the new token and the commands that run a runner with it, shown this once (no-store)"),
        422: pageDoc("A bad name: the form with the draft and the problem by its field"),
      },
      errors: ["validation_failed"],
    }),
    html,
    requireConsole("admin"),
    async (c) => {
      const form = await readForm(c);
      const parsed = newRunner.safeParse({ name: form.name?.trim() ?? "" });
      if (!parsed.success) {
        const problem = new AppError("validation_failed", "The runner token was not created", {
          errors: fieldErrorsFromIssues(parsed.error.issues),
        });
        return runnersPage(c, { problem: formProblem(problem), draftName: form.name }, 422);
      }
      const created = await createRunnerToken(getDb(c.env.DB), parsed.data.name, c.var.session.principal.id, c.var.clock.now());
      return runnersPage(c, { created }, 201);
    },
  );
