import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { getAgentLock } from "../../../src/durable-objects/agent-lock-rpc";
import { startGvuRounds } from "../../../src/evolution/gvu-round";
import { consolidateSouls } from "../../../src/evolution/soul-consolidation-run";
import {
  checkConsolidation,
  consolidationNeed,
  CONSOLIDATE_TARGET_BYTES,
  keywordRecall,
  promptTooLarge,
} from "../../../src/evolution/soul-consolidate";
import { EMPTY_CONTRACT } from "../../../src/evolution/contract";
import { trigger } from "../../../src/evolution/triggers";
import { loadClock } from "../../../src/lib/clock";
import { call, createRunner } from "../../factories";
import { eventsOf } from "../../factories/team";
import { answer, bigSoul, bytes, COMPRESSED, overCapSoul, proposal, putEmployee, RULE } from "./soul-helpers";

/**
 * The cap deadlock release (seed 003 v3 "capデッドロック解除", issue 39): a SOUL at its 50 KB cap
 * refused every append for ever; now the `gvu` tick has it consolidated by a runner job (owner
 * `soul_consolidation`), answered here through the runner protocol by a script.
 */
const now = async () => (await loadClock(env)).now();
const REPORT = "## Prediction error report\n- composite error: 0.910 (critical)";

interface Job {
  job_id: string;
  lease_id: string;
  kind: string;
  payload: any;
}
type Answer = string | { fail: string };

async function finish(token: string, job: Job, a: Answer) {
  const res =
    typeof a === "string"
      ? await call(`/v1/runner/jobs/${job.job_id}/complete`, {
          token,
          body: { lease_id: job.lease_id, result: { text: a, runtime: "claude" } },
        })
      : await call(`/v1/runner/jobs/${job.job_id}/fail`, {
          token,
          body: { lease_id: job.lease_id, error: { code: a.fail, message: a.fail }, retryable: false },
        });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
}

/** Leases and answers the employee's jobs (consolidation, GVU generator, GVU judge) until `until` holds; anyone else's job fails. */
async function runUntil(
  token: string,
  employee: string,
  answers: { consolidation?: Answer; generator?: Answer; judge?: Answer },
  until: () => Promise<boolean>,
  seen: string[] = [],
) {
  const deadline = Date.now() + 40_000;
  while (Date.now() < deadline) {
    if (await until()) return seen;
    const res = await call("/v1/runner/lease", { token, body: { capacity: 5, wait_ms: 250, runtimes: ["claude"] } });
    expect(res.status).toBe(200);
    for (const job of res.body.jobs as Job[]) {
      const first: string = typeof job.payload.prompt === "string" ? job.payload.prompt.split("\n")[0] : "";
      const name = `Employee ${employee}`;
      const role = first.startsWith(`# SOUL.md consolidation for ${name} —`)
        ? "consolidation"
        : first.startsWith(`# SOUL.md evolution proposal for ${name} —`)
          ? "generator"
          : first.startsWith(`# SOUL.md review for ${name} —`)
            ? "judge"
            : null;
      if (!role) {
        await finish(token, job, { fail: "cli_error" });
        continue;
      }
      seen.push(first);
      const fallback =
        role === "generator" ? proposal(RULE) : role === "judge" ? JSON.stringify({ approved: true, score: 0.9, feedback: "ok" }) : "";
      await finish(token, job, answers[role] ?? fallback);
    }
  }
  throw new Error(`runUntil timed out; seen: ${seen.join(" | ")}`);
}

const soulOf = async (id: string) => (await call(`/v1/employees/${id}/soul`)).body;
async function roundOf(id: string) {
  return env.DB.prepare("SELECT * FROM gvu_rounds WHERE employee_id = ? ORDER BY created_at DESC, rowid DESC LIMIT 1")
    .bind(id)
    .first<any>();
}
const roundIs = (id: string, status: string) => async () => (await roundOf(id))?.status === status;
const consolidationJobs = async (id: string) =>
  (
    await env.DB.prepare("SELECT id, status FROM jobs WHERE owner_kind = 'soul_consolidation' AND owner_id LIKE ? ORDER BY created_at, id")
      .bind(`${id}@v%`)
      .all<{ id: string; status: string }>()
  ).results;
