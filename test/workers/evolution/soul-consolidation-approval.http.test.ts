import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { startGvuRounds } from "../../../src/evolution/gvu-round";
import { resolveConsolidationApprovals } from "../../../src/evolution/soul-consolidation-apply";
import { consolidateSouls } from "../../../src/evolution/soul-consolidation-run";
import { CONSOLIDATE_TARGET_BYTES } from "../../../src/evolution/soul-consolidate";
import { trigger } from "../../../src/evolution/triggers";
import { loadClock } from "../../../src/lib/clock";
import { sha256Hex } from "../../../src/lib/crypto";
import { call, createOperator, createRunner } from "../../factories";
import { eventsOf } from "../../factories/team";
import { answer, bigSoul, bytes, COMPRESSED, overCapSoul, proposal, putEmployee, RULE } from "./soul-helpers";

/**
 * Governed consolidation (issue 39, seed 003 R2 under `require_approval`): the checked result of a
 * consolidation job becomes one `soul_consolidation` approval bound to the exact change, and the
 * `gvu` tick applies it only once a person approved it and the SOUL is still the version it was
 * computed from. Also the missing link after a GVU prompt that was too large: consolidation, then the
 * lost request retried; or, when the SOUL is not the cause, no consolidation and a reason that says so.
 */
const now = async () => (await loadClock(env)).now();

interface Job {
  job_id: string;
  lease_id: string;
  payload: any;
}

/** Leases and answers the employee's jobs (consolidation, GVU generator and judge) until `until` holds. */
async function runUntil(token: string, employee: string, consolidation: string, until: () => Promise<boolean>) {
  const seen: string[] = [];
  const deadline = Date.now() + 40_000;
  while (Date.now() < deadline) {
    if (await until()) return seen;
    const res = await call("/v1/runner/lease", { token, body: { capacity: 5, wait_ms: 250, runtimes: ["claude"] } });
    expect(res.status).toBe(200);
    for (const job of res.body.jobs as Job[]) {
      const first: string = typeof job.payload.prompt === "string" ? job.payload.prompt.split("\n")[0] : "";
      const name = `Employee ${employee}`;
      const text = first.startsWith(`# SOUL.md consolidation for ${name} —`)
        ? consolidation
        : first.startsWith(`# SOUL.md evolution proposal for ${name} —`)
          ? proposal(RULE)
          : first.startsWith(`# SOUL.md review for ${name} —`)
            ? JSON.stringify({ approved: true, score: 0.9, feedback: "ok" })
            : null;
      seen.push(first);
      const done =
        text === null
          ? await call(`/v1/runner/jobs/${job.job_id}/fail`, {
              token,
              body: { lease_id: job.lease_id, error: { code: "cli_error", message: "not this test's" }, retryable: false },
            })
          : await call(`/v1/runner/jobs/${job.job_id}/complete`, {
              token,
              body: { lease_id: job.lease_id, result: { text, runtime: "claude" } },
            });
      expect(done.status, JSON.stringify(done.body)).toBe(200);
    }
  }
  throw new Error(`runUntil timed out; seen: ${seen.join(" | ")}`);
}

const soulOf = async (id: string) => (await call(`/v1/employees/${id}/soul`)).body;
const consolidationJobs = async (id: string) =>
  (
    await env.DB.prepare("SELECT id, status FROM jobs WHERE owner_kind = 'soul_consolidation' AND owner_id LIKE ? ORDER BY created_at, id")
      .bind(`${id}@v%`)
      .all<{ id: string; status: string }>()
  ).results;
const outcomeOf = (jobId: string) => async () =>
  (await env.DB.prepare("SELECT 1 AS x FROM events WHERE dedupe_key = ?").bind(`soul_consolidation:${jobId}`).first()) !== null;
const mine = <T extends { employee_id: string }>(out: T[], id: string) => out.filter((o) => o.employee_id === id);
async function approvalsOf(id: string) {
  const res = await call("/v1/approvals?limit=100");
  expect(res.status).toBe(200);
  return (res.body.approvals as any[]).filter((a) => a.action_kind === "soul_consolidation" && a.subject === id);
}
async function roundOf(id: string) {
  return env.DB.prepare("SELECT * FROM gvu_rounds WHERE employee_id = ? ORDER BY created_at DESC, rowid DESC LIMIT 1")
    .bind(id)
    .first<any>();
}

/** An over-cap SOUL under require_approval, consolidated by the runner, waiting for a person. */
async function toApproval(id: string, token: string, at: Date) {
  const out = mine(await consolidateSouls(env, at), id);
  expect(out).toEqual([expect.objectContaining({ outcome: "started", need: "over_cap" })]);
  const jobs = await consolidationJobs(id);
  const job = jobs[jobs.length - 1]!;
  await runUntil(token, id, answer(COMPRESSED), outcomeOf(job.id));
  const pending = (await approvalsOf(id)).filter((a) => a.status === "pending");
  expect(pending).toHaveLength(1);
  return { job, approval: pending[0]! };
}

