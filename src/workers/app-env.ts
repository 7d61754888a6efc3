import type { RequestIdVariables } from "hono/request-id";
import type { Env } from "../env";
import type { AuthVariables } from "../lib/auth";
import type { Clock } from "../lib/clock";

/** Declared once: every router and middleware is typed against it. */
export type AppEnv = {
  Bindings: Env;
  Variables: RequestIdVariables & AuthVariables & { clock: Clock };
};
