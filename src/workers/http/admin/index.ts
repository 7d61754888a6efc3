import { Hono } from "hono";
import type { AppEnv } from "../../app-env";
import { clockRoutes } from "./clock";
import { jobsRoutes } from "./jobs";
import { adminNodesRoutes } from "./nodes";
import { operatorsRoutes } from "./operators";
import { runnersRoutes } from "./runners";
import { ticksRoutes } from "./ticks";

export const adminRoutes = new Hono<AppEnv>()
  .route("/operators", operatorsRoutes)
  .route("/runners", runnersRoutes)
  .route("/clock", clockRoutes)
  .route("/jobs", jobsRoutes)
  .route("/ticks", ticksRoutes)
  .route("/nodes", adminNodesRoutes);
