import { Hono } from "hono";
import { requestId } from "hono/request-id";
import { loadClock } from "../lib/clock";
import { AppError } from "../lib/errors";
import type { AppEnv } from "./app-env";
import { adminRoutes } from "./http/admin";
import { configRoutes } from "./http/config";
import { councilRoutes } from "./http/council";
import { governanceRoutes } from "./http/governance";
import { nodesRoutes } from "./http/nodes";
import { eventsRoutes } from "./http/events";
import { healthRoutes } from "./http/health";
import { runnerRoutes } from "./http/runner";
import { problemResponse, toAppError } from "./problem";

export const app = new Hono<AppEnv>();

app.use(requestId());
app.use(async function withClock(c, next) {
  c.set("clock", await loadClock(c.env));
  await next();
});

app.route("/v1/health", healthRoutes);
app.route("/v1/events", eventsRoutes);
app.route("/v1/config", configRoutes);
app.route("/v1/admin", adminRoutes);
app.route("/v1/runner", runnerRoutes);
app.route("/v1/nodes", nodesRoutes);
app.route("/v1/council", councilRoutes);
app.route("/v1/governance", governanceRoutes);

app.notFound((c) => problemResponse(c, new AppError("not_found", `No route for ${c.req.method} ${new URL(c.req.url).pathname}`)));

// Exactly once, on the root app: a sub-app's own onError would bypass this mapping.
app.onError((err, c) => {
  const appError = toAppError(err);
  if (appError.status >= 500) console.error(`[${c.get("requestId")}]`, appError.internalMessage ?? "", err);
  return problemResponse(c, appError);
});
