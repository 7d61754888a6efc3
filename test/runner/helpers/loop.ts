/**
 * A poll loop in-process against the fake Worker, with test-friendly timings. Each call registers
 * its own teardown on the list the test file drains in afterEach.
 */
import { createApiClient } from "../../../local-runner/src/api-client.ts";
import { createMemoryLogger } from "../../../local-runner/src/logger.ts";
import { createPollLoop } from "../../../local-runner/src/poll-loop.ts";
import type { PollLoopOptions } from "../../../local-runner/src/poll-loop.ts";
import { runtimeTable } from "../../../local-runner/src/runtimes/index.ts";
import { startFakeServer } from "./fake-server.ts";
import type { FakeRunnerServer } from "./fake-server.ts";
import { fakeClaude, tempDir } from "./paths.ts";

export async function startLoop(
  teardown: Array<() => unknown>,
  options: { env?: Record<string, string>; concurrency?: number; configure?: (server: FakeRunnerServer) => void } & Partial<
    Pick<PollLoopOptions, "now" | "sweepIntervalMs" | "ack">
  > = {},
) {
  const server = await startFakeServer();
  teardown.push(() => server.close());
  options.configure?.(server);
  const { dir: home, cleanup } = tempDir();
  teardown.push(cleanup);
  const logger = createMemoryLogger();
  const loop = createPollLoop({
    client: createApiClient({ baseUrl: server.url, token: server.token }),
    runtimes: runtimeTable({ claude: fakeClaude }),
    home,
    concurrency: options.concurrency ?? 2,
    logger,
    waitMs: 500,
    env: { ...process.env, ...options.env },
    backoff: { initialMs: 50, maxMs: 200 },
    report: { attempts: 4, initialMs: 50 },
    ack: options.ack ?? { attempts: 3, initialMs: 50 },
    ...(options.now ? { now: options.now } : {}),
    ...(options.sweepIntervalMs ? { sweepIntervalMs: options.sweepIntervalMs } : {}),
  });
  const running = loop.run();
  // A test that expects run() to reject awaits it itself; don't let it surface as unhandled meanwhile.
  running.catch(() => undefined);
  teardown.push(() => loop.shutdown("test over"));
  const logged = (event: string, jobId?: string) =>
    logger.records.find((r) => r.event === event && (jobId === undefined || r.job_id === jobId));
  return { server, home, loop, running, logger, logged };
}
