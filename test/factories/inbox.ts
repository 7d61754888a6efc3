import { env } from "cloudflare:workers";
import { getRunnerInbox, type LeaseInput } from "../../src/durable-objects/runner-inbox-rpc";
import type { JobEnd, OwnerHandler } from "../../src/jobs/job-end";
import { OWNER_HANDLERS } from "../../src/workers/owner-handlers";
import type { OwnerKind } from "../../src/jobs/owner-kinds";
import { randomHex } from "../../src/lib/ids";
import type { DispatchMessage } from "../../src/queues/dispatch-message";

export const DAY_MS = 86_400_000;
export const VISIBILITY_MS = 30_000;
export const ACK_WINDOW_MS = 10_000;

/** A RunnerInbox of its own, so tests in one file never see each other's jobs. */
export function freshInbox() {
  return getRunnerInbox(env, `inbox-${crypto.randomUUID()}`);
}
export type InboxStub = ReturnType<typeof freshInbox>;

export function dispatchOf(overrides: Partial<DispatchMessage> = {}): DispatchMessage {
  return {
    job_id: `job_${randomHex(8)}`,
    kind: "utility",
    payload: { runtime: "offline", prompt: "hello", timeout_ms: 60_000 },
    owner: { kind: "admin", id: "bootstrap-admin" },
    enqueued_at: new Date().toISOString(),
    ...overrides,
  } as DispatchMessage;
}

export function enqueueJob(stub: InboxStub, now: number, overrides: Partial<DispatchMessage> = {}, maxQueueMs = DAY_MS) {
  const message = dispatchOf({ enqueued_at: new Date(now).toISOString(), ...overrides });
  return stub.enqueue({ message, maxAttempts: 3, maxQueueMs, now }).then(() => message);
}

export function leaseFrom(stub: InboxStub, now: number, extra: Partial<LeaseInput> = {}) {
  return stub.lease({
    runnerId: "rnr_a",
    capacity: 1,
    runtimes: ["offline"],
    waitMs: 0,
    visibilityMs: VISIBILITY_MS,
    ackWindowMs: ACK_WINDOW_MS,
    now,
    ...extra,
  });
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Records what the `admin` owner handler is given while `body` runs (the inbox runs in this
 * isolate under the vitest plugin, so it calls the same registry), then restores the handler.
 */
export async function recordingOwnerCalls<T>(body: (calls: JobEnd[]) => Promise<T>): Promise<T> {
  const handlers = OWNER_HANDLERS as Map<OwnerKind, OwnerHandler>;
  const original = handlers.get("admin")!;
  const calls: JobEnd[] = [];
  handlers.set("admin", async (_env, end) => {
    calls.push(end);
  });
  try {
    return await body(calls);
  } finally {
    handlers.set("admin", original);
  }
}

/** Polls `probe` until it returns a truthy value or `timeoutMs` passes (then returns the last value). */
export async function eventually<T>(probe: () => Promise<T>, timeoutMs = 20_000, everyMs = 100): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let value = await probe();
  while (!value && Date.now() < deadline) {
    await sleep(everyMs);
    value = await probe();
  }
  return value;
}
