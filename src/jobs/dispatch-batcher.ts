import type { Env } from "../env";
import type { DispatchMessage } from "../queues/dispatch-message";

/** The platform's limits for one `sendBatch`: 100 messages and 256 KB. */
const BATCH_MESSAGES = 100;
/**
 * A batch's budget in UTF-16 code units of the messages' JSON: a code unit is at most 3 bytes of
 * UTF-8, so 80,000 of them stay under the 256 KB a batch may carry, envelope included.
 */
const BATCH_CHARS = 80_000;
/**
 * How long a new sender waits before its first batch, so the submissions of the next moments share
 * the call: a Queue call cost a submission about a sixth of its CPU when each sent its own (bench/README.md,
 * runner-protocol). A job waits far longer in the queue's own batching (`max_batch_timeout`, 1 s).
 */
const GATHER_MS = 20;
/**
 * How long one request's `waitUntil` keeps sending what other requests handed over before it hands
 * the sending on: far inside the 30 s a `waitUntil` may run after its answer.
 */
const SENDER_MAX_MS = 1_000;
/**
 * A sender that has not finished a batch for this long is taken for gone (its request's context was
 * torn down with a call in flight, or the call hangs) and the next message starts another, so one
 * lost sender cannot leave an isolate's submissions to the reconciler.
 */
const SENDER_STALE_MS = 10_000;

export type Defer = (work: Promise<unknown>) => void;

interface Waiting {
  env: Pick<Env, "DISPATCH">;
  message: DispatchMessage;
  chars: number;
}

/**
 * Dispatch messages for jobs already recorded in D1, sent after the request's answer, and batched
 * across the isolate's requests: one `sendBatch` carries what every request handed over while the
 * previous one was in flight. The request that finds no sender running becomes the sender and keeps
 * it alive through its own `waitUntil`; the others only add their message (a request must not await
 * another request's I/O, which workerd cancels when that request ends).
 *
 * The job's row is the outbox: a message a failed batch or a stopped isolate never sent is sent by
 * the `leases` tick's reconciler from the row once `reconcile_grace_ms` has passed
 * (src/jobs/reconcile.ts), so an accepted job is never lost, only late.
 */
export function createDispatchBatcher(options: { gatherMs?: number; maxSenderMs?: number; staleMs?: number; now?: () => number } = {}) {
  const gatherMs = options.gatherMs ?? GATHER_MS;
  const maxSenderMs = options.maxSenderMs ?? SENDER_MAX_MS;
  const staleMs = options.staleMs ?? SENDER_STALE_MS;
  const now = options.now ?? Date.now;
  const waiting: Waiting[] = [];
  /** The running sender's number (0: none), and when it last started or finished a batch. */
  let sender = 0;
  let senders = 0;
  let progressAt = 0;

  /** Takes the oldest waiting messages that fit one batch (at least one, however large) for one queue binding. */
  function take(): { env: Pick<Env, "DISPATCH">; messages: DispatchMessage[] } {
    const env = waiting[0]!.env;
    let chars = 0;
    let n = 0;
    while (n < waiting.length && n < BATCH_MESSAGES && waiting[n]!.env === env && (n === 0 || chars + waiting[n]!.chars <= BATCH_CHARS)) {
      chars += waiting[n]!.chars;
      n++;
    }
    return { env, messages: waiting.splice(0, n).map((w) => w.message) };
  }

  async function send({ env, messages }: ReturnType<typeof take>): Promise<void> {
    try {
      await env.DISPATCH.sendBatch(messages.map((body) => ({ body, contentType: "json" as const })));
    } catch (err) {
      // The rows are the outbox: the reconciler sends these jobs after their grace (see above).
      console.error(
        `dispatch: a batch of ${messages.length} was not sent; the reconciler will dispatch them`,
        messages.map((m) => m.job_id).join(","),
        err,
      );
    }
  }

  async function sendWaiting(self: number): Promise<void> {
    if (gatherMs > 0) await new Promise((resolve) => setTimeout(resolve, gatherMs));
    const started = now();
    // A sender taken for gone and replaced stops at its next step, leaving the rest to its successor.
    while (sender === self) {
      progressAt = now();
      if (waiting.length === 0) {
        sender = 0;
        return;
      }
      if (progressAt - started >= maxSenderMs) {
        // Hand the sending on: what waits now goes in this last round, the next message starts a new sender.
        const rounds: ReturnType<typeof take>[] = [];
        while (waiting.length > 0) rounds.push(take());
        sender = 0;
        for (const round of rounds) await send(round);
        return;
      }
      await send(take());
    }
  }

  return {
    /** Hands a recorded job's message over; `defer` keeps the sending alive when this call starts it. */
    dispatch(env: Pick<Env, "DISPATCH">, message: DispatchMessage, defer: Defer): void {
      waiting.push({ env, message, chars: JSON.stringify(message).length });
      if (sender !== 0 && now() - progressAt < staleMs) return;
      sender = ++senders;
      progressAt = now();
      defer(sendWaiting(sender));
    },
    /** Messages handed over and not yet sent (tests). */
    waiting: () => waiting.length,
  };
}

/** The isolate's batcher (`submitJob` with `defer`). */
export const dispatchBatcher = createDispatchBatcher();
