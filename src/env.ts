import type { AgentLock } from "./durable-objects/agent-lock";
import type { AuditSealer } from "./durable-objects/audit-sealer";
import type { CouncilSession } from "./durable-objects/council-session";
import type { EvolutionSemaphore } from "./durable-objects/evolution-semaphore";
import type { NodePresence } from "./durable-objects/node-presence";
import type { RateWindow } from "./durable-objects/rate-window";
import type { RunnerInbox } from "./workers/runner-inbox";
import type { ApprovalDeliveryMessage } from "./queues/approval-delivery-message";
import type { TaskBudget } from "./durable-objects/task-budget";
import type { TeamAdmission } from "./durable-objects/team-admission";
import type { NodePushMessage } from "./nodes/webhook";
import type { DispatchMessage } from "./queues/dispatch-message";

// Bindings declared in wrangler.toml. Declared on Cloudflare.Env so `env` from
// "cloudflare:workers" (tests, Durable Objects) is typed the same way.
declare global {
  namespace Cloudflare {
    interface Env {
      DB: D1Database;
      RUNNER_INBOX: DurableObjectNamespace<RunnerInbox>;
      TASK_BUDGET: DurableObjectNamespace<TaskBudget>;
      TEAM_ADMISSION: DurableObjectNamespace<TeamAdmission>;
      DISPATCH: Queue<DispatchMessage>;
      COUNCIL_SESSION: DurableObjectNamespace<CouncilSession>;
      NODE_PUSHES: Queue<NodePushMessage>;
      RATE_WINDOW: DurableObjectNamespace<RateWindow>;
      AGENT_LOCK: DurableObjectNamespace<AgentLock>;
      EVOLUTION_SEMAPHORE: DurableObjectNamespace<EvolutionSemaphore>;
      APPROVAL_DELIVERIES: Queue<ApprovalDeliveryMessage>;
      AUDIT_SEALER: DurableObjectNamespace<AuditSealer>;
      // Heartbeat presence, PRESENCE_SHARDS objects by node id hash (src/durable-objects/node-presence.ts).
      NODE_PRESENCE: DurableObjectNamespace<NodePresence>;
      // Events past `[events] retention_days`, gzip NDJSON per day (src/events/retention.ts).
      EVENT_ARCHIVE: R2Bucket;
      // Each employee's attachments bucket: files an accepted team goal's packets named (src/team/attachments.ts).
      ATTACHMENTS: R2Bucket;
      // The audit checkpoint key: an Ed25519 private JWK (secret; see src/audit/keys.ts). Absent: the
      // chain is sealed but no checkpoint is signed. AUDIT_SEALING "off" stops sealing (benchmarks).
      AUDIT_SIGNING_KEY?: string;
      AUDIT_SEALING?: "on" | "off";
      // Approval channel secrets (never in config responses or events).
      SLACK_WEBHOOK_URL?: string;
      SLACK_SIGNING_SECRET?: string;
      APPROVAL_WEBHOOK_SECRET?: string;
      // The SOUL rollback diffs' key (issue 23; seed 003 §6.3): 32 bytes in base64 (secret). Absent:
      // rollback diffs are stored plain.
      EVOLUTION_KEY?: string;
      ENVIRONMENT: "development" | "test" | "production";
      ADMIN_TOKEN?: string;
      VERSION?: string;
      // The forge's GitHub App (secrets; see src/projects/forge/config.ts).
      GITHUB_APP_ID?: string;
      GITHUB_APP_PRIVATE_KEY?: string;
      GITHUB_APP_INSTALLATION_ID?: string;
    }
    // Types `exports` from "cloudflare:workers" (ctx.exports and the tests' exports.default).
    interface GlobalProps {
      mainModule: typeof import("./workers/index");
      durableNamespaces:
        | "RunnerInbox"
        | "TaskBudget"
        | "TeamAdmission"
        | "CouncilSession"
        | "RateWindow"
        | "AgentLock"
        | "EvolutionSemaphore"
        | "AuditSealer"
        | "NodePresence";
    }
  }
}

export type Env = Cloudflare.Env;
