import { env } from "cloudflare:workers";
import { inboxJob } from "./inbox-pools";
import { call, utilityJob } from "./index";

export interface LeasedOverHttp {
  job_id: string;
  lease_id: string;
  lease_expires_at: string;
  lease_ms: number;
  ack_required: boolean;
  attempt: number;
  kind: string;
  payload: { runtime: string; prompt: string };
}

export async function leaseOnce(token: string, body: { capacity?: number; wait_ms?: number; runtimes?: string[] } = {}) {
  return call("/v1/runner/lease", { token, body: { capacity: 10, wait_ms: 0, runtimes: ["offline"], ...body } });
}

/** Submits a diagnostic job and waits until the dispatch queue has put it into the inbox. */
export async function submitDelivered(overrides: Record<string, unknown> = {}): Promise<string> {
  const res = await call("/v1/admin/jobs", { body: utilityJob(overrides) });
  if (res.status !== 202) throw new Error(`submit: ${res.status} ${JSON.stringify(res.body)}`);
  const jobId = res.body.job_id as string;
  const deadline = Date.now() + 20_000;
  while (Date.now() < deadline) {
    if ((await inboxJob(env, jobId))?.status === "queued") return jobId;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`job ${jobId} never reached the inbox`);
}

/** Leases the given job (already in the inbox) without waiting, so the claim is acknowledged. */
export async function leaseJob(token: string, jobId: string, runtimes = ["offline", "claude", "codex", "antigravity", "grok"]) {
  for (let i = 0; i < 20; i++) {
    const res = await leaseOnce(token, { capacity: 50, runtimes });
    const job = (res.body.jobs as LeasedOverHttp[]).find((j) => j.job_id === jobId);
    if (job) return job;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`could not lease ${jobId}`);
}
