import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { requestAttachmentsArchive } from "../../../src/team/attachments";
import { call, createOperator, createRunner } from "../../factories";
import { send } from "../../factories/http";
import { login, web } from "../../factories/web";
import { packet } from "../../factories/packets";
import { completeStage, handoff, leaseStages, runEvaluator, type LeasedStage } from "../../factories/scripted-runner";
import { eventsOf, putTeamConfig, SEED_TEAM } from "../../factories/team";

/**
 * The packet attachments archive (seed 002, issue 39) over HTTP: an accepted team goal asks the runner
 * to archive what its packets named; the runner uploads under its lease; the Worker records what went
 * in and what was refused, shows it on the task, and serves only what it recorded.
 */
const GOAL = { title: "Write the onboarding notes", acceptance_criteria: ["notes/a.md exists", "notes/b.md exists"] };
const TEAM = { ...SEED_TEAM, gate: "always_team" as const, executor_fanout: 1 };

async function putEmployee(id: string) {
  const res = await call(`/v1/employees/${id}`, {
    method: "PUT",
    body: { name: `Employee ${id}`, runtime: "claude", model: { preferred: "claude-sonnet-4-6" } },
  });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
}

async function taskOf(taskId: string, done: (t: any) => boolean, timeoutMs = 20_000) {
  const deadline = Date.now() + timeoutMs;
  let task: any;
  while (Date.now() < deadline) {
    task = (await call(`/v1/tasks/${taskId}`)).body;
    if (done(task)) return task;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`task ${taskId} never got there: ${JSON.stringify(task?.attachments ?? task?.status)}`);
}

/** One accepted team round whose planner and executor packets name files (some of which must never be archived). */
async function acceptedTeamGoal(runner: string, employee: string, named: string[]) {
  const created = await call(`/v1/employees/${employee}/goals`, { body: GOAL });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  const taskId = created.body.task_id as string;
  const [plan] = await leaseStages(runner, 1, { taskId });
  const planned = packet(taskId, 1, "planner", "executor", { packet_id: "a", artifacts: [{ path: "notes/a.md" }] });
  expect((await handoff(plan!.payload.member_token, planned)).status).toBe(201);
  await completeStage(runner, plan!, { text: "planned" });
  const exec = (await leaseStages(runner, 1, { taskId }))[0] as LeasedStage;
  const wrote = packet(taskId, 1, "executor", "verifier", {
    packet_id: "done-a",
    objective: "Wrote the notes with a shell command",
    artifacts: named.map((path) => ({ path })),
  });
  const res = await handoff(exec.payload.member_token, wrote);
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  await completeStage(runner, exec, { text: "done", evidence: { native_tool_events: 0 }, tool_activity: [], artifact_receipts: [] });
  const [synth] = await leaseStages(runner, 1, { taskId });
  await completeStage(runner, synth!, { text: "Synthesis: notes written" });
  const [verify] = await leaseStages(runner, 1, { taskId });
  await completeStage(runner, verify!, { verdict: "PASS", reasons: [] });
  await runEvaluator(runner, taskId, GOAL.acceptance_criteria.length);
  return taskId;
}

const sha256 = async (bytes: Uint8Array) =>
  [...new Uint8Array(await crypto.subtle.digest("SHA-256", bytes))].map((b) => b.toString(16).padStart(2, "0")).join("");

async function upload(runner: string, job: LeasedStage, declared: string, path: string, bytes: Uint8Array, hash?: string) {
  const query = new URLSearchParams({ lease_id: job.lease_id, declared, path });
  return send(`/v1/runner/jobs/${job.job_id}/attachments?${query}`, {
    method: "PUT",
    token: runner,
    headers: { "content-type": "application/octet-stream", "x-content-sha256": hash ?? (await sha256(bytes)) },
    body: bytes,
  });
}