describe("governed consolidation: nobody to decide", { timeout: 60_000 }, () => {
  // First in the file: no manager operator exists yet, and no channel is configured.
  it("spends no model call when no person could decide, and says so once per version", async () => {
    const id = "soca-nochannel";
    await putEmployee(id, { require_approval: true });
    const version = await overCapSoul(id, bigSoul(51 * 1024));
    expect(mine(await consolidateSouls(env, await now()), id)).toEqual([{ employee_id: id, outcome: "blocked", reason: "no_channel" }]);
    expect(mine(await consolidateSouls(env, await now()), id)).toEqual([{ employee_id: id, outcome: "blocked", reason: "no_channel" }]);
    expect(await consolidationJobs(id)).toHaveLength(0);
    const blocked = await eventsOf("evolution.soul_consolidation_blocked", id);
    expect(blocked.map((e) => e.payload)).toEqual([expect.objectContaining({ version, reason: "no_channel", need: "over_cap" })]);
  });
});

describe("governed consolidation (require_approval)", { timeout: 120_000 }, () => {
  it("asks once, even for two racing ticks and a tick while it waits, and applies the exact change once a manager approves", async () => {
    const id = "soca-approve";
    const manager = await createOperator("manager", "soca-approver");
    await putEmployee(id, { require_approval: true });
    const over = bigSoul(51 * 1024);
    const version = await overCapSoul(id, over);
    const before = await soulOf(id);
    const runner = await createRunner(id);
    const t0 = await now();

    // Two ticks at once: one job, hence one request.
    const racing = await Promise.all([consolidateSouls(env, t0), consolidateSouls(env, t0)]);
    const outcomes = racing.flatMap((r) => mine(r, id));
    expect(outcomes.filter((o) => o.outcome === "started")).toHaveLength(1);
    const [job] = await consolidationJobs(id);
    expect(await consolidationJobs(id)).toHaveLength(1);
    await runUntil(runner.token, id, answer(COMPRESSED), outcomeOf(job!.id));

    // Nothing applied: the SOUL is byte for byte as it was, and a person is asked for the exact change.
    expect(await soulOf(id)).toMatchObject({ version, sha256: before.sha256 });
    const [approval, ...others] = await approvalsOf(id);
    expect(others).toEqual([]);
    expect(approval).toMatchObject({
      status: "pending",
      requested_by: `soul_consolidation:${job!.id}`,
      params: {
        employee_id: id,
        job_id: job!.id,
        base_version: version,
        base_sha256: before.sha256,
        new_sha256: await sha256Hex(COMPRESSED),
        bytes_before: bytes(over),
        bytes_after: bytes(COMPRESSED),
      },
      evidence: {
        bytes_before: bytes(over),
        bytes_after: bytes(COMPRESSED),
        target_bytes: CONSOLIDATE_TARGET_BYTES,
        summary: "merged repeated rules",
        job_id: job!.id,
      },
    });
    expect(approval.evidence.diff_stat).toMatch(/^-\d+ lines, \+\d+ lines$/);
    expect(approval.params.diff).toContain(`--- SOUL.md@v${version}\n+++ SOUL.md@consolidated\n`);
    expect(approval.params.diff).toContain("+The notes 0 to 6 all say the same.");
    const [requested] = await eventsOf("evolution.soul_consolidation_requested", id);
    expect(requested!.payload).toMatchObject({ job_id: job!.id, approval_id: approval.approval_id, action_hash: approval.action_hash });
    // The lock is not held while the person decides.
    const { getAgentLock } = await import("../../../src/durable-objects/agent-lock-rpc");
    expect(await getAgentLock(env, id).status({ now: Date.now() })).toBeNull();

    // Later ticks while it waits ask nobody again and start no job.
    const t1 = new Date(t0.getTime() + 90 * 60_000);
    expect(mine(await resolveConsolidationApprovals(env, t1), id)).toEqual([
      { approval_id: approval.approval_id, employee_id: id, outcome: "pending" },
    ]);
    expect(mine(await consolidateSouls(env, t1), id)).toEqual([{ employee_id: id, outcome: "waiting", reason: "awaiting_approval" }]);
    expect(await consolidationJobs(id)).toHaveLength(1);
    expect(await approvalsOf(id)).toHaveLength(1);

    expect((await call(`/v1/approvals/${approval.approval_id}/decide`, { token: manager, body: { decision: "approve" } })).status).toBe(
      200,
    );
    expect(mine(await resolveConsolidationApprovals(env, await now()), id)).toEqual([
      { approval_id: approval.approval_id, employee_id: id, outcome: "applied" },
    ]);
    const soul = await soulOf(id);
    expect(soul).toMatchObject({ version: version + 1, content: COMPRESSED, source: "consolidation", sha256: approval.params.new_sha256 });
    const history = (await call(`/v1/employees/${id}/soul/versions`)).body.versions as any[];
    expect(history.map((v) => v.version)).toEqual(expect.arrayContaining([version + 1, version]));
    expect((await call(`/v1/approvals/${approval.approval_id}`)).body).toMatchObject({
      status: "approved",
      consumed_by: `soul_consolidation:${job!.id}`,
    });
    // The change and its record landed together: the version, its event and the approval's consumption.
    const [done] = await eventsOf("evolution.soul_consolidated", id);
    expect(done!.payload).toMatchObject({
      version: version + 1,
      parent_version: version,
      approval_id: approval.approval_id,
      action_hash: approval.action_hash,
      bytes_before: bytes(over),
      bytes_after: bytes(COMPRESSED),
    });
    const [consumed] = await eventsOf("approval.consumed", approval.approval_id);
    expect(consumed!.payload).toMatchObject({ by: `soul_consolidation:${job!.id}` });
    // Applied once: a later tick finds nothing left to resolve or consolidate.
    expect(mine(await resolveConsolidationApprovals(env, await now()), id)).toEqual([]);
    expect(mine(await consolidateSouls(env, await now()), id)).toEqual([]);
    expect((await soulOf(id)).version).toBe(version + 1);
  });

  it("refuses an approval as stale once the SOUL changed, and leaves the SOUL alone when a person denies or nobody decides", async () => {
    const id = "soca-stale";
    const manager = await createOperator("manager", "soca-approver-2");
    await putEmployee(id, { require_approval: true });
    const runner = await createRunner(id);
    const v1 = await overCapSoul(id, bigSoul(51 * 1024));
    const first = await toApproval(id, runner.token, await now());

    // An operator edits the SOUL while the person decides: the approved text was computed from a SOUL that is gone.
    const edited = "# Identity\nYou are Mio.\n\n# Rules\nBe brief.";
    expect((await call(`/v1/employees/${id}/soul`, { method: "PUT", body: { content: edited, expected_version: v1 } })).status).toBe(200);
    expect(
      (await call(`/v1/approvals/${first.approval.approval_id}/decide`, { token: manager, body: { decision: "approve" } })).status,
    ).toBe(200);
    expect(mine(await resolveConsolidationApprovals(env, await now()), id)).toEqual([
      { approval_id: first.approval.approval_id, employee_id: id, outcome: "soul_changed" },
    ]);
    expect(await soulOf(id)).toMatchObject({ version: v1 + 1, content: edited, source: "operator" });
    expect((await call(`/v1/approvals/${first.approval.approval_id}`)).body.consumed_at ?? null).toBeNull();
    const [stale] = await eventsOf("evolution.soul_consolidation_discarded", id);
    expect(stale!.payload).toMatchObject({
      approval_id: first.approval.approval_id,
      reason: "soul_changed",
      detail: `approved for version ${v1}, but the SOUL is at version ${v1 + 1} now`,
    });

    // Denied: the SOUL stays byte for byte, and the denial stands for that version (no new job, no new request).
    const over = bigSoul(52 * 1024);
    const v3 = await overCapSoul(id, over);
    const second = await toApproval(id, runner.token, await now());
    expect((await call(`/v1/approvals/${second.approval.approval_id}/decide`, { token: manager, body: { decision: "deny" } })).status).toBe(
      200,
    );
    expect(mine(await resolveConsolidationApprovals(env, await now()), id)).toEqual([
      { approval_id: second.approval.approval_id, employee_id: id, outcome: "denied" },
    ]);
    const afterDenial = await soulOf(id);
    expect(afterDenial.version).toBe(v3);
    expect(afterDenial.content === over).toBe(true);
    expect(mine(await consolidateSouls(env, await now()), id)).toEqual([{ employee_id: id, outcome: "blocked", reason: "denied" }]);
    expect(await consolidationJobs(id)).toHaveLength(2);

    // Expired (nobody decided within 3 days: a denial by nobody): discarded, the SOUL untouched, asked again later.
    const over2 = bigSoul(53 * 1024);
    const v4 = await overCapSoul(id, over2);
    const third = await toApproval(id, runner.token, await now());
    const later = new Date((await now()).getTime() + 3 * 86_400_000 + 60_000);
    expect(mine(await resolveConsolidationApprovals(env, later), id)).toEqual([
      { approval_id: third.approval.approval_id, employee_id: id, outcome: "expired" },
    ]);
    expect((await soulOf(id)).version).toBe(v4);
    expect((await eventsOf("evolution.soul_consolidation_discarded", id)).map((e) => e.payload.reason).sort()).toEqual([
      "denied",
      "expired",
      "soul_changed",
    ]);
    expect(mine(await consolidateSouls(env, later), id)).toEqual([expect.objectContaining({ outcome: "started" })]);
  });
});

