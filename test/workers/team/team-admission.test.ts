import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { getTeamAdmission } from "../../../src/durable-objects/team-admission-rpc";

const admission = () => getTeamAdmission(env, `adm-${crypto.randomUUID()}`);
const limits = (max_active = 2, max_depth = 10, ttl_ms = 60_000) => ({ max_active, max_depth, ttl_ms });

describe("TeamAdmission", () => {
  it("admits up to max_active, then queues in FIFO order and promotes the oldest waiter on release", async () => {
    const adm = admission();
    const now = 1_000;
    expect(await adm.admit({ ticket_id: "a", round_id: "r1", limits: limits(), now })).toEqual({ status: "active" });
    expect(await adm.admit({ ticket_id: "b", round_id: "r1", limits: limits(), now })).toEqual({ status: "active" });
    expect(await adm.admit({ ticket_id: "c", round_id: "r2", limits: limits(), now })).toEqual({ status: "queued", position: 1 });
    expect(await adm.admit({ ticket_id: "d", round_id: "r3", limits: limits(), now })).toEqual({ status: "queued", position: 2 });
    expect(await adm.release({ ticket_id: "a", limits: limits(), now })).toEqual({
      released: true,
      promoted: [{ ticket_id: "c", round_id: "r2" }],
    });
    expect(await adm.release({ ticket_id: "b", limits: limits(), now })).toEqual({
      released: true,
      promoted: [{ ticket_id: "d", round_id: "r3" }],
    });
  });

  it("answers a repeated admit with the ticket's state instead of queueing it twice", async () => {
    const adm = admission();
    await adm.admit({ ticket_id: "a", round_id: "r1", limits: limits(1), now: 1 });
    expect(await adm.admit({ ticket_id: "b", round_id: "r1", limits: limits(1), now: 1 })).toEqual({ status: "queued", position: 1 });
    expect(await adm.admit({ ticket_id: "b", round_id: "r1", limits: limits(1), now: 2 })).toEqual({ status: "queued", position: 1 });
    expect((await adm.status()).queued).toHaveLength(1);
  });

  it("lets a finished round purge exactly its own queued tickets and free its active ones, leaving siblings queued in order", async () => {
    const adm = admission();
    const now = 1;
    await adm.admit({ ticket_id: "r1-a", round_id: "r1", limits: limits(1), now });
    for (const [t, r] of [
      ["r2-a", "r2"],
      ["r1-b", "r1"],
      ["r3-a", "r3"],
      ["r1-c", "r1"],
      ["r2-b", "r2"],
    ])
      await adm.admit({ ticket_id: t!, round_id: r!, limits: limits(1), now });
    const out = await adm.finishRound({ round_id: "r1", limits: limits(1), now });
    expect(out.purged.sort()).toEqual(["r1-b", "r1-c"]);
    expect(out.released).toEqual(["r1-a"]);
    expect(out.promoted).toEqual([{ ticket_id: "r2-a", round_id: "r2" }]);
    expect(await adm.status()).toEqual({
      active: [{ ticket_id: "r2-a", round_id: "r2" }],
      queued: [
        { ticket_id: "r3-a", round_id: "r3", position: 1 },
        { ticket_id: "r2-b", round_id: "r2", position: 2 },
      ],
    });
  });

  it("refuses a spawn when the queue is full, and leaves the queue as it was", async () => {
    const adm = admission();
    await adm.admit({ ticket_id: "a", round_id: "r1", limits: limits(1, 1), now: 1 });
    await adm.admit({ ticket_id: "b", round_id: "r1", limits: limits(1, 1), now: 1 });
    expect(await adm.admit({ ticket_id: "c", round_id: "r2", limits: limits(1, 1), now: 1 })).toEqual({
      status: "refused",
      reason: "queue_full",
    });
    expect((await adm.status()).queued.map((q) => q.ticket_id)).toEqual(["b"]);
  });

  it("refuses an invalid request without queueing it", async () => {
    const adm = admission();
    await adm.admit({ ticket_id: "a", round_id: "r1", limits: limits(1), now: 1 });
    expect(await adm.admit({ ticket_id: "bad id with spaces", round_id: "r1", limits: limits(1), now: 1 })).toEqual({
      status: "refused",
      reason: "invalid_request",
    });
    expect(await adm.admit({ ticket_id: "b", round_id: "r1", limits: { max_active: 0, max_depth: 1, ttl_ms: 1 }, now: 1 })).toEqual({
      status: "refused",
      reason: "invalid_request",
    });
    expect((await adm.status()).queued).toEqual([]);
  });

  it("expires a waiter whose TTL ran out instead of promoting it, and hands it over once", async () => {
    const adm = admission();
    await adm.admit({ ticket_id: "a", round_id: "r1", limits: limits(1, 10, 100), now: 0 });
    await adm.admit({ ticket_id: "old", round_id: "r2", limits: limits(1, 10, 100), now: 0 });
    await adm.admit({ ticket_id: "young", round_id: "r3", limits: limits(1, 10, 100), now: 150 });
    expect(await adm.release({ ticket_id: "a", limits: limits(1, 10, 100), now: 200 })).toMatchObject({
      promoted: [{ ticket_id: "young" }],
    });
    expect(await adm.admit({ ticket_id: "old", round_id: "r2", limits: limits(1, 10, 100), now: 200 })).toEqual({
      status: "refused",
      reason: "expired",
    });
    expect((await adm.collectExpired({ now: 200, limits: limits(1, 10, 100) })).expired).toEqual([{ ticket_id: "old", round_id: "r2" }]);
    expect((await adm.collectExpired({ now: 200, limits: limits(1, 10, 100) })).expired).toEqual([]);
  });

  it("admits at most max_active of 40 concurrent spawns and queues the rest in arrival order", async () => {
    const adm = admission();
    const out = await Promise.all(
      Array.from({ length: 40 }, (_, i) => adm.admit({ ticket_id: `t${i}`, round_id: `r${i % 4}`, limits: limits(32, 100), now: 1 })),
    );
    expect(out.filter((o) => o.status === "active")).toHaveLength(32);
    const positions = out.flatMap((o) => (o.status === "queued" ? [o.position] : [])).sort((a, b) => a - b);
    expect(positions).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
  });
});
