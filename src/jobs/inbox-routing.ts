import { eq } from "drizzle-orm";
import { getDb } from "../db/client";
import { jobs } from "../db/schema";
import {
  getRunnerInbox,
  type EnqueueManyInput,
  type LeasedJob,
  type LeaseInput,
  type RevokeInput,
  type RunnerActivity,
  type SweepInput,
  type WithdrawInput,
} from "../durable-objects/runner-inbox-rpc";
import type { Env } from "../env";
import { readSectionCached } from "../lib/config";
import { newId } from "../lib/ids";
import { inboxConfig, type InboxLayout } from "./inbox-config";
import {
  drainTargets,
  everyInbox,
  inboxesOfRuntime,
  inboxOfJob,
  LEGACY_INBOX,
  leaseTargets,
  routeLease,
  sumActivity,
  sumCounts,
  tagLease,
} from "./inbox-pools";
import { RUNTIMES, type Runtime } from "./payloads";
import type { DispatchMessage } from "../queues/dispatch-message";

/**
 * The Worker's side of the partitioned RunnerInbox (issue 26): each call goes to the inbox(es) the
 * pure rules of `inbox-pools.ts` name. Every object keeps its own lease, ack, extend and outbox
 * rules; nothing here coordinates two objects, because no job is ever in two.
 */

export type InboxEnv = Pick<Env, "RUNNER_INBOX" | "DB">;

export function inboxLayout(env: Pick<Env, "DB">): Promise<InboxLayout> {
  return readSectionCached(getDb(env.DB), inboxConfig);
}

/** Puts dispatch messages into their inboxes: one `enqueueMany` per inbox, in parallel. */
export async function enqueueRouted(
  env: InboxEnv,
  layout: InboxLayout,
  input: Omit<EnqueueManyInput, "messages"> & { messages: DispatchMessage[] },
): Promise<{ accepted: string[] }> {
  const groups = new Map<string, DispatchMessage[]>();
  for (const m of input.messages) {
    const inbox = inboxOfJob(layout, { job_id: m.job_id, runtime: m.payload.runtime, enqueued_at: m.enqueued_at });
    groups.set(inbox, [...(groups.get(inbox) ?? []), m]);
  }
  const answers = await Promise.all([...groups].map(([inbox, messages]) => getRunnerInbox(env, inbox).enqueueMany({ ...input, messages })));
  return { accepted: answers.flatMap((a) => a.accepted) };
}

/**
 * Which of these jobs some inbox holds. A job is looked for in every shard of its runtime's pool and
 * in the `fleet` (where it went before pools, or with `pools = false`), so a layout change never
 * makes a held job look missing and re-dispatched into a second inbox.
 */
export async function heldJobsRouted(env: InboxEnv, layout: InboxLayout, jobs: { id: string; runtime: Runtime }[]): Promise<string[]> {
  if (jobs.length === 0) return [];
  const asks = new Map<string, string[]>();
  const ask = (inbox: string, id: string) => asks.set(inbox, [...(asks.get(inbox) ?? []), id]);
  for (const job of jobs) {
    ask(LEGACY_INBOX, job.id);
    for (const inbox of inboxesOfRuntime({ ...layout, pools: true }, job.runtime)) ask(inbox, job.id);
  }
  const answers = await Promise.all([...asks].map(([inbox, jobIds]) => getRunnerInbox(env, inbox).heldJobs({ jobIds })));
  return [...new Set(answers.flat())];
}

/** How often (per isolate) a lease also asks the other layout's inboxes for jobs queued before a layout change. */
const DRAIN_EVERY_MS = 30_000;
let lastDrainAt = 0;

export type PooledLeaseInput = Omit<LeaseInput, "runtimes"> & { runtimes: Runtime[] };

/**
 * A runner's lease over the inboxes of the runtimes it offers. First it claims with `waitMs: 0`,
 * inbox after inbox, until `capacity` is filled; when that finds nothing and the runner will wait,
 * it long-polls every pool it offers at once. The first poll that claims wins; the others are
 * cancelled like an abandoned poll (`cancelPoll`: a waiting one ends empty, whatever one claimed in
 * the meantime goes straight back to its queue without counting the attempt). A claim made after
 * waiting is provisional (`ack_required`), exactly as with one inbox. One pool and one shard cost
 * exactly what one inbox did: a single call.
 */
export async function leaseRouted(env: InboxEnv, layout: InboxLayout, req: PooledLeaseInput): Promise<LeasedJob[]> {
  // No known runtime: nothing to claim, but the poll still waits (and records the runner's activity).
  if (req.runtimes.length === 0) return getRunnerInbox(env, LEGACY_INBOX).lease({ ...req, runtimes: [] });
  const targets = leaseTargets(layout, req.runnerId, req.runtimes, Math.random);
  const drain = Date.now() - lastDrainAt >= DRAIN_EVERY_MS ? drainTargets(layout, req.runnerId, req.runtimes, Math.random) : [];
  if (drain.length > 0) lastDrainAt = Date.now();
  const direct = req.waitMs > 0 && targets.claim.length === 1 && drain.length === 0;
  const claimed: LeasedJob[] = [];
  if (!direct) {
    for (const inbox of [...targets.claim, ...drain]) {
      const got = await getRunnerInbox(env, inbox).lease({ ...req, capacity: req.capacity - claimed.length, waitMs: 0 });
      claimed.push(...got.map((job) => ({ ...job, lease_id: tagLease(inbox, job.lease_id) })));
      if (claimed.length >= req.capacity) break;
    }
    if (claimed.length > 0 || req.waitMs === 0) return claimed;
  }
  return longPoll(env, targets.poll, req);
}

