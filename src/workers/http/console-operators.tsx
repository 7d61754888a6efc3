/** @jsxImportSource hono/jsx */
import { Hono, type Context } from "hono";
import * as z from "zod";
import { getDb } from "../../db/client";
import { listCredentials, revokeCredential } from "../../lib/credentials";
import { AppError, fieldErrorsFromIssues } from "../../lib/errors";
import type { FormProblem } from "../../web/components/common";
import type { Viewer } from "../../web/layout";
import { OperatorsPage, type CreatedOperator, type OperatorDraft } from "../../web/pages/console-operators";
import { requireConsole, type ConsoleEnv } from "../middleware/console-session";
import { htmlPages } from "../middleware/html-pages";
import { validate } from "../middleware/validate";
import { describe, type ResponseDoc } from "../openapi/describe";
import { createOperatorToken, newOperator, operatorView } from "./admin/operators";
import { formProblem, page, problemStatus, readForm } from "./html";

type C = Context<ConsoleEnv>;

const pageDoc = (description: string): ResponseDoc => ({ description, type: "text/html" });
// Mounted by console.tsx before its own `htmlPages()`, so each route takes the page middleware here.
const html = htmlPages();
const admin = requireConsole("admin");
const operatorParam = z.object({ id: z.string().min(1).max(64) });

function viewerOf(c: C): Viewer {
  const s = c.var.session;
  return { name: s.principal.name, role: s.principal.role, csrf: s.csrfToken };
}

async function operatorsPage(
  c: C,
  shown: {
    created?: CreatedOperator;
    problem?: FormProblem | null;
    draft?: OperatorDraft;
    revokeProblem?: { operatorId: string; problem: FormProblem } | null;
  } = {},
  status: 200 | 201 | 403 | 409 | 422 = 200,
) {
  const list = await listCredentials(getDb(c.env.DB), "operator", { limit: 500 });
  const res = page(
    c,
    <OperatorsPage viewer={viewerOf(c)} selfId={c.var.session.principal.id} operators={list.items.map(operatorView)} {...shown} />,
    status,
  );
  // A page that carries a token is nobody's to keep: not the browser's cache, not a proxy's.
  if (shown.created) res.headers.set("cache-control", "no-store");
  return res;
}

/** The people who run the company: an admin's list of operator tokens, the form that mints one, and revoke (docs/console.md). */
export const consoleOperatorsRoutes = new Hono<ConsoleEnv>()
  .get(
    "/operators",
    describe({
      summary: "The operators page (admin)",
      responses: { 200: pageDoc("Every operator token (up to 500), the new-token form, and a revoke form per live token but one's own") },
    }),
    html,
    admin,
    (c) => operatorsPage(c),
  )
  .post(
    "/operators",
    describe({
      summary: "Mint an operator token from the console (admin), as `POST /v1/admin/operators` does",
      responses: {
        201: pageDoc("The operators with the new token, shown this once (no-store)"),
        422: pageDoc("A bad name or role: the form with the draft and each problem by its field"),
      },
      errors: ["validation_failed"],
    }),
    html,
    admin,
    async (c) => {
      const form = await readForm(c);
      const draft: OperatorDraft = { name: form.name, role: form.role };
      const parsed = newOperator.safeParse({ name: form.name?.trim() ?? "", role: form.role ?? "" });
      if (!parsed.success) {
        const problem = new AppError("validation_failed", "The operator token was not created", {
          errors: fieldErrorsFromIssues(parsed.error.issues),
        });
        return operatorsPage(c, { problem: formProblem(problem), draft }, 422);
      }
      const { name, role } = parsed.data;
      const created = await createOperatorToken(getDb(c.env.DB), name, role, c.var.session.principal.id, c.var.clock.now());
      return operatorsPage(c, { created }, 201);
    },
  )
  .post(
    "/operators/:id/revoke",
    describe({
      summary: "Revoke an operator token from the console (admin), as `DELETE /v1/admin/operators/:id` does",
      description: "Its API calls and console sessions stop at once. The token the admin is signed in with is not revoked here.",
      responses: {
        303: { description: "Revoked (or revoked already): back to the operator's row" },
        403: pageDoc("The admin's own token: the operators page, the problem on its row"),
      },
      errors: ["not_found", "forbidden"],
    }),
    html,
    admin,
    validate("param", operatorParam),
    async (c) => {
      const { id } = c.req.valid("param");
      const principal = c.var.session.principal;
      try {
        // Revoking one's own token would end this session mid-page; another admin does that.
        if (id === principal.id) throw new AppError("forbidden", "You are signed in with this token; another admin revokes it");
        await revokeCredential(getDb(c.env.DB), "operator", id, principal.id, c.var.clock.now());
        return c.redirect(`/console/operators#operator-${id}`, 303);
      } catch (err) {
        if (!(err instanceof AppError) || err.status >= 500 || err.code === "not_found") throw err;
        const status = problemStatus(err);
        return operatorsPage(c, { revokeProblem: { operatorId: id, problem: formProblem(err)! } }, status === 403 ? 403 : 409);
      }
    },
  );
