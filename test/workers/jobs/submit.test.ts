import { env } from "cloudflare:workers";
import { count, eq } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { getDb } from "../../../src/db/client";
import { events, jobs } from "../../../src/db/schema";
import { prepareJob, submitJob } from "../../../src/jobs/submit";
import { AppError } from "../../../src/lib/errors";

/** A diagnostic job as the admin route submits it. */
const utilityJob = (prompt: string) =>
  ({ kind: "utility", payload: { runtime: "offline", prompt, timeout_ms: 60_000 }, owner: { kind: "admin", id: "a" } }) as const;

describe("submitJob", () => {
  it("leaves no job row and no event behind when the dispatch queue refuses the job", async () => {
    const db = getDb(env.DB);
    const before = {
      jobs: (await db.select({ n: count() }).from(jobs))[0]!.n,
      events: (await db.select({ n: count() }).from(events))[0]!.n,
    };
    const refusing = {
      DISPATCH: {
        send: async () => {
          throw new Error("queue unavailable");
        },
      } as unknown as Queue,
    };
    const err = await submitJob(refusing, db, utilityJob("x"), new Date()).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AppError);
    expect((err as AppError).code).toBe("unavailable");
    expect((await db.select({ n: count() }).from(jobs))[0]!.n).toBe(before.jobs);
    expect((await db.select({ n: count() }).from(events))[0]!.n).toBe(before.events);
    expect(await db.select().from(events).where(eq(events.type, "job.queued"))).toHaveLength(0);
  });

  it("with defer, answers once the job and its event are recorded and sends the message in the deferred work", async () => {
    const db = getDb(env.DB);
    const job = utilityJob("deferred");
    const sent: unknown[] = [];
    const deferred: Promise<unknown>[] = [];
    const now = new Date();
    const { job_id } = await submitJob(
      { DISPATCH: { sendBatch: async (batch: { body: unknown }[]) => void sent.push(...batch.map((m) => m.body)) } as unknown as Queue },
      db,
      job,
      now,
      { defer: (work) => void deferred.push(work) },
    );
    expect(await db.select().from(jobs).where(eq(jobs.id, job_id))).toEqual([expect.objectContaining({ status: "queued" })]);
    expect(await db.select().from(events).where(eq(events.subject, job_id))).toEqual([expect.objectContaining({ type: "job.queued" })]);
    expect(sent).toEqual([]);
    expect(deferred).toHaveLength(1);
    await Promise.all(deferred);
    expect(sent).toEqual([{ ...job, job_id, enqueued_at: now.toISOString() }]);
  });

  it("records the same job row and job.queued event as prepareJob's statements, which features batch with their own", async () => {
    const db = getDb(env.DB);
    const job = utilityJob("same rows");
    const now = new Date();
    const sent: unknown[] = [];
    const { job_id: submitted } = await submitJob(
      { DISPATCH: { send: async (m: unknown) => void sent.push(m) } as unknown as Queue },
      db,
      job,
      now,
    );
    const prepared = prepareJob(db, job, now);
    await db.batch(prepared.statements);
    const row = async (id: string) => {
      const r = await env.DB.prepare(`SELECT * FROM jobs WHERE id = ?`).bind(id).first<Record<string, unknown>>();
      const e = await env.DB.prepare(`SELECT type, subject, payload, created_at, dedupe_key FROM events WHERE subject = ?`)
        .bind(id)
        .first<Record<string, unknown>>();
      // the ids differ; everything else must not
      return JSON.parse(
        JSON.stringify({
          r: { ...r, id: "ID" },
          e: { ...e, subject: "ID", dedupe_key: String(e?.dedupe_key).replace(id, "ID") },
        }).replaceAll(id, "ID"),
      );
    };
    expect(await row(submitted)).toEqual(await row(prepared.jobId));
    expect(sent).toEqual([{ ...job, job_id: submitted, enqueued_at: now.toISOString() }]);
  });
});
