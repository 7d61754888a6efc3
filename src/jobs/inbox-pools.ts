import { RUNTIMES, type Runtime } from "./payloads";
import type { InboxLayout } from "./inbox-config";

/**
 * Which RunnerInbox holds a job, and which inboxes a runner's lease asks (issue 26; the plan is
 * bench/README.md "Past one inbox"). Pure: the Worker's fan-out (`inbox-routing.ts`) calls these.
 *
 * Layout: one inbox per runtime pool, `pool:<runtime>`; a pool split into N hash shards names shard
 * 0 the same (so growing from one shard strands nothing) and shard i > 0 `pool:<runtime>:<i>`. The
 * single inbox from before the pools, `fleet`, is still an inbox: its leases finish there, the sweep
 * reaches it, and it is what `pools = false` routes everything to.
 */

export const LEGACY_INBOX = "fleet";
const MAX_SHARDS = 64;

export function poolName(runtime: Runtime, shard = 0): string {
  return shard === 0 ? `pool:${runtime}` : `pool:${runtime}:${shard}`;
}

/** 32-bit FNV-1a: a stable, cheap spread of ids over shards (not a security boundary). */
export function hash32(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h;
}

/** The shard count for a job of `runtime` submitted at `submittedAtMs`: the last step in force then. */
export function shardsAt(layout: InboxLayout, runtime: Runtime, submittedAtMs: number): number {
  let n = 1;
  for (const step of layout.shards[runtime] ?? []) if (Date.parse(step.from) <= submittedAtMs) n = step.shards;
  return n;
}

/** How many shards a pool has now or will have: every one of them may hold jobs, so all are leased from and swept. */
export function shardsEver(layout: InboxLayout, runtime: Runtime): number {
  return Math.max(1, ...(layout.shards[runtime] ?? []).map((s) => s.shards));
}

export interface RoutedJob {
  job_id: string;
  runtime: Runtime;
  /** Submission time (ISO): the dispatch message's `enqueued_at`, the D1 row's `created_at`. */
  enqueued_at: string;
}

/** The inbox a job goes to. The same job always gets the same answer, whoever asks and whenever. */
export function inboxOfJob(layout: InboxLayout, job: RoutedJob): string {
  if (!layout.pools) return LEGACY_INBOX;
  const n = shardsAt(layout, job.runtime, Date.parse(job.enqueued_at));
  return poolName(job.runtime, n > 1 ? hash32(job.job_id) % n : 0);
}

/** Every inbox of one runtime's pool (all its shards); with `pools` off, the one `fleet`. */
export function inboxesOfRuntime(layout: InboxLayout, runtime: Runtime): string[] {
  if (!layout.pools) return [LEGACY_INBOX];
  return Array.from({ length: shardsEver(layout, runtime) }, (_, i) => poolName(runtime, i));
}

/** Every inbox that may hold a job in either layout: the sweep, withdraw, admin views and poll cancels reach all of them. */
export function everyInbox(layout: InboxLayout): string[] {
  const pools = RUNTIMES.flatMap((r) => inboxesOfRuntime({ ...layout, pools: true }, r));
  return [LEGACY_INBOX, ...pools];
}

export interface LeaseTargets {
  /** Asked in this order with `wait_ms: 0` until the capacity is filled. */
  claim: string[];
  /** Long-polled together when the claims found nothing and the runner is willing to wait. */
  poll: string[];
}

/**
 * The inboxes a runner offering `runtimes` leases from. Per pool: the shard its id hashes to, then
 * (when the pool is sharded) one other shard at random, so no shard idles while another has a
 * backlog (work stealing). The pools' order rotates with `random` so no runtime always goes first.
 * The long-poll waits on each pool's own shard only.
 */
export function leaseTargets(layout: InboxLayout, runnerId: string, runtimes: readonly Runtime[], random: () => number): LeaseTargets {
  if (!layout.pools) return { claim: [LEGACY_INBOX], poll: [LEGACY_INBOX] };
  const start = runtimes.length > 0 ? Math.floor(random() * runtimes.length) % runtimes.length : 0;
  const rotated = [...runtimes.slice(start), ...runtimes.slice(0, start)];
  const claim: string[] = [];
  const poll: string[] = [];
  for (const runtime of rotated) {
    const n = shardsEver(layout, runtime);
    const own = n > 1 ? hash32(runnerId) % n : 0;
    claim.push(poolName(runtime, own));
    poll.push(poolName(runtime, own));
    if (n > 1) claim.push(poolName(runtime, (own + 1 + Math.floor(random() * (n - 1))) % n));
  }
  return { claim, poll };
}

/**
 * The inboxes of the other layout, asked now and then with `wait_ms: 0` so jobs queued before a
 * layout change still run (nothing moves between inboxes: D1 orders a job's notices by its inbox's seq).
 */
export function drainTargets(layout: InboxLayout, runnerId: string, runtimes: readonly Runtime[], random: () => number): string[] {
  if (layout.pools) return [LEGACY_INBOX];
  return leaseTargets({ ...layout, pools: true }, runnerId, runtimes, random).claim;
}

// --- lease ids: the inbox travels inside the opaque lease id, so ack/extend/complete/fail need no D1 read ---

const TAG = "~";
const POOL_NAME = new RegExp(`^pool:(${RUNTIMES.join("|")})(?::([1-9][0-9]?))?$`);

/** Whether `name` is an inbox this layout scheme can produce (a forged lease id reaches no other object). */
export function isInboxName(name: string): boolean {
  if (name === LEGACY_INBOX) return true;
  const m = POOL_NAME.exec(name);
  return m !== null && (m[2] === undefined || Number(m[2]) < MAX_SHARDS);
}

/** The lease id a runner sees: the inbox's own id, tagged with the inbox (the `fleet`'s ids stay bare, as before pools). */
export function tagLease(inbox: string, leaseId: string): string {
  return inbox === LEGACY_INBOX ? leaseId : `${leaseId}${TAG}${inbox}`;
}

/** The inbox and its own lease id from what a runner sent back; an untagged or unknown tag is the `fleet`'s. */
export function routeLease(tagged: string): { inbox: string; leaseId: string } {
  const at = tagged.lastIndexOf(TAG);
  if (at > 0) {
    const inbox = tagged.slice(at + 1);
    if (isInboxName(inbox)) return { inbox, leaseId: tagged.slice(0, at) };
  }
  return { inbox: LEGACY_INBOX, leaseId: tagged };
}

// --- admin views over several inboxes ---

export interface Activity {
  runner_id: string;
  last_poll_at: string;
  leased_jobs: number;
}

/** One row per runner over every inbox: its latest poll anywhere, its leased jobs summed. */
export function sumActivity(perInbox: readonly (readonly Activity[])[]): Activity[] {
  const byRunner = new Map<string, Activity>();
  for (const rows of perInbox) {
    for (const row of rows) {
      const seen = byRunner.get(row.runner_id);
      if (!seen) byRunner.set(row.runner_id, { ...row });
      else {
        if (Date.parse(row.last_poll_at) > Date.parse(seen.last_poll_at)) seen.last_poll_at = row.last_poll_at;
        seen.leased_jobs += row.leased_jobs;
      }
    }
  }
  return [...byRunner.values()];
}

/** Numeric fields summed over inboxes (sweep, revoke counts); one shape in, the same shape out. */
export function sumCounts<K extends string>(parts: readonly Record<K, number>[], empty: Record<K, number>): Record<K, number> {
  const total = { ...empty };
  for (const part of parts) for (const key of Object.keys(total) as K[]) total[key] += part[key];
  return total;
}
