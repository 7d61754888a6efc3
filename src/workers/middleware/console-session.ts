import type { Context, MiddlewareHandler } from "hono";
import { deleteCookie, getCookie, setCookie } from "hono/cookie";
import { csrfMatches, resolveSession, type ConsoleSession } from "../../console/sessions";
import { getDb } from "../../db/client";
import type { OperatorRole } from "../../db/schema";
import { permits } from "../../lib/auth";
import { AppError } from "../../lib/errors";
import type { AppEnv } from "../app-env";
import { withOperationSpec } from "../openapi/describe";

/**
 * The session cookie. `__Host-` makes the browser insist on Secure, Path=/ and no Domain; it is
 * HttpOnly (no script reads it) and SameSite=Strict (no other site's page sends it).
 */
/** The name hono's cookie helpers take with `prefix: "host"`. */
const COOKIE_NAME = "crewplane-console";

export type ConsoleVariables = { session: ConsoleSession };
export type ConsoleEnv = { Bindings: AppEnv["Bindings"]; Variables: AppEnv["Variables"] & ConsoleVariables };

export function setSessionCookie(c: Context, value: string, expiresAt: string): void {
  setCookie(c, COOKIE_NAME, value, {
    httpOnly: true,
    secure: true,
    sameSite: "Strict",
    path: "/",
    expires: new Date(expiresAt),
    prefix: "host",
  });
}

export function clearSessionCookie(c: Context): void {
  deleteCookie(c, COOKIE_NAME, { path: "/", secure: true, httpOnly: true, sameSite: "Strict", prefix: "host" });
}

/** Where a form post came from must be here (Origin, when the browser sends it: all current ones do on POST). */
export function sameOrigin(c: Context): boolean {
  const origin = c.req.header("origin");
  if (origin === undefined) return true;
  return origin === new URL(c.req.url).origin;
}

/**
 * The console's guard, on every console route: a live session (else a GET goes to the login form
 * and anything else is `401`), an operator role at least `role` (else `403 forbidden`: the same
 * rule `requireAuth` applies to the JSON routes, whatever the page showed), and on a POST the
 * session's form token and this origin (else `403 csrf_failed`).
 */
export function requireConsole(role: OperatorRole): MiddlewareHandler<ConsoleEnv> {
  return withOperationSpec<MiddlewareHandler<ConsoleEnv>>(async function requireConsole(c, next) {
    const cookie = getCookie(c, COOKIE_NAME, "host");
    const session = cookie ? await resolveSession(c.env, getDb(c.env.DB), cookie, c.var.clock.now()) : null;
    if (!session) {
      if (cookie) clearSessionCookie(c);
      if (c.req.method === "GET" || c.req.method === "HEAD") {
        const url = new URL(c.req.url);
        return c.redirect(`/console/login?next=${encodeURIComponent(url.pathname + url.search)}`, 303);
      }
      throw new AppError(
        "unauthorized",
        "There is no live console session (it expired, was closed, or its operator was revoked); log in again",
      );
    }
    if (!permits({ operator: role }, session.principal)) {
      throw new AppError("forbidden", `A ${session.principal.role} may not do this; it needs the ${role} role`, {
        extra: { role: session.principal.role, required_role: role },
      });
    }
    c.set("session", session);
    c.set("principal", session.principal);
    if (c.req.method === "POST") {
      const form =
        c.req.header("content-type")?.startsWith("multipart/") ||
        c.req.header("content-type")?.startsWith("application/x-www-form-urlencoded");
      const body = form ? await c.req.parseBody() : {};
      const presented = typeof body._csrf === "string" ? body._csrf : c.req.header("x-csrf-token");
      if (!sameOrigin(c) || !(await csrfMatches(session, presented))) {
        throw new AppError("csrf_failed", "This form was not sent from a console page of this session; reload the page and try again");
      }
    }
    await next();
  }, () => ({
    security: [{ consoleSession: [] }],
    "x-crewplane-auth": `Needs a console session of role ${role} or above; a GET without one is sent to the login form (303), a POST also needs the session's form token.`,
    "x-crewplane-errors": ["unauthorized", "forbidden", "csrf_failed"],
  }));
}
