import { env } from "cloudflare:workers";
import { count, eq } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { getDb } from "../../../src/db/client";
import { events, jobs } from "../../../src/db/schema";
import { submitJob } from "../../../src/jobs/submit";
import { AppError } from "../../../src/lib/errors";

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
    const err = await submitJob(
      refusing,
      db,
      { kind: "utility", payload: { runtime: "offline", prompt: "x", timeout_ms: 60_000 }, owner: { kind: "admin", id: "a" } },
      new Date(),
    ).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AppError);
    expect((err as AppError).code).toBe("unavailable");
    expect((await db.select({ n: count() }).from(jobs))[0]!.n).toBe(before.jobs);
    expect((await db.select({ n: count() }).from(events))[0]!.n).toBe(before.events);
    expect(await db.select().from(events).where(eq(events.type, "job.queued"))).toHaveLength(0);
  });
});