const outcomeOf = (jobId: string) => async () =>
  (await env.DB.prepare("SELECT 1 AS x FROM events WHERE dedupe_key = ?").bind(`soul_consolidation:${jobId}`).first()) !== null;
const mine = (out: Awaited<ReturnType<typeof consolidateSouls>>, id: string) => out.filter((o) => o.employee_id === id);

describe("the SOUL cap deadlock", { timeout: 120_000 }, () => {
  it("a SOUL at its cap refused every append (soul_too_large ×3); a consolidation job rewrites it under the cap and GVU appends again", async () => {
    const id = "soc-legacy";
    await putEmployee(id);
    const full = bigSoul(50 * 1024 - 60);
    expect((await call(`/v1/employees/${id}/soul`, { method: "PUT", body: { content: full, expected_version: 1 } })).status).toBe(200);
    const runner = await createRunner(id);

    // The deadlock as it was: every generation's append would pass 50 KB, so L1 refuses all three.
    await trigger(env, { agentId: id, kind: "emergency_evolution", context: REPORT }, await now());
    expect(await startGvuRounds(env, await now())).toEqual(expect.arrayContaining([expect.objectContaining({ outcome: "started" })]));
    await runUntil(runner.token, id, {}, roundIs(id, "abandoned"));
    expect(JSON.parse((await roundOf(id)).generations).map((g: any) => [g.layer, g.reason])).toEqual([
      ["L1", "soul_too_large"],
      ["L1", "soul_too_large"],
      ["L1", "soul_too_large"],
    ]);
    expect((await soulOf(id)).version).toBe(2);

    // The next emergency no longer spends three generator calls on it: the round waits for the consolidation.
    const again = await trigger(env, { agentId: id, kind: "emergency_evolution", context: REPORT }, await now());
    expect(await startGvuRounds(env, await now())).toEqual(
      expect.arrayContaining([expect.objectContaining({ request_id: again.request_id, outcome: "skipped" })]),
    );
    expect(JSON.parse((await roundOf(id)).outcome)).toEqual({ kind: "skipped", reason: "soul_at_cap" });

    // One consolidation job, not two on a repeated tick.
    const first = mine(await consolidateSouls(env, await now()), id);
    expect(first).toEqual([expect.objectContaining({ outcome: "started", need: "append_refused" })]);
    expect(mine(await consolidateSouls(env, await now()), id)).toEqual([{ employee_id: id, outcome: "waiting", reason: "running" }]);
    const jobs = await consolidationJobs(id);
    expect(jobs).toHaveLength(1);
    expect(await getAgentLock(env, id).status({ now: Date.now() })).toMatchObject({ holder: `soul_consolidation:${jobs[0]!.id}` });

    const seen = await runUntil(runner.token, id, { consolidation: answer(COMPRESSED) }, outcomeOf(jobs[0]!.id));
    expect(seen).toEqual([`# SOUL.md consolidation for Employee ${id} — version 2`]);
    const soul = await soulOf(id);
    expect(soul).toMatchObject({ version: 3, content: COMPRESSED, source: "consolidation" });
    expect(soul.bytes).toBeLessThanOrEqual(CONSOLIDATE_TARGET_BYTES);
    const [done] = await eventsOf("evolution.soul_consolidated", id);
    expect(done!.payload).toMatchObject({ version: 3, parent_version: 2, bytes_before: bytes(full), bytes_after: bytes(COMPRESSED) });
    expect(await getAgentLock(env, id).status({ now: Date.now() })).toBeNull();
    expect(mine(await consolidateSouls(env, await now()), id)).toEqual([]);

    // The valve is open again: the same proposal is appended to the consolidated SOUL.
    await trigger(env, { agentId: id, kind: "emergency_evolution", context: REPORT }, await now());
    expect(await startGvuRounds(env, await now())).toEqual(expect.arrayContaining([expect.objectContaining({ outcome: "started" })]));
    await runUntil(runner.token, id, {}, roundIs(id, "applied"));
    expect(await soulOf(id)).toMatchObject({ version: 4, content: `${COMPRESSED}\n\n${RULE}`, source: "gvu" });
  });

  it("refuses an oversize or unreadable result, leaving the SOUL byte for byte unchanged, and tries again only after the cooldown", async () => {
    const id = "soc-refuse";
    await putEmployee(id, { gvu_cooldown_minutes: 60 });
    const over = bigSoul(52 * 1024);
    const version = await overCapSoul(id, over);
    const before = await soulOf(id);
    const runner = await createRunner(id);
    const t0 = await now();

    expect(mine(await consolidateSouls(env, t0), id)).toEqual([expect.objectContaining({ outcome: "started", need: "over_cap" })]);
    const [job1] = await consolidationJobs(id);
    await runUntil(runner.token, id, { consolidation: answer(bigSoul(45 * 1024)) }, outcomeOf(job1!.id));
    const [tooLarge] = await eventsOf("evolution.soul_consolidation_failed", id);
    expect(tooLarge!.payload).toMatchObject({ job_id: job1!.id, base_version: version, reason: "too_large" });
    const after = await soulOf(id);
    expect(after).toMatchObject({ version, sha256: before.sha256 });
    expect(after.content === over).toBe(true);

    // Not a tight loop: the next try waits for the cooldown the first one set.
    expect(mine(await consolidateSouls(env, new Date(t0.getTime() + 30 * 60_000)), id)).toEqual([
      { employee_id: id, outcome: "waiting", reason: "cooldown" },
    ]);
    expect(await consolidationJobs(id)).toHaveLength(1);
    const t1 = new Date(t0.getTime() + 61 * 60_000);
    expect(mine(await consolidateSouls(env, t1), id)).toEqual([expect.objectContaining({ outcome: "started" })]);
    const job2 = (await consolidationJobs(id))[1]!;
    await runUntil(runner.token, id, { consolidation: "Sure! Here is a shorter SOUL:\n" + COMPRESSED }, outcomeOf(job2.id));
    const reasons = (await eventsOf("evolution.soul_consolidation_failed", id)).map((e) => e.payload.reason).sort();
    expect(reasons).toEqual(["too_large", "unparseable"]);
    expect((await soulOf(id)).content === over).toBe(true);
    expect((await soulOf(id)).version).toBe(version);
  });
});

