/** @jsxImportSource hono/jsx */
import { Hono } from "hono";
import { getCookie } from "hono/cookie";
import * as z from "zod";
import { closeSession, openSession, resolveSession } from "../../console/sessions";
import { getDb } from "../../db/client";
import { AppError } from "../../lib/errors";
import { LoginPage } from "../../web/pages/console-login";
import { htmlPages } from "../middleware/html-pages";
import { describe } from "../openapi/describe";
import { clearSessionCookie, requireConsole, sameOrigin, setSessionCookie, type ConsoleEnv } from "../middleware/console-session";
import { formProblem, page, readForm } from "./html";

/** Where to go after login: a console path of this site only (never `//elsewhere`). */
const nextPath = z
  .string()
  .max(500)
  .regex(/^\/console(?:[/?#]|$)/)
  .refine((p) => !p.startsWith("//") && !p.includes("\\"))
  .catch("/console");

const loginForm = z.object({ token: z.string().trim().min(1, "enter your operator token").max(200), next: nextPath.optional() });

/**
 * `/console/login` and `/console/logout` (issue 25 item 2): an operator token is exchanged at the
 * login form for a session cookie (HttpOnly, Secure, SameSite=Strict, `__Host-`); logout ends it.
 */
const html = htmlPages();

export const consoleSessionRoutes = new Hono<ConsoleEnv>()
  .get(
    "/login",
    describe({
      summary: "The console's login form",
      responses: {
        200: { description: "The login form (`?ended=1`: with the note that the session ended)", type: "text/html" },
        303: { description: "A live session already: on to `next` (a console path; else `/console`)" },
      },
    }),
    html,
    async (c) => {
      const next = nextPath.parse(c.req.query("next") ?? "/console");
      const cookie = getCookie(c, "crewplane-console", "host");
      if (cookie && (await resolveSession(c.env, getDb(c.env.DB), cookie, c.var.clock.now()))) return c.redirect(next, 303);
      return page(c, <LoginPage next={next} ended={c.req.query("ended") === "1"} />);
    },
  )
  .post(
    "/login",
    describe({
      summary: "Log in: exchange an operator token for a session cookie",
      description:
        "A form post (`token`, `next`). A live viewer, manager or admin token (or the bootstrap ADMIN_TOKEN) sets the `__Host-crewplane-console` cookie (HttpOnly, Secure, SameSite=Strict) and goes on to `next`; a post from another site's page (its `Origin`) is `403 csrf_failed`.",
      responses: {
        303: { description: "Logged in: the session cookie is set; on to `next` (a console path; else `/console`)" },
        401: { description: "Not a live operator token: the form again, the problem inline", type: "text/html" },
        422: { description: "No token: the form again, the problem inline", type: "text/html" },
      },
      errors: ["csrf_failed", "validation_failed", "unauthorized"],
    }),
    html,
    async (c) => {
      // No session yet, so no form token: a login posted from another site is refused by its Origin
      // (and the cookie it would set is SameSite=Strict).
      if (!sameOrigin(c)) throw new AppError("csrf_failed", "A login must be posted from this site's login form");
      const form = await readForm(c);
      const parsed = loginForm.safeParse(form);
      const next = nextPath.parse(form.next ?? "/console");
      if (!parsed.success) {
        const err = new AppError("validation_failed", "The login form is incomplete", {
          errors: parsed.error.issues.map((i) => ({ path: i.path.join("."), message: i.message })),
        });
        return page(c, <LoginPage next={next} problem={formProblem(err)} />, 422);
      }
      const opened = await openSession(c.env, getDb(c.env.DB), parsed.data.token, c.var.clock.now());
      if (!opened) {
        const err = new AppError("unauthorized", "That is not a live operator token", {
          errors: [
            {
              path: "token",
              message: "not a live viewer, manager or admin token (runner, node and member tokens do not open the console)",
            },
          ],
        });
        return c.html(`<!doctype html>${String(<LoginPage next={next} problem={formProblem(err)} />)}`, 401);
      }
      setSessionCookie(c, opened.cookie, opened.session.expiresAt);
      return c.redirect(next, 303);
    },
  )
  .post(
    "/logout",
    describe({
      summary: "Log out: end the session",
      responses: { 303: { description: "The session is closed and its cookie cleared: to the login form (`?ended=1`)" } },
    }),
    html,
    requireConsole("viewer"),
    async (c) => {
      await closeSession(getDb(c.env.DB), c.var.session, c.var.clock.now());
      clearSessionCookie(c);
      return c.redirect("/console/login?ended=1", 303);
    },
  );
