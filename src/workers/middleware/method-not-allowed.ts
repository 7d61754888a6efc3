import type { Env, Hono, MiddlewareHandler } from "hono";
import { methodNotAllowed as honoMethodNotAllowed } from "hono/method-not-allowed";
import { AppError } from "../../lib/errors";
import { problemResponse } from "../problem";

/**
 * Turns the 404 for a known path asked with the wrong method into a 405 problem with `Allow`.
 * The allowed methods are read from `app.routes` at the first such request, so every router
 * mounted on the app is covered without listing it here.
 */
export function methodNotAllowed<E extends Env>(app: Hono<E, any, any>): MiddlewareHandler<E> {
  return honoMethodNotAllowed<E>({
    app,
    onMethodNotAllowed: (c, methods) => {
      const allow = [...methods].sort();
      const err = new AppError("method_not_allowed", `${c.req.method} is not allowed here; use ${allow.join(", ")}`, {
        extra: { allow },
      });
      return problemResponse(c, err, { Allow: allow.join(", ") });
    },
  });
}