describe("the cooldown consolidation shares with the AEE path", { timeout: 120_000 }, () => {
  it("an AEE trigger's cooldown holds a consolidation back, and a consolidation's cooldown refuses the next trigger", async () => {
    const id = "soc-aee";
    await putEmployee(id, { legacy_soul_evolution: false, gvu_cooldown_minutes: 60 });
    await overCapSoul(id, bigSoul(51 * 1024));
    const runner = await createRunner(id);
    const t0 = await now();
    expect(await trigger(env, { agentId: id, kind: "emergency_evolution", context: REPORT }, t0)).toMatchObject({ status: "accepted" });
    expect(mine(await consolidateSouls(env, t0), id)).toEqual([{ employee_id: id, outcome: "waiting", reason: "cooldown" }]);

    const t1 = new Date(t0.getTime() + 61 * 60_000);
    expect(mine(await consolidateSouls(env, t1), id)).toEqual([expect.objectContaining({ outcome: "started", need: "over_cap" })]);
    const [job] = await consolidationJobs(id);
    await runUntil(runner.token, id, { consolidation: answer(COMPRESSED) }, outcomeOf(job!.id));
    expect(await soulOf(id)).toMatchObject({ content: COMPRESSED, source: "consolidation", read_only_to_employee: true });
    const refused = await trigger(env, { agentId: id, kind: "emergency_evolution", context: REPORT }, new Date(t1.getTime() + 60_000));
    expect(refused).toMatchObject({ status: "refused", reason: "cooldown" });
  });
});

