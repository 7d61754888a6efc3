import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { getRateWindow } from "../../../src/durable-objects/rate-window-rpc";

const key = () => `test:${crypto.randomUUID()}`;
const T0 = Date.parse("2026-12-01T00:00:00Z");

describe("RateWindow", () => {
  it("admits up to the limit inside the window and refuses the next with a retry-after", async () => {
    const w = getRateWindow(env, key());
    for (let i = 0; i < 3; i++)
      expect(await w.take({ limit: 3, windowMs: 60_000, now: T0 + i * 1000, token: `t${i}` })).toMatchObject({ ok: true, count: i + 1 });
    const refused = await w.take({ limit: 3, windowMs: 60_000, now: T0 + 10_000, token: "t3" });
    expect(refused).toEqual({ ok: false, count: 3, limit: 3, retry_after_ms: 50_000 });
    // A refused take records nothing.
    expect(await w.peek({ windowMs: 60_000, now: T0 + 10_000 })).toEqual({ count: 3 });
  });

  it("slides: a hit leaves the window exactly windowMs after it was taken", async () => {
    const w = getRateWindow(env, key());
    await w.take({ limit: 2, windowMs: 60_000, now: T0, token: "a" });
    await w.take({ limit: 2, windowMs: 60_000, now: T0 + 30_000, token: "b" });
    expect((await w.take({ limit: 2, windowMs: 60_000, now: T0 + 59_999, token: "c" })).ok).toBe(false);
    expect((await w.take({ limit: 2, windowMs: 60_000, now: T0 + 60_000, token: "c" })).ok).toBe(true);
    expect((await w.take({ limit: 2, windowMs: 60_000, now: T0 + 60_001, token: "d" })).ok).toBe(false);
  });

  it("counts a repeated token once and gives a released hit back", async () => {
    const w = getRateWindow(env, key());
    await w.take({ limit: 2, windowMs: 60_000, now: T0, token: "same" });
    expect(await w.take({ limit: 2, windowMs: 60_000, now: T0, token: "same" })).toMatchObject({ ok: true, count: 1 });
    await w.take({ limit: 2, windowMs: 60_000, now: T0, token: "other" });
    expect((await w.take({ limit: 2, windowMs: 60_000, now: T0, token: "third" })).ok).toBe(false);
    // Already admitted, so asking again with the same token is still yes, even with the window full.
    expect(await w.take({ limit: 2, windowMs: 60_000, now: T0, token: "same" })).toMatchObject({ ok: true, count: 2 });
    expect(await w.release({ token: "other" })).toEqual({ released: true });
    expect((await w.take({ limit: 2, windowMs: 60_000, now: T0, token: "third" })).ok).toBe(true);
  });

  it("keeps windows apart per key", async () => {
    const a = getRateWindow(env, key());
    const b = getRateWindow(env, key());
    await a.take({ limit: 1, windowMs: 60_000, now: T0, token: "x" });
    expect((await a.take({ limit: 1, windowMs: 60_000, now: T0, token: "y" })).ok).toBe(false);
    expect((await b.take({ limit: 1, windowMs: 60_000, now: T0, token: "y" })).ok).toBe(true);
  });

  it("admits exactly the limit when 30 takes race for 20 slots", async () => {
    const w = getRateWindow(env, key());
    const results = await Promise.all(
      Array.from({ length: 30 }, (_, i) => w.take({ limit: 20, windowMs: 60_000, now: T0, token: `r${i}` })),
    );
    expect(results.filter((r) => r.ok)).toHaveLength(20);
    expect(await w.peek({ windowMs: 60_000, now: T0 })).toEqual({ count: 20 });
  });

  it("its alarm empties storage once every hit is stale", async () => {
    const w = getRateWindow(env, key());
    const now = Date.now();
    await w.take({ limit: 5, windowMs: 1_000, now: now - 5_000, token: "old" });
    expect(await runDurableObjectAlarm(w)).toBe(true);
    const rows = await runInDurableObject(w, (_instance, state) => state.storage.sql.exec("SELECT COUNT(*) AS n FROM hits").one().n);
    expect(rows).toBe(0);
  });
});