describe("the packet attachments archive of an accepted team goal", () => {
  it("archives the named files the runner accepted, records the refused ones with their reasons, and serves only what it recorded", async () => {
    await putTeamConfig(TEAM);
    await putEmployee("ena");
    const runner = await createRunner("attachments-1");
    const taskId = await acceptedTeamGoal(runner.token, "ena", ["notes/a.md", "notes/b.md", "SOUL.md", "../outside.md"]);

    // Settled done, and the archive is asked for on the accepted round, once.
    const pending = await taskOf(taskId, (t) => t.status === "done" && t.attachments);
    expect(pending.attachments).toMatchObject({
      status: "pending",
      round: 1,
      named: ["notes/a.md", "notes/b.md", "SOUL.md", "../outside.md"],
    });
    const [job] = await leaseStages(runner.token, 1, { taskId });
    expect(job).toMatchObject({
      kind: "attachments_archive",
      payload: { employee_id: "ena", task_id: taskId, round: 1, runtime: "codex", max_bytes: 64 * 1024 * 1024 },
    });
    expect([...(job!.payload as any).paths].sort()).toEqual(["../outside.md", "SOUL.md", "notes/a.md", "notes/b.md"]);

    // The Worker re-checks what it can without the disk, and stores nothing it refuses.
    const a = new TextEncoder().encode("week one\n");
    expect((await upload(runner.token, job!, "notes/a.md", "notes/a.md", a, "0".repeat(64))).status).toBe(422);
    const unasked = await upload(runner.token, job!, "notes/c.md", "notes/c.md", a);
    expect(unasked.status).toBe(422);
    expect(unasked.json.errors).toEqual([expect.objectContaining({ path: "declared" })]);
    const internal = await upload(runner.token, job!, "notes/a.md", "memory/x", a);
    expect(internal.status).toBe(422);
    expect(internal.json.errors).toEqual([expect.objectContaining({ path: "path", message: "internal_path" })]);
    const other = await createRunner("attachments-other");
    expect((await upload(other.token, job!, "notes/a.md", "notes/a.md", a)).status).toBe(409);
    expect(await env.ATTACHMENTS.head(`attachments/ena/${taskId}/memory/x`)).toBeNull();

    const stored = await upload(runner.token, job!, "notes/a.md", "notes/a.md", a);
    expect(stored.status, stored.text).toBe(200);
    expect(stored.json).toEqual({ job_id: job!.job_id, path: "notes/a.md", bytes: 9, sha256: await sha256(a) });
    // The same upload again (a retried lease) overwrites its own key.
    expect((await upload(runner.token, job!, "notes/a.md", "notes/a.md", a)).status).toBe(200);

    await completeStage(runner.token, job!, {
      text: "archived 1, refused 3",
      runtime: "codex",
      duration_ms: 3,
      archived: [{ declared: "notes/a.md", path: "notes/a.md", bytes: 9, sha256: await sha256(a) }],
      refused: [
        { declared: "notes/b.md", reason: "missing" },
        { declared: "SOUL.md", reason: "internal_path" },
        { declared: "../outside.md", reason: "escapes_workspace" },
      ],
    });
    const done = await taskOf(taskId, (t) => t.attachments?.status === "archived");
    expect(done.attachments).toMatchObject({
      status: "archived",
      job_id: job!.job_id,
      archived: [
        {
          declared: "notes/a.md",
          path: "notes/a.md",
          bytes: 9,
          sha256: await sha256(a),
          download: `/v1/tasks/${taskId}/attachment?path=notes%2Fa.md`,
        },
      ],
      refused: [
        { declared: "notes/b.md", reason: "missing" },
        { declared: "SOUL.md", reason: "internal_path" },
        { declared: "../outside.md", reason: "escapes_workspace" },
      ],
    });
    const recorded = await eventsOf("team.attachments_archived", taskId);
    expect(recorded).toHaveLength(1);
    expect(recorded[0]!.payload).toMatchObject({ task_id: taskId, employee_id: "ena", round: 1, job_id: job!.job_id });

    // The download: a viewer may read it; the bytes and their hash are what was archived.
    const viewer = await createOperator("viewer", "attachments-viewer");
    const got = await send(done.attachments.archived[0].download, { token: viewer });
    expect(got.status).toBe(200);
    expect(got.text).toBe("week one\n");
    expect(got.headers.get("content-type")).toBe("application/octet-stream");
    expect(got.headers.get("content-disposition")).toBe("attachment; filename*=UTF-8''a.md");
    expect(got.headers.get("x-content-sha256")).toBe(await sha256(a));
    expect((await send(done.attachments.archived[0].download, { token: null })).status).toBe(401);
    // The console's task page lists them where the task is shown, and downloads through the session.
    const session = await login(viewer);
    const page = await web(`/console/tasks/${taskId}`, { cookie: session.cookie });
    expect(page.status).toBe(200);
    const section = page.text.slice(page.text.indexOf('id="attachments"'));
    expect(section).toContain(`href="/console/tasks/${taskId}/attachment?path=notes%2Fa.md"`);
    expect(section).toContain("<code>SOUL.md</code>: internal_path");
    expect(section).toContain("<code>../outside.md</code>: escapes_workspace");
    const browser = await web(`/console/tasks/${taskId}/attachment?path=notes%2Fa.md`, { cookie: session.cookie });
    expect(browser.status).toBe(200);
    expect(browser.text).toBe("week one\n");
    expect((await web(`/console/tasks/${taskId}/attachment?path=SOUL.md`, { cookie: session.cookie })).status).toBe(404);

    // Refused or never-named paths are not served, whatever the bucket holds.
    await env.ATTACHMENTS.put(`attachments/ena/${taskId}/SOUL.md`, "planted");
    expect((await send(`/v1/tasks/${taskId}/attachment?path=SOUL.md`)).status).toBe(404);
    expect((await send(`/v1/tasks/${taskId}/attachment?path=notes/b.md`)).status).toBe(404);
    expect((await send(`/v1/tasks/${taskId}/attachment?path=..%2Fx`)).status).toBe(422);

    // Nothing is lost or doubled on a retry: asking again, the team tick, and the job's end told twice change nothing.
    expect(await requestAttachmentsArchive(env, taskId, new Date())).toBe("none");
    expect((await call("/v1/admin/ticks/team", { method: "POST" })).status).toBe(200);
    await completeStage(runner.token, job!, {
      text: "archived 1, refused 3",
      runtime: "codex",
      duration_ms: 3,
      archived: [{ declared: "notes/a.md", path: "notes/a.md", bytes: 9, sha256: await sha256(a) }],
      refused: [
        { declared: "notes/b.md", reason: "missing" },
        { declared: "SOUL.md", reason: "internal_path" },
        { declared: "../outside.md", reason: "escapes_workspace" },
      ],
    });
    expect(await eventsOf("team.attachments_archived", taskId)).toHaveLength(1);
    expect(await eventsOf("team.attachments_requested", taskId)).toHaveLength(1);
    expect((await call(`/v1/tasks/${taskId}`)).body.attachments).toEqual(done.attachments);
  });

  it("lets the team tick ask for the archive of an accepted team goal the loop did not get to (the process stopped after the settle)", async () => {
    await putTeamConfig(TEAM);
    await putEmployee("hal");
    const runner = await createRunner("attachments-4");
    const taskId = await acceptedTeamGoal(runner.token, "hal", ["notes/a.md"]);
    const first = (await taskOf(taskId, (t) => t.attachments?.status === "pending")).attachments.job_id;
    // As if the request had never landed: the round without its record.
    await env.DB.prepare(`UPDATE team_rounds SET state = json_remove(state, '$.attachments') WHERE task_id = ?`).bind(taskId).run();
    expect((await call(`/v1/tasks/${taskId}`)).body).not.toHaveProperty("attachments");
    const tick = await call("/v1/admin/ticks/team", { method: "POST" });
    expect(tick.status).toBe(200);
    const again = await taskOf(taskId, (t) => t.attachments?.status === "pending");
    expect(again.attachments.job_id).not.toBe(first);
    expect(again.attachments.named).toEqual(["notes/a.md"]);
  });

  it("never records as archived a file the bucket does not hold", async () => {
    await putTeamConfig(TEAM);
    await putEmployee("fei");
    const runner = await createRunner("attachments-2");
    const taskId = await acceptedTeamGoal(runner.token, "fei", ["notes/a.md"]);
    const [job] = await leaseStages(runner.token, 1, { taskId });
    expect(job!.kind).toBe("attachments_archive");
    await completeStage(runner.token, job!, {
      text: "archived 1",
      runtime: "codex",
      duration_ms: 1,
      archived: [{ declared: "notes/a.md", path: "notes/a.md", bytes: 3, sha256: "ab".repeat(32) }],
      refused: [],
    });
    const done = await taskOf(taskId, (t) => t.attachments?.status === "archived");
    expect(done.attachments.archived).toEqual([]);
    expect(done.attachments.refused).toEqual([{ declared: "notes/a.md", reason: "upload_refused" }]);
  });

  it("records a failed archive with its reason", async () => {
    await putTeamConfig(TEAM);
    await putEmployee("gus");
    const runner = await createRunner("attachments-3");
    const taskId = await acceptedTeamGoal(runner.token, "gus", ["notes/a.md"]);
    const [job] = await leaseStages(runner.token, 1, { taskId });
    const res = await call(`/v1/runner/jobs/${job!.job_id}/fail`, {
      token: runner.token,
      body: { lease_id: job!.lease_id, error: { code: "unsupported_job", message: "no" }, retryable: false },
    });
    expect(res.status).toBe(200);
    const done = await taskOf(taskId, (t) => t.attachments?.status === "failed");
    expect(done.attachments).toMatchObject({ status: "failed", error: { code: "unsupported_job" } });
    expect(await eventsOf("team.attachments_failed", taskId)).toHaveLength(1);
  });
});
