import type { MiddlewareHandler } from "hono";
import type { Env } from "../../env";
import { authenticate, bearerToken, permits, type AuthRule, type AuthVariables, type Principal } from "../../lib/auth";
import type { Clock } from "../../lib/clock";
import { presentedDigest } from "../../lib/crypto";
import { splitToken } from "../../lib/credentials";
import { AppError } from "../../lib/errors";

/**
 * The routes' authentication middleware (Hono middleware lives in src/workers/middleware; the rules
 * and the credential check it applies are src/lib/auth.ts, which features use without Hono).
 */
export function requireAuth(rule: AuthRule): MiddlewareHandler<{ Bindings: Env; Variables: AuthVariables & { clock: Clock } }> {
  return async function requireAuth(c, next) {
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
export function requireAuthInWrite(rule: AuthRule): MiddlewareHandler<{ Bindings: Env; Variables: AuthVariables & { clock: Clock } }> {
  const usual = requireAuth(rule);
  return async function requireAuthInWrite(c, next) {
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
  };
}
