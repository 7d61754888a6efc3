import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { getDb } from "../../../src/db/client";
import { listAttempts, recordInboxNotices, type InboxNotice } from "../../../src/jobs/outcomes";
import { findJob } from "../../../src/jobs/submit";
import { listEvents } from "../../../src/lib/events";
import { call, utilityJob } from "../../factories";

describe("recordInboxNotices", () => {
  it("never moves a job back when deliveries overlap or arrive out of order, and appends each event once", async () => {
    const { body } = await call("/v1/admin/jobs", { body: utilityJob() });
    const db = getDb(env.DB);
    const base = { job_id: body.job_id, kind: "utility", owner: { kind: "admin" as const, id: "a" }, attempt: 1, leased_by: "rnr_x" };
    const leased: InboxNotice = { ...base, type: "job.leased", status: "leased", at: new Date().toISOString() };
    const completed: InboxNotice = {
      ...base,
      type: "job.completed",
      status: "completed",
      at: new Date().toISOString(),
      result: { text: "done" },
    };

    await recordInboxNotices(db, "inbox-x", [
      { seq: 1, notice: leased },
      { seq: 2, notice: completed },
    ]);
    // a slower, overlapping delivery of the first notice lands afterwards
    await recordInboxNotices(db, "inbox-x", [{ seq: 1, notice: leased }]);

    expect(await findJob(db, body.job_id)).toMatchObject({ status: "completed", result: { text: "done" }, inboxSeq: 2 });
    const trail = await listEvents(db, { subject: body.job_id, limit: 50 });
    expect(trail.events.map((e) => e.type)).toEqual(["job.queued", "job.leased", "job.completed"]);
  });

  it("keeps the attempt history in seq order: a released claim stays released when its older lease notice is delivered again", async () => {
    const { body } = await call("/v1/admin/jobs", { body: utilityJob() });
    const db = getDb(env.DB);
    const at = new Date().toISOString();
    const base = { job_id: body.job_id, kind: "utility", owner: { kind: "admin" as const, id: "a" } };
    const leased: InboxNotice = {
      ...base,
      type: "job.leased",
      status: "leased",
      attempt: 1,
      leased_by: "rnr_dead",
      at,
      attempt_record: { attempt: 1, runner_id: "rnr_dead", status: "leased", started_at: at, ended_at: null },
    };
    const released: InboxNotice = {
      ...base,
      type: "job.requeued",
      status: "queued",
      attempt: 0,
      leased_by: null,
      at,
      reason: "lease_unacknowledged",
      attempt_record: { attempt: 1, runner_id: "rnr_dead", status: "released", started_at: at, ended_at: at },
    };
    await recordInboxNotices(db, "inbox-y", [
      { seq: 1, notice: leased },
      { seq: 2, notice: released },
    ]);
    await recordInboxNotices(db, "inbox-y", [{ seq: 1, notice: leased }]);
    expect(await listAttempts(db, body.job_id)).toEqual([]);
    expect(await findJob(db, body.job_id)).toMatchObject({ status: "queued", attempt: 0, leasedBy: null });

    const retaken: InboxNotice = {
      ...leased,
      leased_by: "rnr_live",
      attempt_record: { attempt: 1, runner_id: "rnr_live", status: "leased", started_at: at, ended_at: null },
    };
    await recordInboxNotices(db, "inbox-y", [{ seq: 3, notice: retaken }]);
    expect(await listAttempts(db, body.job_id)).toEqual([
      { attempt: 1, runner_id: "rnr_live", status: "leased", started_at: at, ended_at: null },
    ]);
  });

  it("writes SQL NULL for what a notice does not carry and JSON text for what it does (as drizzle's JSON columns would)", async () => {
    const { body } = await call("/v1/admin/jobs", { body: utilityJob() });
    const db = getDb(env.DB);
    const at = new Date().toISOString();
    const base = { job_id: body.job_id, kind: "utility", owner: { kind: "admin" as const, id: "a" }, attempt: 1, leased_by: "rnr_x" };
    const error = { code: "cli_failed", message: "exit 2" };
    await recordInboxNotices(db, "inbox-z", [
      {
        seq: 1,
        notice: {
          ...base,
          type: "job.leased",
          status: "leased",
          at,
          attempt_record: { attempt: 1, runner_id: "rnr_x", status: "leased", started_at: at, ended_at: null },
        },
      },
    ]);
    const raw = () =>
      env.DB.prepare(
        `SELECT j.result, j.error, j.finished_at, a.error AS attempt_error, a.ended_at FROM jobs j JOIN job_attempts a ON a.job_id = j.id WHERE j.id = ?`,
      )
        .bind(body.job_id)
        .first();
    expect(await raw()).toEqual({ result: null, error: null, finished_at: null, attempt_error: null, ended_at: null });

    await recordInboxNotices(db, "inbox-z", [
      {
        seq: 2,
        notice: {
          ...base,
          type: "job.failed",
          status: "failed",
          at,
          error,
          reason: "not_retryable",
          attempt_record: { attempt: 1, runner_id: "rnr_x", status: "failed", started_at: at, ended_at: at, error },
        },
      },
    ]);
    expect(await raw()).toEqual({
      result: null,
      error: JSON.stringify(error),
      finished_at: at,
      attempt_error: JSON.stringify(error),
      ended_at: at,
    });
    expect(await findJob(db, body.job_id)).toMatchObject({ status: "failed", error, result: null });
    const failed = (await listEvents(db, { subject: body.job_id, limit: 50 })).events.find((e) => e.type === "job.failed");
    expect(failed?.payload).toEqual({
      job_id: body.job_id,
      kind: "utility",
      owner: base.owner,
      status: "failed",
      attempt: 1,
      leased_by: "rnr_x",
      reason: "not_retryable",
      error,
    });
  });

  it("applies a delivery of large results split over several statements in seq order, each notice once", async () => {
    const db = getDb(env.DB);
    const a = (await call("/v1/admin/jobs", { body: utilityJob() })).body.job_id as string;
    const b = (await call("/v1/admin/jobs", { body: utilityJob() })).body.job_id as string;
    const at = new Date().toISOString();
    const owner = { kind: "admin" as const, id: "a" };
    // Quotes double in size when the result's JSON is quoted again: each of these fills a statement of its own.
    const big = (tag: string) => ({ text: `${tag}:${'"'.repeat(200_000)}` });
    const record = (attempt: number, status: "leased" | "completed") => ({
      attempt,
      runner_id: "rnr_x",
      status,
      started_at: at,
      ended_at: status === "leased" ? null : at,
    });
    // One job's notice at `seq`: leased, or completed with its large result.
    const notice = (seq: number, job_id: string, status: "leased" | "completed", tag: string) => ({
      seq,
      notice: {
        job_id,
        kind: "utility",
        owner,
        type: `job.${status}`,
        status,
        attempt: 1,
        leased_by: "rnr_x",
        at,
        ...(status === "completed" ? { result: big(tag) } : {}),
        attempt_record: record(1, status),
      } satisfies InboxNotice,
    });
    const notices = [
      notice(1, a, "leased", "a"),
      notice(2, b, "leased", "b"),
      notice(3, a, "completed", "a"),
      notice(4, b, "completed", "b"),
    ];
    await recordInboxNotices(db, "inbox-big", notices);
    await recordInboxNotices(db, "inbox-big", notices.slice(0, 2));
    for (const [id, tag] of [
      [a, "a"],
      [b, "b"],
    ] as const) {
      expect(await findJob(db, id)).toMatchObject({ status: "completed", result: big(tag), inboxSeq: id === a ? 3 : 4 });
      expect((await listEvents(db, { subject: id, limit: 50 })).events.map((e) => e.type)).toEqual([
        "job.queued",
        "job.leased",
        "job.completed",
      ]);
      expect(await listAttempts(db, id)).toEqual([{ ...record(1, "completed") }]);
    }
  });
});