async function longPoll(env: InboxEnv, pools: string[], req: PooledLeaseInput): Promise<LeasedJob[]> {
  if (pools.length === 1) {
    const jobs = await getRunnerInbox(env, pools[0]!).lease(req);
    return jobs.map((job) => ({ ...job, lease_id: tagLease(pools[0]!, job.lease_id) }));
  }
  // The cancel of the losing polls needs a poll id, the runner's or one of our own.
  const pollId = req.pollId ?? newId("poll");
  let winner: string | null = null;
  let won: LeasedJob[] = [];
  const losers = new Set<string>();
  const cancels: Promise<unknown>[] = [];
  const cancel = (inbox: string) => {
    if (losers.has(inbox)) return;
    losers.add(inbox);
    cancels.push(getRunnerInbox(env, inbox).cancelPoll({ pollId, runnerId: req.runnerId, now: req.now }));
  };
  await Promise.all(
    pools.map(async (inbox) => {
      const jobs = await getRunnerInbox(env, inbox).lease({ ...req, pollId });
      if (jobs.length === 0 || winner !== null) {
        // A poll that claimed after another had won: its claims are released by the cancel below.
        if (jobs.length > 0) cancel(inbox);
        return;
      }
      winner = inbox;
      won = jobs.map((job) => ({ ...job, lease_id: tagLease(inbox, job.lease_id) }));
      for (const other of pools) if (other !== inbox) cancel(other);
    }),
  );
  await Promise.all(cancels);
  return won;
}

/**
 * Calls the inbox a lease id names (see `tagLease`) with the inbox's own lease id: the hot path,
 * with no D1 read. Only when that inbox does not know the job (an untagged or made-up lease id) is
 * the job's inbox looked up from its D1 row, so a wrong lease for a job held elsewhere is still a
 * stale lease (409), never a missing job (404), as with one inbox.
 */
export async function callLeaseInbox<T extends { ok: true } | { ok: false; reason: string }>(
  env: InboxEnv,
  jobId: string,
  taggedLeaseId: string,
  call: (inbox: ReturnType<typeof getRunnerInbox>, leaseId: string) => Promise<T>,
): Promise<T> {
  const { inbox, leaseId } = routeLease(taggedLeaseId);
  const outcome = await call(getRunnerInbox(env, inbox), leaseId);
  if (outcome.ok || outcome.reason !== "not_found") return outcome;
  const row = await getDb(env.DB).select({ runtime: jobs.runtime, createdAt: jobs.createdAt }).from(jobs).where(eq(jobs.id, jobId)).get();
  if (!row || !(RUNTIMES as readonly string[]).includes(row.runtime)) return outcome;
  const home = inboxOfJob(await inboxLayout(env), { job_id: jobId, runtime: row.runtime as Runtime, enqueued_at: row.createdAt });
  return home === inbox ? outcome : call(getRunnerInbox(env, home), leaseId);
}

/** A runner abandons a long-poll: every inbox it may be waiting in (a shutdown, so rare) is told. */
export async function cancelPollEverywhere(
  env: InboxEnv,
  input: { pollId: string; runnerId: string; now: number },
): Promise<{ released: number }> {
  const layout = await inboxLayout(env);
  const parts = await Promise.all(everyInbox(layout).map((inbox) => getRunnerInbox(env, inbox).cancelPoll(input)));
  return sumCounts(parts, { released: 0 });
}

/** Runner activity over every inbox: latest poll anywhere, leased jobs summed. */
export async function runnerActivityEverywhere(env: InboxEnv): Promise<RunnerActivity[]> {
  const layout = await inboxLayout(env);
  return sumActivity(await Promise.all(everyInbox(layout).map((inbox) => getRunnerInbox(env, inbox).runnerActivity())));
}

export async function revokeEverywhere(env: InboxEnv, input: RevokeInput) {
  const layout = await inboxLayout(env);
  const parts = await Promise.all(everyInbox(layout).map((inbox) => getRunnerInbox(env, inbox).revokeRunner(input)));
  return sumCounts(parts, { polls_ended: 0, released: 0, requeued: 0, dead: 0 });
}

/** An owner's queued jobs, withdrawn from every inbox (a round's stages may run on several runtimes). */
export async function withdrawEverywhere(env: InboxEnv, input: WithdrawInput): Promise<{ withdrawn: string[] }> {
  const layout = await inboxLayout(env);
  const parts = await Promise.all(everyInbox(layout).map((inbox) => getRunnerInbox(env, inbox).withdraw(input)));
  return { withdrawn: parts.flatMap((p) => p.withdrawn) };
}

/** The `leases` tick over every inbox, its counts summed; `inboxes` says how many it reached. */
export async function sweepEverywhere(env: InboxEnv, layout: InboxLayout, input: SweepInput) {
  const names = everyInbox(layout);
  const parts = await Promise.all(names.map((inbox) => getRunnerInbox(env, inbox).sweep(input)));
  const empty = { requeued: 0, dead: 0, unacknowledged: 0, no_runner: 0, pruned: 0, pending_notices: 0 };
  return { ...sumCounts(parts, empty), inboxes: names.length };
}
