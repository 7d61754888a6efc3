/** @jsxImportSource hono/jsx */
import { Hono } from "hono";
import { getCookie } from "hono/cookie";
import { z } from "zod";
import { closeSession, openSession, resolveSession } from "../../console/sessions";
import { getDb } from "../../db/client";
import { AppError } from "../../lib/errors";
import { LoginPage } from "../../web/pages/console-login";
import { htmlPages } from "../middleware/html-pages";
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
  .get("/login", html, async (c) => {
    const next = nextPath.parse(c.req.query("next") ?? "/console");
    const cookie = getCookie(c, "crewplane-console", "host");
    if (cookie && (await resolveSession(c.env, getDb(c.env.DB), cookie, c.var.clock.now()))) return c.redirect(next, 303);
    return page(c, <LoginPage next={next} ended={c.req.query("ended") === "1"} />);
  })
  .post("/login", html, async (c) => {
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
          { path: "token", message: "not a live viewer, manager or admin token (runner, node and member tokens do not open the console)" },
        ],
      });
      return c.html(`<!doctype html>${String(<LoginPage next={next} problem={formProblem(err)} />)}`, 401);
    }
    setSessionCookie(c, opened.cookie, opened.session.expiresAt);
    return c.redirect(next, 303);
  })
  .post("/logout", html, requireConsole("viewer"), async (c) => {
    await closeSession(getDb(c.env.DB), c.var.session, c.var.clock.now());
    clearSessionCookie(c);
    return c.redirect("/console/login?ended=1", 303);
  });
