import { expect } from "vitest";
import { call, createRunner } from "./index";
import { eligibleNode, heartbeat, patchNode, registerNode, type TestNode } from "./nodes";

export const PROPOSAL = {
  title: "Publish a weekly digest of council records",
  body: "Every week the council publishes a digest of all sessions, ballots and principles, so that nodes outside the council can follow its work and object in time. The digest is generated from the public trail.",
  kind: "general",
};

export async function advance(ms: number) {
  const res = await call("/v1/admin/clock", { body: { advance_ms: ms } });
  expect(res.status).toBe(200);
}

export async function tick() {
  const res = await call("/v1/admin/ticks/council", { method: "POST" });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.summary;
}

/** Past the 10 s debounce, then the minute tick: what a deployment does on its own. */
export async function progress() {
  await advance(11_000);
  return tick();
}

export async function session(id: string) {
  const res = await call(`/v1/council/sessions/${id}`, { token: null });
  expect(res.status).toBe(200);
  return res.body;
}

export function dialog(node: TestNode, sessionId: string, body: Record<string, unknown>) {
  return call(`/v1/council/sessions/${sessionId}/dialog`, { token: node.token, body });
}

export async function propose(node: TestNode, body: Record<string, unknown> = PROPOSAL) {
  return call("/v1/council/proposals", { token: node.token, body });
}

/**
 * A council of `n` eligible nodes (reputation 50+i, tier 3, heartbeating) and a proposer who may
 * propose (reputation 35) but not deliberate (< 40), so the session's members are predictable.
 */
export async function council(n: number, prefix = "member") {
  const members: TestNode[] = [];
  for (let i = 0; i < n; i++) members.push(await eligibleNode(`${prefix}-${i}`, 50 + i));
  const proposer = await registerNode({ name: `${prefix}-proposer`, model_tier: 3 });
  await patchNode(proposer.node_id, { reputation: 35 });
  await heartbeat(proposer);
  return { members, proposer, byId: new Map(members.map((m) => [m.node_id, m])) };
}

/**
 * Opens seconded sessions on one council of 11 members (created on the first call, kept for the
 * test file): each call has a new proposer propose and the first seated member second, so the
 * session is in diverge with its 9 seated members.
 */
export function sessionOpener(prefix: string) {
  let setup: Awaited<ReturnType<typeof council>> | undefined;
  let round = 0;
  return async function open() {
    const c = (setup ??= await council(11, prefix));
    for (const m of c.members) await heartbeat(m);
    const { proposer } = await council(0, `${prefix}-p${round++}`);
    const res = await propose(proposer, { ...PROPOSAL, title: `${PROPOSAL.title} (${round})` });
    expect(res.status).toBe(201);
    const sid = res.body.session_id as string;
    const seated: TestNode[] = (await session(sid)).members
      .filter((m: { role: string }) => m.role !== "proposer")
      .map((m: { node_id: string }) => c.byId.get(m.node_id)!);
    await dialog(seated[0]!, sid, { dialog_type: "second" });
    await progress();
    return { sid, seated, council: c, proposer };
  };
}

/** Every seated member assesses, then develops: the session reaches voting (its view is returned). */
export async function toVoting(sid: string, seated: readonly TestNode[]) {
  for (const m of seated) await dialog(m, sid, { dialog_type: "assess", content: `View of ${m.node_id}` });
  await progress();
  for (const m of seated) await dialog(m, sid, { dialog_type: "develop", content: "ok" });
  await progress();
  const s = await session(sid);
  expect(s.phase).toBe("voting");
  return s;
}

type Leased = { job_id: string; lease_id: string; payload: { prompt: string; runtime: string } };

/** Acts as a runner for one job: leases it once the dispatch queue delivered it, then completes it. */
export async function runOneJob(runtimes: string[], result: (job: Leased) => Record<string, unknown>, runner?: { token: string }) {
  const r = runner ?? (await createRunner(`runner-${Math.random().toString(16).slice(2, 8)}`));
  const deadline = Date.now() + 20_000;
  while (Date.now() < deadline) {
    const res = await call("/v1/runner/lease", { token: r.token, body: { capacity: 1, wait_ms: 1_000, runtimes } });
    const [job] = res.body.jobs as Leased[];
    if (job) {
      const done = await call(`/v1/runner/jobs/${job.job_id}/complete`, {
        token: r.token,
        body: { lease_id: job.lease_id, result: result(job) },
      });
      expect(done.status).toBe(200);
      return job;
    }
  }
  throw new Error("no job was delivered to the runner");
}

/** What the runner's built-in offline runtime answers (local-runner/src/runtimes/offline.ts). */
export function offlineAnswer(job: Leased) {
  return {
    text: `[offline runtime] ${job.payload.prompt.split("\n")[0]!.slice(0, 60)} (sha256:000000000000)`,
    runtime: "offline",
    model: "offline",
    duration_ms: 1,
  };
}
