import type { Env } from "../env";
import { loadClock } from "../lib/clock";
import { consumeDispatch } from "./queues/dispatch";
import { consumeApprovalDeliveries, consumeApprovalDeliveryDeadLetters } from "./queues/approval-deliveries";
import { consumeDispatchDeadLetters } from "./queues/dispatch-dlq";
import { consumeNodePushDeadLetters, consumeNodePushes } from "./queues/node-pushes";
import { app } from "./app";
import type { CronExpression } from "./cron/schedule";
import { ticksFor } from "./cron/ticks";

export { RateWindow } from "../durable-objects/rate-window";
export { RunnerInbox } from "./runner-inbox";
export { TaskBudget } from "../durable-objects/task-budget";
export { TeamAdmission } from "../durable-objects/team-admission";
export { CouncilSession } from "../durable-objects/council-session";
export { AgentLock } from "../durable-objects/agent-lock";
export { EvolutionSemaphore } from "../durable-objects/evolution-semaphore";
export { AuditSealer } from "../durable-objects/audit-sealer";
export { NodePresence } from "../durable-objects/node-presence";

/** Queue names, as in wrangler.toml. */
export const QUEUES = {
  dispatch: "crewplane-dispatch",
  dispatchDeadLetters: "crewplane-dispatch-dlq",
  nodePushes: "crewplane-node-pushes",
  nodePushDeadLetters: "crewplane-node-pushes-dlq",
  approvalDeliveries: "crewplane-approval-deliveries",
  approvalDeliveryDeadLetters: "crewplane-approval-deliveries-dlq",
} as const;

export default {
  fetch: app.fetch,

  async queue(batch, env) {
    switch (batch.queue) {
      case QUEUES.dispatch:
        return consumeDispatch(batch, env);
      case QUEUES.dispatchDeadLetters:
        return consumeDispatchDeadLetters(batch, env);
      case QUEUES.nodePushes:
        return consumeNodePushes(batch, env);
      case QUEUES.nodePushDeadLetters:
        return consumeNodePushDeadLetters(batch, env);
      case QUEUES.approvalDeliveries:
        return consumeApprovalDeliveries(batch, env);
      case QUEUES.approvalDeliveryDeadLetters:
        return consumeApprovalDeliveryDeadLetters(batch, env);
      default:
        console.error(`queue: no consumer for ${batch.queue}; retrying so nothing is dropped`);
        batch.retryAll();
    }
  },

  async scheduled(controller, env) {
    const now = (await loadClock(env)).now();
    const due = ticksFor(controller.cron);
    // One failing tick must not starve the others on the same schedule; the run still fails visibly.
    const results = await Promise.allSettled(due.map(([, tick]) => tick.run(env, now, controller.cron as CronExpression)));
    const failed = results.flatMap((r, i) => (r.status === "rejected" ? [`${due[i]![0]}: ${String(r.reason)}`] : []));
    if (failed.length > 0) throw new Error(`ticks failed: ${failed.join("; ")}`);
  },
} satisfies ExportedHandler<Env, unknown>;
