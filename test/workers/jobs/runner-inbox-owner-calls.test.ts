import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { getRunnerInbox } from "../../../src/durable-objects/runner-inbox-rpc";
import { InboxOutbox } from "../../../src/durable-objects/runner-inbox-outbox";
import type { JobRow } from "../../../src/durable-objects/runner-inbox-schema";
import type { JobEnd } from "../../../src/jobs/job-end";
import { randomHex } from "../../../src/lib/ids";
import type { RunnerInbox } from "../../../src/workers/runner-inbox";

/**
 * The outbox's owner calls (DESIGN.md "Model work"): made once each ended job's notice is in D1, never
 * twice at once, retried with backoff when the handler fails, given up (and recorded) after eight
 * attempts. Driven on an inbox's own storage with an owner handler the test controls.
 */
function endedJob(): JobRow {
  const now = Date.now();
  return {
    job_id: `job_${randomHex(8)}`,
    kind: "utility",
    runtime: "offline",
    payload: "{}",
    owner: JSON.stringify({ kind: "admin", id: "owner-calls" }),
    status: "completed",
    attempt: 1,
    max_attempts: 3,
    lease_id: "lease_1",
    lease_expires_at: null,
    leased_by: "rnr_a",
    poll_id: null,
    result: "{}",
    error: null,
    enqueued_at: now,
    updated_at: now,
    acked: 1,
    ack_deadline: null,
    max_queue_ms: 86_400_000,
    queue_deadline: null,
    leased_at: now,
    finished_at: now,
    employee_id: null,
    project_id: null,
  };
}

type Storage = DurableObjectState["storage"];

async function onInboxStorage<T>(fn: (storage: Storage) => Promise<T>): Promise<T> {
  const stub = getRunnerInbox(env, `owner-calls-${crypto.randomUUID()}`);
  return runInDurableObject(stub, (_i: RunnerInbox, state) => fn(state.storage));
}

/** An outbox on the inbox's storage whose owner handler is `callOwner`. */
function outboxOn(storage: Storage, callOwner: (end: JobEnd) => Promise<void>) {
  return new InboxOutbox(storage.sql, env, "owner-calls", callOwner, () => 0);
}

function rows(storage: Storage, table: "outbox" | "owner_calls") {
  return storage.sql.exec<{ n: number }>(`SELECT COUNT(*) AS n FROM ${table}`).one().n;
}

describe("RunnerInbox owner calls", () => {
  it("calls the owner once after the notice reached D1, then forgets both the call and the notice", async () => {
    await onInboxStorage(async (storage) => {
      const calls: JobEnd[] = [];
      const outbox = outboxOn(storage, async (end) => void calls.push(end));
      const job = endedJob();
      outbox.record(job, { type: "job.completed", status: "completed", at: Date.now(), result: { text: "ok" } });
      expect(rows(storage, "owner_calls")).toBe(1);
      await outbox.deliver();
      expect(calls.map((c) => [c.job_id, c.status])).toEqual([[job.job_id, "completed"]]);
      const event = await env.DB.prepare(`SELECT COUNT(*) AS n FROM events WHERE type = 'job.completed' AND subject = ?`)
        .bind(job.job_id)
        .first<{ n: number }>();
      expect(event?.n).toBe(1);
      expect([rows(storage, "outbox"), rows(storage, "owner_calls")]).toEqual([0, 0]);
      expect(outbox.pending()).toBe(0);
      expect(outbox.nextDeadline()).toBeNull();
    });
  });

  it("makes a call that is in progress only once when settles race", async () => {
    await onInboxStorage(async (storage) => {
      let release!: () => void;
      const gate = new Promise<void>((resolve) => (release = resolve));
      let calls = 0;
      const outbox = outboxOn(storage, async () => {
        calls++;
        await gate;
      });
      outbox.record(endedJob(), { type: "job.completed", status: "completed", at: Date.now(), result: {} });
      const first = outbox.deliver();
      // Let the first settle reach the handler, then race two more against it.
      while (calls === 0) await new Promise((r) => setTimeout(r, 5));
      const others = [outbox.deliver(), outbox.deliver()];
      await new Promise((r) => setTimeout(r, 50));
      release();
      await Promise.all([first, ...others]);
      await outbox.deliver();
      expect(calls).toBe(1);
      expect(rows(storage, "owner_calls")).toBe(0);
    });
  });

  it("makes the calls an object left behind when it restarted, delivered or not", async () => {
    await onInboxStorage(async (storage) => {
      const before = outboxOn(storage, async () => {});
      const undelivered = endedJob();
      const delivered = endedJob();
      before.record(delivered, { type: "job.completed", status: "completed", at: Date.now(), result: {} });
      before.record(undelivered, { type: "job.completed", status: "completed", at: Date.now(), result: {} });
      // The first notice reached D1 and left the outbox; the object went away before either call.
      storage.sql.exec(`DELETE FROM outbox WHERE seq = (SELECT MIN(seq) FROM outbox)`);

      const calls: string[] = [];
      const after = outboxOn(storage, async (end) => void calls.push(end.job_id));
      await after.deliver();
      expect(calls).toEqual([delivered.job_id, undelivered.job_id]);
      expect([rows(storage, "outbox"), rows(storage, "owner_calls")]).toEqual([0, 0]);
    });
  });

  it("retries a failing handler with backoff and gives up after eight attempts, recording why", async () => {
    await onInboxStorage(async (storage) => {
      let calls = 0;
      const outbox = outboxOn(storage, async () => {
        calls++;
        throw new Error("handler down");
      });
      const job = endedJob();
      outbox.record(job, { type: "job.completed", status: "completed", at: Date.now(), result: {} });
      const before = Date.now();
      await outbox.deliver();
      const held = storage.sql.exec<{ attempts: number; next_at: number }>(`SELECT attempts, next_at FROM owner_calls`).one();
      expect(held.attempts).toBe(1);
      // The first retry waits 2 s; the alarm is asked back for it, not sooner.
      expect(held.next_at).toBeGreaterThanOrEqual(before + 2_000);
      expect(outbox.nextDeadline()).toBe(held.next_at);
      // Not due yet: a settle now leaves it alone.
      await outbox.deliver();
      expect(calls).toBe(1);

      // Due again at its seventh failure: the eighth attempt fails and the call is given up.
      storage.sql.exec(`UPDATE owner_calls SET attempts = 7, next_at = 0`);
      await outbox.deliver();
      expect(calls).toBe(2);
      expect(rows(storage, "owner_calls")).toBe(0);
      const gaveUp = await env.DB.prepare(`SELECT payload FROM events WHERE type = 'job.owner_unhandled' AND subject = ?`)
        .bind(job.job_id)
        .first<{ payload: string }>();
      expect(JSON.parse(gaveUp!.payload)).toMatchObject({ attempts: 8 });
    });
  });
});
