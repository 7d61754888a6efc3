import { describe, expect, it } from "vitest";
import { CLOCK_LATEST_MS } from "../../../src/lib/clock";
import { call, createRunner, utilityJob } from "../../factories";
import { snapshot } from "../../factories/state";

const DAY = 24 * 3_600_000;
const LATEST = "9998-12-31T23:59:59.999Z";
/** A four-digit-year ISO-8601 UTC instant, the only form stored times may take. */
const ISO_INSTANT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

const setClock = (set: string) => call("/v1/admin/clock", { body: { set } });

describe("the test clock keeps every stored time a valid ISO-8601 instant", () => {
  it("documents its latest now as the end of year 9998, a year below 9999-12-31T23:59:59.999Z", () => {
    expect(new Date(CLOCK_LATEST_MS).toISOString()).toBe(LATEST);
  });

  it.each([
    ["before 1970", "1969-12-31T23:59:59.999Z"],
    ["in the year 9999", "9999-06-01T00:00:00.000Z"],
    ["at the last four-digit-year instant", "9999-12-31T23:59:59.999Z"],
  ])("refuses to set it %s with 422 naming set, and leaves the clock alone", async (_when, set) => {
    await setClock("2030-01-01T00:00:00.000Z");
    const before = await snapshot();
    const res = await setClock(set);
    expect(res.status).toBe(422);
    expect(res.body.code).toBe("validation_failed");
    expect(res.body.errors).toEqual([expect.objectContaining({ path: "set", message: expect.stringContaining(LATEST) })]);
    expect(res.body).toMatchObject({ earliest: "1970-01-01T00:00:00.000Z", latest: LATEST });
    expect(await snapshot()).toEqual(before);
  });

  it("accepts both bounds themselves", async () => {
    const earliest = await setClock("1970-01-01T00:00:00.000Z");
    expect(earliest.status).toBe(200);
    expect(earliest.body.now).toBe("1970-01-01T00:00:00.000Z");
    const latest = await setClock(LATEST);
    expect(latest.status).toBe(200);
    expect(latest.body.now).toBe(LATEST);
  });

  it("refuses repeated advance_ms once the next step would pass the bound, however small the steps", async () => {
    await setClock(new Date(CLOCK_LATEST_MS - 250 * DAY).toISOString());
    expect((await call("/v1/admin/clock", { body: { advance_ms: 100 * DAY } })).status).toBe(200);
    expect((await call("/v1/admin/clock", { body: { advance_ms: 100 * DAY } })).status).toBe(200);
    const before = await snapshot();
    for (let i = 0; i < 3; i++) {
      const res = await call("/v1/admin/clock", { body: { advance_ms: 100 * DAY } });
      expect(res.status).toBe(422);
      expect(res.body.errors).toEqual([expect.objectContaining({ path: "advance_ms" })]);
    }
    expect(await snapshot()).toEqual(before);
    const read = await call("/v1/admin/clock");
    expect(Date.parse(read.body.now)).toBeLessThan(CLOCK_LATEST_MS);
    expect(read.body.now).toMatch(ISO_INSTANT);
  });

  it("at the latest now, records and deadlines computed from it still carry four-digit years", async () => {
    const runner = await createRunner("end-of-time");
    expect((await setClock(LATEST)).status).toBe(200);
    const created = await call("/v1/admin/operators", { body: { name: "last-operator", role: "viewer" } });
    expect(created.status).toBe(201);
    const submitted = await call("/v1/admin/jobs", { body: utilityJob({ prompt: "late" }) });
    expect(submitted.status).toBe(202);

    let job: { job_id: string; lease_expires_at: string } | undefined;
    for (let i = 0; i < 15 && !job; i++) {
      const res = await call("/v1/runner/lease", { token: runner.token, body: { capacity: 1, wait_ms: 2_000, runtimes: ["offline"] } });
      job = res.body.jobs.find((j: { job_id: string }) => j.job_id === submitted.body.job_id);
    }
    expect(job?.lease_expires_at).toMatch(ISO_INSTANT);
    expect(Date.parse(job!.lease_expires_at)).toBeGreaterThan(CLOCK_LATEST_MS);

    const feed = await call(`/v1/events?subject=${created.body.operator_id}`);
    expect(feed.body.events).toHaveLength(1);
    expect(feed.body.events[0].created_at).toMatch(ISO_INSTANT);
    const jobView = await call(`/v1/admin/jobs/${submitted.body.job_id}`);
    expect(jobView.body.created_at).toMatch(ISO_INSTANT);
    expect(jobView.body.updated_at).toMatch(ISO_INSTANT);
  });
});