describe("auto mode and a GVU prompt that was too large", { timeout: 120_000 }, () => {
  it("without require_approval the result applies at once (no approval); a round lost to a prompt the SOUL made too large is retried after it", async () => {
    const id = "soca-auto";
    await putEmployee(id);
    // Under the cap (the API takes it), past the consolidation target.
    const soul = bigSoul(49 * 1024);
    expect((await call(`/v1/employees/${id}/soul`, { method: "PUT", body: { content: soul, expected_version: 1 } })).status).toBe(200);
    const runner = await createRunner(id);
    // A long trigger (5 000 CJK characters, 15 KB) on a 49 KB SOUL: the generator prompt passes 64 KiB.
    const context = `## Prediction error report\n${"予約日".repeat(1_660)}`;
    await trigger(env, { agentId: id, kind: "emergency_evolution", context }, await now());
    expect(await startGvuRounds(env, await now())).toEqual(expect.arrayContaining([expect.objectContaining({ outcome: "failed" })]));
    const failed = await roundOf(id);
    expect(JSON.parse(failed.outcome)).toMatchObject({ kind: "failed", reason: "prompt_too_large", cause: "soul" });
    const [event] = await eventsOf("evolution.gvu_failed", id);
    expect(event!.payload).toMatchObject({ round_id: failed.id, reason: "prompt_too_large", cause: "soul", soul_bytes: bytes(soul) });
    expect(event!.payload.detail).toContain("consolidat");

    // The failure makes the consolidation due; it applies at once (no person asked) and hands the request back.
    expect(mine(await consolidateSouls(env, await now()), id)).toEqual([
      expect.objectContaining({ outcome: "started", need: "append_refused" }),
    ]);
    const [job] = await consolidationJobs(id);
    await runUntil(runner.token, id, answer(COMPRESSED), outcomeOf(job!.id));
    expect(await soulOf(id)).toMatchObject({ version: 3, content: COMPRESSED, source: "consolidation" });
    expect(await approvalsOf(id)).toEqual([]);
    const [done] = await eventsOf("evolution.soul_consolidated", id);
    expect(done!.payload).toMatchObject({
      version: 3,
      retry: { of_round_id: failed.id, of_request_id: failed.request_id, reason: "prompt_too_large" },
    });
    const retried = await env.DB.prepare("SELECT * FROM evolution_requests WHERE id = ?").bind(done!.payload.retry.request_id).first<any>();
    expect(retried).toMatchObject({ status: "accepted", kind: "emergency_evolution", context });

    // The retried request becomes a round whose prompt fits now, and its proposal is appended.
    expect(await startGvuRounds(env, await now())).toEqual(
      expect.arrayContaining([{ request_id: retried.id, outcome: "started", round_id: expect.any(String) }]),
    );
    await runUntil(runner.token, id, answer(COMPRESSED), async () => (await roundOf(id))?.status === "applied");
    expect(await soulOf(id)).toMatchObject({ version: 4, content: `${COMPRESSED}\n\n${RULE}`, source: "gvu" });
  });

  it("a prompt too large for reasons other than the SOUL says so, and starts no consolidation", async () => {
    const id = "soca-context";
    await putEmployee(id);
    // At the consolidation target: consolidating could not make it smaller than it may be.
    const soul = bigSoul(CONSOLIDATE_TARGET_BYTES - 200);
    expect((await call(`/v1/employees/${id}/soul`, { method: "PUT", body: { content: soul, expected_version: 1 } })).status).toBe(200);
    const context = `## Prediction error report\n${"予約日".repeat(2_660)}`;
    await trigger(env, { agentId: id, kind: "emergency_evolution", context }, await now());
    await startGvuRounds(env, await now());
    const failed = await roundOf(id);
    expect(JSON.parse(failed.outcome)).toMatchObject({ kind: "failed", reason: "prompt_too_large", cause: "other_inputs" });
    const [event] = await eventsOf("evolution.gvu_failed", id);
    expect(event!.payload).toMatchObject({ reason: "prompt_too_large", cause: "other_inputs", limit_bytes: 64 * 1024 });
    expect(event!.payload.detail).toContain("consolidating the SOUL would not fix that");
    const view = (await call(`/v1/employees/${id}/evolution`)).body;
    expect(JSON.stringify(view)).toContain("other_inputs");
    expect(mine(await consolidateSouls(env, await now()), id)).toEqual([]);
    expect(await consolidationJobs(id)).toHaveLength(0);
  });
});
