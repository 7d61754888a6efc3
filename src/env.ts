import type { RunnerInbox } from "./durable-objects/runner-inbox";
import type { DispatchMessage } from "./queues/dispatch-message";

// Bindings declared in wrangler.toml. Declared on Cloudflare.Env so `env` from
// "cloudflare:workers" (tests, Durable Objects) is typed the same way.
declare global {
  namespace Cloudflare {
    interface Env {
      DB: D1Database;
      RUNNER_INBOX: DurableObjectNamespace<RunnerInbox>;
      DISPATCH: Queue<DispatchMessage>;
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
      durableNamespaces: "RunnerInbox";
    }
  }
}

export type Env = Cloudflare.Env;
