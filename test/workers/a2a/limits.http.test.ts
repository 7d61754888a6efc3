import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { getDb } from "../../../src/db/client";
import { A2A_LIMITS } from "../../../src/a2a/nodes";
import { notifyNodesStatements } from "../../../src/nodes/events";
import { call } from "../../factories";
import { a2a, evolver, evolverNodeId, openSwarmTask, secretTheClientKeeps, senderId, sourceIp } from "../../factories/a2a";
import { advance } from "../../factories/council-http";
import { patchNode } from "../../factories/nodes";

/** The heartbeat's `suspended` and `rate_limited`, and registration per source (this file moves the test clock). */

async function node(id = evolverNodeId()) {
  const res = await a2a("/hello", evolver.hello(id), null, { "cf-connecting-ip": sourceIp() });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return { nodeId: id, secret: secretTheClientKeeps(res.body)! };
}

const beat = (nodeId: string, secret: string) => a2a("/heartbeat", evolver.heartbeat(nodeId), secret);
const nodeCount = async () => (await env.DB.prepare("SELECT COUNT(*) AS n FROM nodes").first<{ n: number }>())!.n;

describe("a suspended node", () => {
  it("is told `suspended` on its heartbeat, gets no events or work and cannot claim, until an admin lifts it", async () => {
    // The id the published client generates (12 hex): the admin routes take it like any node id.
    const { nodeId, secret } = await node(evolverNodeId());
    await patchNode(nodeId, { reputation: 40 });
    const taskId = await openSwarmTask();
    const db = getDb(env.DB);
    await db.batch(notifyNodesStatements(db, [nodeId], { type: "council_invite", payload: { n: 1 } }, new Date()) as [any]);
    const lastBeat = async () =>
      (await env.DB.prepare("SELECT last_heartbeat_at AS t FROM nodes WHERE id = ?").bind(nodeId).first<{ t: string | null }>())!.t;

    const suspended = await patchNode(nodeId, { suspended: true });
    expect(suspended.suspended_at).toEqual(expect.any(String));
    const before = await lastBeat();
    const hb = await beat(nodeId, secret);
    expect(hb.status).toBe(200);
    expect(hb.body).toMatchObject({ status: "suspended", pending_events: [], has_pending_events: false, available_work: [] });
    expect(await lastBeat()).toBe(before);
    const claim = await a2a("/task/claim", evolver.claim(taskId, nodeId), secret);
    expect([claim.status, claim.body.reason]).toEqual([403, "node_suspended"]);
    expect((await a2a("/events/poll", evolver.poll(nodeId), secret)).status).toBe(403);
    expect((await call(`/v1/events?type=node.updated&subject=${nodeId}`)).body.events.at(-1).payload.changes).toEqual({ suspended: true });

    await patchNode(nodeId, { suspended: false });
    const back = await beat(nodeId, secret);
    expect(back.body).toMatchObject({ status: "ok", pending_events: [expect.objectContaining({ type: "council_invite" })] });
    expect(back.body.available_work.map((t: any) => t.task_id)).toContain(taskId);
  });
});

describe("heartbeat rate", () => {
  it("answers `rate_limited` past the window's limit, recording nothing, and `ok` again once the window moves on", async () => {
    const { nodeId, secret } = await node();
    for (let i = 0; i < A2A_LIMITS.heartbeats.limit; i++) expect((await beat(nodeId, secret)).body.status).toBe("ok");
    const lastBeat = () => env.DB.prepare("SELECT last_heartbeat_at AS t FROM nodes WHERE id = ?").bind(nodeId).first<{ t: string }>();
    const recorded = await lastBeat();
    await new Promise((r) => setTimeout(r, 5)); // a heartbeat recorded now would carry a later time
    const over = await beat(nodeId, secret);
    expect(await lastBeat()).toEqual(recorded);
    expect(over.status).toBe(200);
    expect(over.body).toMatchObject({ status: "rate_limited", pending_events: [], retry_after_ms: expect.any(Number) });
    expect(over.body.next_heartbeat_ms).toBeGreaterThanOrEqual(over.body.retry_after_ms);
    await advance(A2A_LIMITS.heartbeats.windowMs);
    expect((await beat(nodeId, secret)).body.status).toBe("ok");
  });
});

describe("registration rate per source", () => {
  it("refuses new nodes past the limit from one address with 429 and Retry-After, creating nothing, while another address registers", async () => {
    const ip = sourceIp();
    for (let i = 0; i < A2A_LIMITS.registrations.limit; i++) {
      expect((await a2a("/hello", evolver.hello(evolverNodeId()), null, { "cf-connecting-ip": ip })).status).toBe(201);
    }
    const before = await nodeCount();
    const flood = await a2a("/hello", evolver.hello(evolverNodeId()), null, { "cf-connecting-ip": ip });
    expect([flood.status, flood.body.code, flood.headers.get("content-type")]).toEqual([429, "rate_limited", "application/problem+json"]);
    expect(Number(flood.headers.get("retry-after"))).toBeGreaterThan(0);
    expect(await nodeCount()).toBe(before);
    // a node that exists says hello with its secret as often as it likes
    const known = await node();
    expect((await a2a("/hello", evolver.hello(known.nodeId), known.secret, { "cf-connecting-ip": ip })).status).toBe(200);
    expect((await a2a("/hello", evolver.hello(evolverNodeId()), null, { "cf-connecting-ip": sourceIp() })).status).toBe(201);
  });

  it("admits exactly the limit of racing registrations from one address", async () => {
    const ip = sourceIp();
    const before = await nodeCount();
    const answers = await Promise.all(
      Array.from({ length: A2A_LIMITS.registrations.limit + 5 }, () =>
        a2a("/hello", evolver.hello(evolverNodeId()), null, { "cf-connecting-ip": ip }),
      ),
    );
    expect(answers.filter((r) => r.status === 201)).toHaveLength(A2A_LIMITS.registrations.limit);
    expect(answers.filter((r) => r.status === 429)).toHaveLength(5);
    expect(await nodeCount()).toBe(before + A2A_LIMITS.registrations.limit);
  });
});
