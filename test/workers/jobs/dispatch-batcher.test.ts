import { describe, expect, it } from "vitest";
import { createDispatchBatcher } from "../../../src/jobs/dispatch-batcher";
import type { DispatchMessage } from "../../../src/queues/dispatch-message";

const message = (n: number, prompt = "x"): DispatchMessage => ({
  job_id: `job_${n.toString(16).padStart(16, "0")}`,
  kind: "utility",
  payload: { runtime: "offline", prompt, timeout_ms: 60_000 },
  owner: { kind: "admin", id: "a" },
  enqueued_at: "2026-12-07T00:00:00.000Z",
});

/** A `dispatch` queue binding that records each sendBatch and can hold a call open until released. */
function fakeQueue(options: { refuse?: (call: number) => boolean } = {}) {
  const batches: string[][] = [];
  const held: (() => void)[] = [];
  let holding = false;
  const env = {
    DISPATCH: {
      async sendBatch(messages: { body: DispatchMessage; contentType?: string }[]) {
        const call = batches.length;
        batches.push(messages.map((m) => m.body.job_id));
        expect(messages.every((m) => m.contentType === "json")).toBe(true);
        if (holding) await new Promise<void>((resolve) => held.push(resolve));
        if (options.refuse?.(call)) throw new Error("queue unavailable");
      },
    } as unknown as Queue,
  };
  return {
    env,
    batches,
    hold: () => void (holding = true),
    release: () => {
      holding = false;
      for (const r of held.splice(0)) r();
    },
  };
}

/** The `waitUntil` of the requests that hand messages over: what each one was asked to keep alive. */
function requests() {
  const kept: Promise<unknown>[] = [];
  return { defer: (work: Promise<unknown>) => void kept.push(work), kept, settled: () => Promise.all(kept) };
}

const ids = (...ns: number[]) => ns.map((n) => message(n).job_id);

