// Pieces shared by the runner-protocol benchmarks: a runner token, submitted jobs, the lease →
// complete loop as an autocannon request sequence, and the end-of-run checks against D1.
import { drive } from "./load.mjs";
import { ADMIN_TOKEN } from "./servers.mjs";

const SUBMIT_BODY = JSON.stringify({ kind: "utility", runtime: "offline", prompt: "bench" });
const RESULT = { text: "[offline runtime] bench", runtime: "offline", duration_ms: 1 };

export async function createRunnerToken(product, name = "bench") {
  const res = await product.api("/v1/admin/runners", { body: { name } });
  if (res.status !== 201) throw new Error(`runner token: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.token;
}

/** Every job id the run submitted and every lease and completion it saw, for the end checks. */
export function createTracker() {
  return {
    submitted: new Set(),
    handedOut: new Map(),
    leases: new Map(),
    completed: new Set(),
    emptyLeases: 0,
    completeFailures: 0,
    leaseLatency: [],
  };
}

/** The submit path (`POST /v1/admin/jobs`), as an autocannon request that records each job id. */
export function submitRequests(tracker) {
  return [
    {
      method: "POST",
      path: "/v1/admin/jobs",
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": "application/json" },
      body: SUBMIT_BODY,
      onResponse: (status, body) => {
        if (status === 202) tracker.submitted.add(JSON.parse(body).job_id);
      },
    },
  ];
}

/** Submits `amount` jobs outside any measurement (to keep the queue from running dry). */
export async function topUp(product, tracker, amount, connections) {
  if (amount <= 0) return;
  await drive({ url: product.url, connections: Math.min(connections, amount), amount, requests: submitRequests(tracker) });
}

/**
 * Jobs a lease + complete run of `durationS` may use, sized from a baseline rate measured just before:
 * one job per two requests, with a 3× margin because the machine's load moves between the two.
 */
export function jobsFor(requestRate, durationS) {
  return Math.ceil((requestRate / 2) * durationS * 3) + 50;
}

/**
 * A run whose queue ran dry measured some cheap empty leases: a failed check in a full run; in a
 * smoke run (2 s, sized from a 2 s estimate) only a note, since it says nothing about the code.
 */
export function dryQueueCheck(tracker, smoke) {
  return { name: "the queue never ran dry", ok: smoke || tracker.emptyLeases === 0, detail: `${tracker.emptyLeases} leases found nothing` };
}

/** Waits until the dispatch queue has put every submitted job into the inbox. */
export async function waitForInbox(product, tracker, timeoutMs = 180_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const [{ n }] = await product.inboxSql(`SELECT COUNT(*) AS n FROM jobs WHERE job_id NOT LIKE 'job_seed%'`);
    if (n >= tracker.submitted.size) return n;
    if (Date.now() > deadline) throw new Error(`only ${n} of ${tracker.submitted.size} submitted jobs reached the inbox`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

export async function queuedInInbox(product) {
  const [{ n }] = await product.inboxSql(`SELECT COUNT(*) AS n FROM jobs WHERE status = 'queued'`);
  return n;
}

/**
 * One runner loop per connection: lease one job without waiting, then complete it. A lease that
 * finds nothing starts over (and is counted: a queue that ran dry makes the rate meaningless).
 */
export function leaseCompleteRequests(runnerToken, tracker, result = RESULT) {
  const headers = { authorization: `Bearer ${runnerToken}`, "content-type": "application/json" };
  return [
    {
      method: "POST",
      path: "/v1/runner/lease",
      headers,
      body: JSON.stringify({ capacity: 1, wait_ms: 0, runtimes: ["offline"] }),
      setupRequest: (req, context) => {
        context.sentAt = performance.now();
        return req;
      },
      onResponse: (status, body, context) => {
        tracker.leaseLatency.push(performance.now() - context.sentAt);
        context.job = null;
        if (status !== 200) return;
        const job = JSON.parse(body).jobs[0];
        if (!job) {
          tracker.emptyLeases++;
          return;
        }
        context.job = job;
        tracker.leases.set(job.job_id, job.lease_id);
        tracker.handedOut.set(job.job_id, (tracker.handedOut.get(job.job_id) ?? 0) + 1);
      },
    },
    {
      method: "POST",
      headers,
      setupRequest: (req, context) => {
        if (!context.job) return null;
        return {
          ...req,
          path: `/v1/runner/jobs/${context.job.job_id}/complete`,
          body: JSON.stringify({ lease_id: context.job.lease_id, result }),
        };
      },
      onResponse: (status, _body, context) => {
        if (status === 200) tracker.completed.add(context.job.job_id);
        else tracker.completeFailures++;
      },
    },
  ];
}

/** Completes the leases whose completion the end of a measurement cut off (at most one per connection). */
export async function finishStragglers(product, runnerToken, tracker, result = RESULT) {
  const stragglers = [...tracker.leases].filter(([id]) => !tracker.completed.has(id));
  for (const [jobId, leaseId] of stragglers) {
    const res = await product.api(`/v1/runner/jobs/${jobId}/complete`, { token: runnerToken, body: { lease_id: leaseId, result } });
    if (res.status === 200) tracker.completed.add(jobId);
    else tracker.completeFailures++;
  }
  return stragglers.length;
}

/**
 * No job handed out twice (no job id in two lease responses), and no notice lost: once the inbox's
 * outbox is empty, every job the inbox holds has the same status and attempt in D1, every job the
 * run completed is `completed` in D1 with one `job.completed` event and one `job.leased` event per
 * attempt, and every submitted job has its row and its `job.queued` event.
 */
export async function verifyRun(product, tracker) {
  const deadline = Date.now() + 60_000;
  let pending;
  for (;;) {
    [{ n: pending }] = await product.inboxSql(`SELECT COUNT(*) AS n FROM outbox`);
    if (pending === 0 || Date.now() > deadline) break;
    await new Promise((r) => setTimeout(r, 250));
  }
  const inboxRows = await product.inboxSql(`SELECT job_id, status, attempt FROM jobs WHERE job_id NOT LIKE 'job_seed%'`);
  const { DB } = await product.env();
  const rows = (await DB.prepare(`SELECT id, status, attempt FROM jobs`).all()).results;
  const d1 = new Map(rows.map((r) => [r.id, r]));
  const events = (
    await DB.prepare(
      `SELECT subject, type, COUNT(*) AS n FROM events WHERE type IN ('job.queued', 'job.leased', 'job.completed') GROUP BY subject, type`,
    ).all()
  ).results;
  const count = new Map(events.map((e) => [`${e.subject}:${e.type}`, e.n]));

  const twice = [...tracker.handedOut.values()].filter((n) => n > 1).length;
  const diverged = inboxRows
    .filter((r) => d1.get(r.job_id)?.status !== r.status || d1.get(r.job_id)?.attempt !== r.attempt)
    .map((r) => r.job_id);
  const badTrail = [...tracker.completed].filter((id) => {
    const row = d1.get(id);
    return row?.status !== "completed" || count.get(`${id}:job.completed`) !== 1 || count.get(`${id}:job.leased`) !== row.attempt;
  });
  const releasedAgain = [...tracker.completed].filter((id) => (d1.get(id)?.attempt ?? 1) > 1).length;
  const missingSubmit = [...tracker.submitted].filter((id) => !d1.has(id) || count.get(`${id}:job.queued`) !== 1);
  const sample = (ids) => (ids.length ? ` (e.g. ${ids.slice(0, 3).join(", ")})` : "");
  return [
    { name: "no job handed out twice", ok: twice === 0, detail: `${tracker.handedOut.size} jobs handed out, ${twice} more than once` },
    {
      name: "every lease was completed",
      ok: tracker.completeFailures === 0 && tracker.completed.size === tracker.handedOut.size,
      detail: `${tracker.completed.size} completed of ${tracker.handedOut.size} leased, ${tracker.completeFailures} completions refused; ${releasedAgain} needed a second lease (a lease answer the client never received)`,
    },
    { name: "outbox delivered", ok: pending === 0, detail: `${pending} notices still in the inbox outbox` },
    {
      name: "no notice lost",
      ok: diverged.length === 0 && badTrail.length === 0,
      detail: `${inboxRows.length} inbox jobs compared with D1: ${diverged.length} differ${sample(diverged)}; ${badTrail.length} completed jobs without their completed row and one job.leased event per attempt${sample(badTrail)}`,
    },
    {
      name: "every submission recorded",
      ok: missingSubmit.length === 0,
      detail: `${tracker.submitted.size} accepted, ${missingSubmit.length} without their row or job.queued event${sample(missingSubmit)}`,
    },
  ];
}
