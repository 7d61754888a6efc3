/**
 * The `run` command: detect runtimes, kill what a previous (crashed) runner of this home left
 * running, then poll the Worker until SIGTERM/SIGINT.
 */
import { mkdir } from "node:fs/promises";
import { createApiClient } from "./api-client.ts";
import type { RunnerOptions } from "./cli.ts";
import { UsageError } from "./errors.ts";
import { createLogger } from "./logger.ts";
import type { Logger } from "./logger.ts";
import { createPollLoop } from "./poll-loop.ts";
import { setDefaultGroupRecorder } from "./process-runner.ts";
import { createGroupRegistry, reapLeftoverGroups } from "./process-groups.ts";
import { detectRuntimes } from "./runtimes/index.ts";

export async function runRunner(options: RunnerOptions, logger: Logger = createLogger()): Promise<void> {
  const { runtimes, missing } = detectRuntimes({ ...(options.runtimes ? { only: options.runtimes } : {}) });
  if (missing.length > 0) {
    const level = options.runtimes ? "warn" : "info";
    logger[level]("runtimes.missing", { runtimes: missing, note: "executable not found on PATH; not advertised" });
  }
  if (runtimes.size === 0)
    throw new UsageError(`none of the requested runtimes (${options.runtimes?.join(", ")}) is available on this host`);

  if (options.tokenSource === "flag") {
    logger.warn("runner.token_on_command_line", {
      hint: "--token is visible to every user of this host (ps); pass the token in CREWPLANE_RUNNER_TOKEN instead",
    });
  }

  // A new home is owner-only; an existing one keeps the mode its owner chose (work/ and run/ are
  // forced to 0700 below it regardless).
  await mkdir(options.home, { recursive: true, mode: 0o700 });
  // Before any job: a runner that was SIGKILLed mid-job left its CLI running; stop it now.
  await reapLeftoverGroups(options.home, { logger });
  const groups = createGroupRegistry(options.home, { logger });
  setDefaultGroupRecorder(groups);
  const loop = createPollLoop({
    client: createApiClient({ baseUrl: options.url, token: options.token }),
    runtimes,
    home: options.home,
    concurrency: options.concurrency,
    logger,
    members: {
      apiUrl: options.url,
      // The seed's codex (0.156) used `auto`; current codex documents `approve` (the default).
      ...(process.env.CREWPLANE_CODEX_MCP_APPROVAL ? { codexMcpApprovalMode: process.env.CREWPLANE_CODEX_MCP_APPROVAL } : {}),
    },
  });

  let signals = 0;
  const onSignal = (signal: NodeJS.Signals): void => {
    signals += 1;
    if (signals > 1) {
      // A second signal means "now": skip the graceful fail reports. Leases expire on their own.
      // Its CLIs must not outlive it, even now.
      const killed = groups.signalAll("SIGKILL");
      logger.warn("runner.forced_exit", { signal, killed_groups: killed });
      process.exit(130);
    }
    void loop.shutdown(signal);
  };
  process.on("SIGTERM", onSignal);
  process.on("SIGINT", onSignal);
  // Logged only once the handlers are in place: whoever waits for this line may signal us at once.
  logger.info("runner.starting", {
    url: options.url,
    home: options.home,
    concurrency: options.concurrency,
    runtimes: [...runtimes.keys()],
    executables: Object.fromEntries([...runtimes.values()].flatMap((r) => (r.kind === "cli" ? [[r.name, r.executable]] : []))),
  });
  try {
    await loop.run();
  } finally {
    process.off("SIGTERM", onSignal);
    process.off("SIGINT", onSignal);
    setDefaultGroupRecorder(undefined);
  }
}