describe("the dispatch batcher", () => {
  it("sends what requests hand over while a batch is in flight in the next sendBatch, each message once and in order", async () => {
    const queue = fakeQueue();
    const batcher = createDispatchBatcher({ gatherMs: 0 });
    const reqs = requests();
    queue.hold();
    batcher.dispatch(queue.env, message(1), reqs.defer);
    await Promise.resolve();
    for (const n of [2, 3, 4, 5]) batcher.dispatch(queue.env, message(n), reqs.defer);
    // Only the first request became the sender; the others only added their message.
    expect(reqs.kept).toHaveLength(1);
    expect(batcher.waiting()).toBe(4);
    queue.release();
    await reqs.settled();
    expect(queue.batches).toEqual([ids(1), ids(2, 3, 4, 5)]);
    expect(batcher.waiting()).toBe(0);
  });

  it("gathers for gatherMs before a batch, so submissions close together share one call", async () => {
    const queue = fakeQueue();
    const batcher = createDispatchBatcher({ gatherMs: 20 });
    const reqs = requests();
    batcher.dispatch(queue.env, message(1), reqs.defer);
    await new Promise((r) => setTimeout(r, 2));
    batcher.dispatch(queue.env, message(2), reqs.defer);
    batcher.dispatch(queue.env, message(3), reqs.defer);
    await reqs.settled();
    expect(queue.batches).toEqual([ids(1, 2, 3)]);
  });

  it("keeps each sendBatch within the platform's 100 messages and its byte budget", async () => {
    const queue = fakeQueue();
    const batcher = createDispatchBatcher({ gatherMs: 5 });
    const reqs = requests();
    for (let n = 1; n <= 250; n++) batcher.dispatch(queue.env, message(n), reqs.defer);
    await reqs.settled();
    expect(queue.batches.map((b) => b.length)).toEqual([100, 100, 50]);
    expect(queue.batches.flat()).toEqual(ids(...Array.from({ length: 250 }, (_, i) => i + 1)));

    // 30,000-character prompts: two fit the batch budget (256 KB), a third waits for the next call.
    const big = fakeQueue();
    const bigReqs = requests();
    for (let n = 1; n <= 5; n++) batcher.dispatch(big.env, message(n, "é".repeat(30_000)), bigReqs.defer);
    await bigReqs.settled();
    expect(big.batches).toEqual([ids(1, 2), ids(3, 4), ids(5)]);
  });

  it("goes on after a refused batch without failing the request that kept it; the refused jobs are left to their rows", async () => {
    const queue = fakeQueue({ refuse: (call) => call === 0 });
    const batcher = createDispatchBatcher({ gatherMs: 0 });
    const reqs = requests();
    queue.hold();
    batcher.dispatch(queue.env, message(1), reqs.defer);
    await Promise.resolve();
    batcher.dispatch(queue.env, message(2), reqs.defer);
    queue.release();
    await expect(reqs.settled()).resolves.toBeDefined();
    expect(queue.batches).toEqual([ids(1), ids(2)]);
    // A later message starts a new sender: the refusal did not leave the batcher stuck.
    batcher.dispatch(queue.env, message(3), reqs.defer);
    await reqs.settled();
    expect(queue.batches).toEqual([ids(1), ids(2), ids(3)]);
  });

  it("hands the sending on after maxSenderMs: the next message starts a new sender and nothing is stranded", async () => {
    let clock = 0;
    const queue = fakeQueue();
    const batcher = createDispatchBatcher({ gatherMs: 0, maxSenderMs: 1_000, now: () => clock });
    const reqs = requests();
    queue.hold();
    batcher.dispatch(queue.env, message(1), reqs.defer);
    await Promise.resolve();
    batcher.dispatch(queue.env, message(2), reqs.defer);
    clock = 1_000; // the first sender's time is up while its batch is in flight
    queue.release();
    await reqs.settled();
    // Its last round took what waited, and it is no longer the sender.
    expect(queue.batches).toEqual([ids(1), ids(2)]);
    batcher.dispatch(queue.env, message(3), reqs.defer);
    expect(reqs.kept).toHaveLength(2);
    await reqs.settled();
    expect(queue.batches).toEqual([ids(1), ids(2), ids(3)]);
  });

  it("takes a sender whose batch never comes back for gone after staleMs, so later submissions are still sent", async () => {
    let clock = 0;
    const queue = fakeQueue();
    const batcher = createDispatchBatcher({ gatherMs: 0, staleMs: 10_000, now: () => clock });
    const reqs = requests();
    queue.hold(); // the first call hangs, as one cut off with its request's context would
    batcher.dispatch(queue.env, message(1), reqs.defer);
    clock = 9_999;
    batcher.dispatch(queue.env, message(2), reqs.defer);
    expect(reqs.kept).toHaveLength(1); // still within staleMs: the message waits for that sender
    clock = 10_000;
    batcher.dispatch(queue.env, message(3), reqs.defer);
    expect(reqs.kept).toHaveLength(2);
    await new Promise((r) => setTimeout(r, 0));
    expect(queue.batches).toEqual([ids(1), ids(2, 3)]);
    // The hung call returns at last: its sender was replaced, so it stops and sends nothing twice.
    queue.release();
    await reqs.settled();
    batcher.dispatch(queue.env, message(4), reqs.defer);
    await reqs.settled();
    expect(queue.batches).toEqual([ids(1), ids(2, 3), ids(4)]);
  });

  it("sends a message to the queue binding it was handed over with", async () => {
    const a = fakeQueue();
    const b = fakeQueue();
    const batcher = createDispatchBatcher({ gatherMs: 5 });
    const reqs = requests();
    batcher.dispatch(a.env, message(1), reqs.defer);
    batcher.dispatch(b.env, message(2), reqs.defer);
    batcher.dispatch(a.env, message(3), reqs.defer);
    await reqs.settled();
    expect(a.batches).toEqual([ids(1), ids(3)]);
    expect(b.batches).toEqual([ids(2)]);
  });
});
