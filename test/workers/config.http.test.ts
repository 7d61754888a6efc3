import { describe, expect, it } from "vitest";
import { call } from "../factories";

describe("config sections", () => {
  it("returns the runner section's defaults when nothing was stored", async () => {
    const res = await call("/v1/config/runner");
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      lease_visibility_ms: 60_000,
      max_attempts: 3,
      max_wait_ms: 25_000,
      ack_window_ms: 10_000,
      reconcile_grace_ms: 120_000,
      max_queue_ms: 86_400_000,
      keep_failed_work_hours: 24,
      retain_finished_hours: 24,
    });
  });

  it("stores a valid section, fills defaults, and records config.updated", async () => {
    const put = await call("/v1/config/runner", { method: "PUT", body: { max_attempts: 5 } });
    expect(put.status).toBe(200);
    expect(put.body).toEqual({
      lease_visibility_ms: 60_000,
      max_attempts: 5,
      max_wait_ms: 25_000,
      ack_window_ms: 10_000,
      reconcile_grace_ms: 120_000,
      max_queue_ms: 86_400_000,
      keep_failed_work_hours: 24,
      retain_finished_hours: 24,
    });
    expect((await call("/v1/config/runner")).body.max_attempts).toBe(5);
    const feed = await call("/v1/events?type=config.&subject=config:runner");
    expect(feed.body.events.at(-1)).toMatchObject({ type: "config.updated", payload: { section: "runner", value: { max_attempts: 5 } } });
  });

  it("rejects an invalid section with 422 errors[] and keeps the previous value and feed untouched", async () => {
    await call("/v1/config/runner", { method: "PUT", body: { max_attempts: 4 } });
    const feedBefore = await call("/v1/events?type=config.");
    const res = await call("/v1/config/runner", { method: "PUT", body: { max_attempts: 0, lease_visibility_ms: "soon", surprise: true } });
    expect(res.status).toBe(422);
    expect(res.body.code).toBe("validation_failed");
    const paths = res.body.errors.map((e: { path: string }) => e.path);
    expect(paths).toEqual(expect.arrayContaining(["max_attempts", "lease_visibility_ms"]));
    expect(res.body.errors.some((e: { message: string }) => e.message.includes("surprise"))).toBe(true);
    expect((await call("/v1/config/runner")).body.max_attempts).toBe(4);
    expect((await call("/v1/events?type=config.")).body.events).toHaveLength(feedBefore.body.events.length);
  });

  it("answers an unknown section with 404 and lists the sections that exist", async () => {
    const res = await call("/v1/config/nonsense");
    expect(res.status).toBe(404);
    expect(res.body).toMatchObject({ code: "not_found", sections: expect.arrayContaining(["runner"]) });
  });
});