describe("consolidation checks (pure)", () => {
  const original = bigSoul(48 * 1024);
  it("needs a consolidation only over the cap, or past the target after a round on the version hit the cap", () => {
    const hit = { status: "abandoned", generations: [{ reason: "soul_too_large" }], outcome: null };
    expect(consolidationNeed({ soul_bytes: 51 * 1024, appends: false, rounds_on_version: [] })).toBe("over_cap");
    expect(consolidationNeed({ soul_bytes: 45 * 1024, appends: true, rounds_on_version: [] })).toBeNull();
    expect(consolidationNeed({ soul_bytes: 45 * 1024, appends: true, rounds_on_version: [hit] })).toBe("append_refused");
    expect(consolidationNeed({ soul_bytes: 45 * 1024, appends: false, rounds_on_version: [hit] })).toBeNull();
    expect(consolidationNeed({ soul_bytes: CONSOLIDATE_TARGET_BYTES, appends: true, rounds_on_version: [hit] })).toBeNull();
    // A prompt too large because of the SOUL counts as the cap; one too large for other reasons does not.
    const tooLarge = (cause?: string) => ({
      status: "failed",
      generations: [],
      outcome: { reason: "prompt_too_large", ...(cause ? { cause } : {}) },
    });
    expect(consolidationNeed({ soul_bytes: 45 * 1024, appends: true, rounds_on_version: [tooLarge("soul")] })).toBe("append_refused");
    expect(consolidationNeed({ soul_bytes: 45 * 1024, appends: true, rounds_on_version: [tooLarge()] })).toBe("append_refused");
    expect(consolidationNeed({ soul_bytes: 45 * 1024, appends: true, rounds_on_version: [tooLarge("other_inputs")] })).toBeNull();
  });

  it("tells a prompt the SOUL made too large from one the other inputs made too large", () => {
    const limit = 64 * 1024;
    expect(promptTooLarge({ prompt_bytes: 70_000, soul_bytes: 50_000, limit })).toMatchObject({ cause: "soul", prompt_bytes: 70_000 });
    // Even at the target the rest does not fit: consolidating would not help.
    expect(promptTooLarge({ prompt_bytes: 70_000 + 20_000, soul_bytes: 50_000, limit })).toMatchObject({ cause: "other_inputs" });
    // A SOUL already at or under the target is never the cause.
    expect(promptTooLarge({ prompt_bytes: 70_000, soul_bytes: CONSOLIDATE_TARGET_BYTES, limit })).toMatchObject({ cause: "other_inputs" });
  });

  it("accepts a faithful compression and names the first failing check of anything else", () => {
    const check = (reply: string | null, contract = EMPTY_CONTRACT) => checkConsolidation({ original, reply, contract });
    expect(check(answer(COMPRESSED))).toMatchObject({ ok: true, bytes: bytes(COMPRESSED) });
    expect(check("```json\n" + answer(COMPRESSED) + "\n```")).toMatchObject({ ok: true });
    expect(check(COMPRESSED)).toMatchObject({ ok: false, reason: "unparseable" });
    expect(check(answer("  "))).toMatchObject({ ok: false, reason: "empty" });
    expect(check(answer(bigSoul(CONSOLIDATE_TARGET_BYTES + 10)))).toMatchObject({ ok: false, reason: "too_large" });
    expect(check(answer(`${COMPRESSED}\u202E`))).toMatchObject({ ok: false, reason: "unsafe_characters" });
    expect(check(answer(COMPRESSED), { ...EMPTY_CONTRACT, must_always: ["speak Japanese"] })).toMatchObject({
      ok: false,
      reason: "must_always",
    });
    expect(check(answer(COMPRESSED), { ...EMPTY_CONTRACT, must_not: ["double-book"] })).toMatchObject({ ok: false, reason: "must_not" });
    expect(check(answer(COMPRESSED.replace("# Rules", "Rules:")))).toMatchObject({ ok: false, reason: "headings_missing" });
    expect(check(answer("# Identity\nYou are Kai.\n\n# Rules\nBe nice."))).toMatchObject({ ok: false, reason: "meaning_lost" });
    expect(keywordRecall(original, COMPRESSED)).toBeGreaterThanOrEqual(0.9);
  });
});
