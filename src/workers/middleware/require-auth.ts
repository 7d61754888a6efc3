import type { MiddlewareHandler } from "hono";
import type { Env } from "../../env";
import { authenticate, bearerToken, permits, type AuthRule, type AuthVariables, type Principal } from "../../lib/auth";
import type { Clock } from "../../lib/clock";
import { presentedDigest } from "../../lib/crypto";
import { splitToken } from "../../lib/credentials";
import { AppError } from "../../lib/errors";
import { withOperationSpec } from "../openapi/describe";

/**
 * The routes' authentication middleware (Hono middleware lives in src/workers/middleware; the rules
 * and the credential check it applies are src/lib/auth.ts, which features use without Hono).
 */
type AuthMiddleware = MiddlewareHandler<{ Bindings: Env; Variables: AuthVariables & { clock: Clock } }>;

export function requireAuth(rule: AuthRule): AuthMiddleware {
  return withOperationSpec<AuthMiddleware>(async function requireAuth(c, next) {
    const token = bearerToken(c.req.header("authorization"));
    if (!token) throw new AppError("unauthorized", "A bearer token is required");
    const principal = await authenticate(c.env, token, c.var.clock.now());
    if (!principal) throw new AppError("unauthorized", "The bearer token is not valid");
    if (!permits(rule, principal)) {
      throw new AppError(
        "forbidden",
        `This ${principal.kind === "operator" ? `${principal.role} token` : `${principal.kind} token`} may not do this`,
      );
    }
    c.set("principal", principal);
    await next();
  }, () => securitySpec(rule));
}

/** The bearer schemes a rule lets in (document.ts declares them), and who may call, in words. */
function securitySpec(rule: AuthRule) {
  const schemes = [
    rule.operator && "operatorToken",
    rule.runner && "runnerToken",
    rule.node && "nodeToken",
    rule.member && "memberToken",
  ].filter((s): s is string => Boolean(s));
  const who = [
    rule.operator && `an operator token of role ${rule.operator} or above`,
    rule.runner && "a runner token",
    rule.node && "a node secret",
    rule.member && "a team member token",
  ].filter(Boolean);
  return {
    security: schemes.map((scheme) => ({ [scheme]: [] })),
    "x-crewplane-auth": `Needs ${who.join(" or ")}.`,
    "x-crewplane-errors": ["unauthorized" as const, "forbidden" as const],
  };
}

/**
 * `requireAuth(rule)` for a hot write that authenticates inside its own statement (the council's
 * direct dialog: lib/credentials `liveSubjectSql`), saving the credential read before it. A request
 * without a credential-shaped bearer token goes through `requireAuth` as usual. Otherwise the handler
 * gets `presented` (for its statement) and `authenticate` (the usual check, for every other way on:
 * call it before doing anything else with the principal). The answers stay those of `requireAuth`
 * first: a request refused further down (validation) whose token is not good answers 401/403.
 */
export function requireAuthInWrite(rule: AuthRule): AuthMiddleware {
  const usual = requireAuth(rule);
  return withOperationSpec<AuthMiddleware>(async function requireAuthInWrite(c, next) {
    const token = bearerToken(c.req.header("authorization"));
    const parts = token ? splitToken(token) : null;
    if (!parts) return usual(c, next);
    let principal: Principal | null = null;
    c.set("presented", { credential_id: parts.id, secret_hash: await presentedDigest(parts.secret) });
    c.set("authenticate", async () => {
      if (!principal) {
        await usual(c, async () => {});
        principal = c.var.principal;
      }
      return principal;
    });
    await next();
    if (c.error && !principal) await c.var.authenticate!();
  }, () => securitySpec(rule));
}
