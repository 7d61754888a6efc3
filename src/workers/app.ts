import { conversationsRoutes } from "./http/conversations";
import { evalRoutes } from "./http/eval";
import { Hono } from "hono";
import { loadClock } from "../lib/clock";
import { AppError } from "../lib/errors";
import type { AppEnv } from "./app-env";
import { adminRoutes } from "./http/admin";
import { approvalsRoutes } from "./http/approvals";
import { configRoutes } from "./http/config";
import { councilRoutes } from "./http/council";
import { governanceRoutes } from "./http/governance";
import { nodesRoutes } from "./http/nodes";
import { employeesRoutes } from "./http/employees";
import { routinesRoutes } from "./http/routines";
import { projectsRoutes } from "./http/projects";
import { swarmRoutes } from "./http/swarm";
import { a2aRoutes } from "./http/a2a";
import { eventsRoutes, publicEventsRoutes } from "./http/events";
import { healthRoutes } from "./http/health";
import { integrationsRoutes } from "./http/integrations";
import { runnerRoutes } from "./http/runner";
import { tasksRoutes } from "./http/tasks";
import { topologyRoutes } from "./http/topology";
import { auditPoke, auditRoutes, auditWellKnownRoutes, publicAuditRoutes } from "./http/audit";
import { teamRoutes } from "./http/team";
import { costRoutes } from "./http/cost";
import { budgetsRoutes } from "./http/budgets";
import { bodyLimit } from "./middleware/body-limit";
import { methodNotAllowed } from "./middleware/method-not-allowed";
import { requestId } from "./middleware/request-id";
import { problemResponse, toAppError } from "./problem";
import { webAssetsRoutes } from "./http/web-assets";
import { consoleRoutes } from "./http/console";
import { publicPagesRoutes } from "./http/pages-public";
import { referenceRoutes } from "./http/reference";
import { PartitionedRouter } from "./partitioned-router";

// One router per resource, so the hot paths keep Hono's RegExpRouter (src/workers/partitioned-router.ts).
export const app = new Hono<AppEnv>({ router: new PartitionedRouter() });

// One router per resource path, each mounted once; a sub-resource's router is mounted by its parent's.
app.use(requestId());
// Before anything reads the request (auth, the clock's D1 read, parsing): an oversized body costs nothing.
app.use(bodyLimit());
// A 404 on a path some route serves with other methods becomes 405 + Allow, read from app.routes.
app.use(methodNotAllowed(app));
app.use(async function withClock(c, next) {
  c.set("clock", await loadClock(c.env));
  await next();
});
// After a request that may have written events, tell the audit sealer (throttled, in waitUntil).
app.use(auditPoke());

app.route("/v1/health", healthRoutes);
app.route("/v1/events", eventsRoutes);
app.route("/v1/public/events", publicEventsRoutes);
app.route("/v1/audit", auditRoutes);
app.route("/v1/public/audit", publicAuditRoutes);
app.route("/.well-known", auditWellKnownRoutes);
app.route("/v1/config", configRoutes);
app.route("/v1/admin", adminRoutes);
app.route("/v1/runner", runnerRoutes);
app.route("/v1/approvals", approvalsRoutes);
app.route("/v1/employees", employeesRoutes);
app.route("/v1/routines", routinesRoutes);
app.route("/v1/tasks", tasksRoutes);
app.route("/v1/topology", topologyRoutes);
app.route("/v1/integrations", integrationsRoutes);
app.route("/v1/team", teamRoutes);
app.route("/v1/cost", costRoutes);
app.route("/v1/budgets", budgetsRoutes);
app.route("/v1/conversations", conversationsRoutes);
app.route("/v1/eval", evalRoutes);
app.route("/v1/nodes", nodesRoutes);
app.route("/v1/council", councilRoutes);
app.route("/v1/governance", governanceRoutes);
app.route("/v1/projects", projectsRoutes);
app.route("/v1/swarm", swarmRoutes);
// The EvoMap node protocol (gep-a2a), translated onto the same feature functions (its council and
// project messages are routers of their own, mounted by the /a2a router).
app.route("/a2a", a2aRoutes);
// The web console and the public observation pages (issue 25): HTML, same Worker, same feature functions.
app.route("/assets", webAssetsRoutes);
app.route("/console", consoleRoutes);
app.route("/", publicPagesRoutes);
// The contract: /openapi.json and /docs, generated from the routes above (so it is mounted last).
app.route("/", referenceRoutes(app as never));

app.notFound((c) => problemResponse(c, new AppError("not_found", `No route for ${c.req.method} ${new URL(c.req.url).pathname}`)));

// Exactly once, on the root app: a sub-app's own onError would bypass this mapping.
app.onError((err, c) => {
  const appError = toAppError(err);
  if (appError.status >= 500) console.error(`[${c.get("requestId")}]`, appError.internalMessage ?? "", err);
  return problemResponse(c, appError);
});
