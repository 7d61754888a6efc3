import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { getDb } from "../../../src/db/client";
import { nodePresence } from "../../../src/nodes/presence-store";
import { pollEvents } from "../../../src/a2a/nodes";
import { sha256Hex } from "../../../src/lib/crypto";
import { notifyNodesStatements, takePendingEvents } from "../../../src/nodes/events";
import { call } from "../../factories";
import { a2a, evolver, evolverNodeId, openSwarmTask, secretTheClientKeeps, sourceIp } from "../../factories/a2a";
import { insertProject } from "../../factories/projects";
import { readStream, eventFrames } from "../../factories/sse";

/**
 * The published EvoMap node client (`@evomap/evolver` 1.94.0) against the real Worker: each test
 * replays its requests shape for shape (test/factories/a2a.ts `evolver`) and checks the answer the
 * way the client reads it.
 */

/** A node as the client makes one: its own 12-hex id, its first hello, the secret it keeps. */
async function evolverNode(model = "claude-sonnet-4") {
  const nodeId = evolverNodeId();
  const res = await a2a("/hello", evolver.hello(nodeId, model), null, { "cf-connecting-ip": sourceIp() });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  const secret = secretTheClientKeeps(res.body);
  expect(secret).not.toBeNull();
  return { nodeId, secret: secret!, hello: res.body };
}

const beat = (nodeId: string, secret: string | null) => a2a("/heartbeat", evolver.heartbeat(nodeId), secret);

async function notify(
  nodeId: string,
  type = "council_invite",
  payload: Record<string, unknown> = { deliberation_id: "delib_0123456789abcdef" },
) {
  const db = getDb(env.DB);
  await db.batch(notifyNodesStatements(db, [nodeId], { type, payload }, new Date()) as [any]);
}

/** Stands in for an admin's standing (PATCH /v1/admin/nodes/:id takes only 16-hex ids today). */
async function giveReputation(nodeId: string, reputation: number) {
  await env.DB.prepare("UPDATE nodes SET reputation = ? WHERE id = ?").bind(reputation, nodeId).run();
}

describe("1. the secret: 64 hex, kept by the client, stored hashed", () => {
  it("answers the client's first hello with a 64-hex node_secret it keeps, and its heartbeats then authenticate", async () => {
    const { nodeId, secret, hello } = await evolverNode();
    expect(hello.node_secret).toBe(secret);
    expect(hello.payload).toMatchObject({ status: "acknowledged", node_id: nodeId, node_secret: secret });
    const res = await beat(nodeId, secret);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ status: "ok", node_id: nodeId });
    expect((await call(`/v1/events?type=node.registered`)).body.events.filter((e: any) => e.subject === nodeId)).toHaveLength(1);
  });

  it("stores only the secret's SHA-256 and never writes the secret into the activity feed", async () => {
    const { nodeId, secret } = await evolverNode();
    const row = await env.DB.prepare("SELECT c.secret_hash AS h FROM nodes n JOIN credentials c ON c.id = n.credential_id WHERE n.id = ?")
      .bind(nodeId)
      .first<{ h: string }>();
    expect(row!.h).toBe(await sha256Hex(secret));
    const dump =
      JSON.stringify(await env.DB.prepare("SELECT * FROM credentials").all()) + JSON.stringify((await call("/v1/events?limit=500")).body);
    expect(dump).not.toContain(secret);
  });
});

describe("2. the node id: the client's own, one node however often it says hello", () => {
  it("keeps the client's 12-hex id and never assigns another", async () => {
    const { nodeId, hello } = await evolverNode();
    expect(nodeId).toMatch(/^node_[a-f0-9]{12}$/);
    expect(hello).toMatchObject({ node_id: nodeId, your_node_id: nodeId, node_id_assigned_by_hub: false });
    const row = await env.DB.prepare("SELECT id FROM nodes WHERE id = ?").bind(nodeId).first<{ id: string }>();
    expect(row?.id).toBe(nodeId);
  });

  it("answers a re-hello with the node's secret as Bearer with the same node and creates nothing", async () => {
    const { nodeId, secret } = await evolverNode();
    const again = await a2a("/hello", evolver.hello(nodeId), secret);
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ status: "acknowledged", node_id: nodeId, node_secret_status: "active" });
    expect(secretTheClientKeeps(again.body)).toBeNull(); // no new secret: the one it holds stays good
    expect((await beat(nodeId, secret)).body.status).toBe("ok");
    const registered = (await call(`/v1/events?type=node.registered&subject=${nodeId}`)).body.events;
    expect(registered).toHaveLength(1);
  });

  it("rotates the secret on the client's re-authentication hello, retiring the old one", async () => {
    const { nodeId, secret } = await evolverNode();
    const rotated = await a2a("/hello", evolver.proxyHello(nodeId, { rotate: true }), secret);
    expect(rotated.status).toBe(200);
    const fresh = secretTheClientKeeps(rotated.body);
    expect(fresh).not.toBeNull();
    expect(fresh).not.toBe(secret);
    expect((await beat(nodeId, fresh)).body.status).toBe("ok");
    const old = await beat(nodeId, secret);
    expect([old.status, old.body.reason]).toEqual([401, "node_secret_invalid"]);
    expect((await call(`/v1/events?type=node.secret_rotated&subject=${nodeId}`)).body.events).toHaveLength(1);
  });

  it("refuses a hello for an existing id without its secret, rotate_secret or not, creating nothing", async () => {
    const { nodeId, secret } = await evolverNode();
    const nodesBefore = await env.DB.prepare("SELECT COUNT(*) AS n FROM nodes").first<{ n: number }>();
    for (const body of [evolver.hello(nodeId), evolver.proxyHello(nodeId, { rotate: true })]) {
      for (const token of [null, "f".repeat(64)]) {
        const res = await a2a("/hello", body, token);
        expect(res.status).toBe(401);
        expect(res.body.reason).toBe(token ? "node_secret_invalid" : "node_id_already_claimed");
      }
    }
    expect(await env.DB.prepare("SELECT COUNT(*) AS n FROM nodes").first<{ n: number }>()).toEqual(nodesBefore);
    expect((await beat(nodeId, secret)).body.status).toBe("ok"); // the owner's secret was not touched
  });

  it("makes one node of ten racing first hellos for one id: one secret, the rest refused", async () => {
    const nodeId = evolverNodeId();
    const ip = sourceIp();
    const answers = await Promise.all(
      Array.from({ length: 10 }, () => a2a("/hello", evolver.hello(nodeId), null, { "cf-connecting-ip": ip })),
    );
    const won = answers.filter((r) => r.status === 201);
    expect(won).toHaveLength(1);
    for (const r of answers.filter((r) => r.status !== 201)) expect([r.status, r.body.reason]).toEqual([401, "node_id_already_claimed"]);
    const nodes = await env.DB.prepare("SELECT COUNT(*) AS n FROM nodes WHERE id = ?").bind(nodeId).first<{ n: number }>();
    const creds = await env.DB.prepare("SELECT COUNT(*) AS n FROM credentials WHERE subject = ?").bind(nodeId).first<{ n: number }>();
    expect([nodes!.n, creds!.n]).toEqual([1, 1]);
    expect((await beat(nodeId, secretTheClientKeeps(won[0]!.body))).body.status).toBe("ok");
  });

  it("lands exactly one of six racing rotations: one new secret works, every other one and the old are refused", async () => {
    const { nodeId, secret } = await evolverNode();
    const answers = await Promise.all(Array.from({ length: 6 }, () => a2a("/hello", evolver.proxyHello(nodeId, { rotate: true }), secret)));
    const won = answers.filter((r) => r.status === 200);
    expect(won).toHaveLength(1);
    for (const r of answers.filter((r) => r.status !== 200)) expect([401, 409]).toContain(r.status);
    const live = await env.DB.prepare("SELECT COUNT(*) AS n FROM credentials WHERE subject = ? AND revoked_at IS NULL")
      .bind(nodeId)
      .first<{ n: number }>();
    expect(live!.n).toBe(1);
    expect((await beat(nodeId, secretTheClientKeeps(won[0]!.body))).body.status).toBe("ok");
    expect((await beat(nodeId, secret)).status).toBe(401);
  });
});

describe("3. events: held polls and a stream, each event delivered once", () => {
  it("counts what a poll without ack_through returned as delivered: the next heartbeat no longer shows it", async () => {
    const { nodeId, secret } = await evolverNode();
    await notify(nodeId);
    const hb = await beat(nodeId, secret);
    expect(hb.body).toMatchObject({ has_pending_events: true, pending_events: [expect.objectContaining({ type: "council_invite" })] });
    const poll = await a2a("/events/poll", evolver.poll(nodeId), secret);
    expect(poll.status).toBe(200);
    expect(poll.body.events.map((e: any) => e.type)).toEqual(["council_invite"]);
    expect(poll.body.events[0].payload).toEqual({ deliberation_id: "delib_0123456789abcdef" });
    const after = await beat(nodeId, secret);
    expect(after.body).toMatchObject({ has_pending_events: false, pending_events: [] });
  });

  it("holds a poll with an empty payload until an event arrives, then answers with it", async () => {
    const { nodeId, secret } = await evolverNode();
    const polled = a2a("/events/poll", evolver.poll(nodeId), secret);
    // Nothing is pending when the poll starts; the event comes while it is held.
    await new Promise((r) => setTimeout(r, 1_200));
    await notify(nodeId, "council_vote");
    const res = await polled;
    expect(res.status).toBe(200);
    expect(res.body.events.map((e: any) => e.type)).toEqual(["council_vote"]);
  });

  it("holds a poll without timeout_ms for 25 s of its own waiting before answering empty", async () => {
    const { nodeId } = await evolverNode();
    let clock = 0;
    const slept: number[] = [];
    const answer = await pollEvents(getDb(env.DB), nodePresence(env), nodeId, {}, new Date(), {
      nowMs: () => clock,
      sleep: async (ms) => {
        slept.push(ms);
        clock += ms;
      },
    });
    expect(slept.reduce((a, b) => a + b, 0)).toBe(25_000);
    expect(answer).toMatchObject({ events: [], has_pending_events: false });
  });

  it("hands each event to one of two racing takers, never to both", async () => {
    const { nodeId } = await evolverNode();
    for (let i = 0; i < 3; i++) await notify(nodeId, "council_invite", { n: i });
    const db = getDb(env.DB);
    const [a, b] = await Promise.all([takePendingEvents(db, nodeId), takePendingEvents(db, nodeId)]);
    const ids = [...a.pending_events, ...b.pending_events].map((e) => e.id);
    expect(ids).toHaveLength(3);
    expect(new Set(ids).size).toBe(3);
  });

  it("streams pending events over the client's SSE request and counts them delivered", async () => {
    const { nodeId, secret } = await evolverNode();
    await notify(nodeId, "council_invite");
    const res = await readStream(`/a2a${evolver.streamPath(nodeId)}`, (f) => eventFrames(f).length >= 1, {
      token: secret,
      headers: { accept: "text/event-stream" },
    });
    expect([res.status, res.contentType]).toEqual([200, expect.stringContaining("text/event-stream")]);
    const [frame] = eventFrames(res.frames);
    expect(frame!.event).toBe("council_invite");
    expect(JSON.parse(frame!.data!)).toMatchObject({
      id: frame!.id,
      type: "council_invite",
      payload: { deliberation_id: expect.any(String) },
    });
    expect((await beat(nodeId, secret)).body.pending_events).toEqual([]);
  });

  it("refuses the stream to a request without the node's secret (the client retries it with backoff)", async () => {
    const { nodeId } = await evolverNode();
    const res = await readStream(`/a2a${evolver.streamPath(nodeId)}`, () => true, { token: null });
    expect(res.status).toBe(401);
  });
});

describe("4. the envelope: keys the client adds are ignored", () => {
  it("registers the proxy's hello, which carries env_fingerprint beside the envelope", async () => {
    const nodeId = evolverNodeId();
    const res = await a2a("/hello", evolver.proxyHello(nodeId), null, { "cf-connecting-ip": sourceIp() });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(secretTheClientKeeps(res.body)).not.toBeNull();
  });

  it("takes the client's fetch with payload keys crewplane does not use", async () => {
    const { nodeId, secret } = await evolverNode();
    const fetch = evolver.fetchTasks(nodeId);
    const res = await a2a(
      "/fetch",
      { ...fetch, payload: { ...fetch.payload, questions: [{ question: "Why?", amount: 5 }] }, signature: "x" },
      secret,
    );
    expect(res.status).toBe(200);
    expect(res.body.tasks).toEqual(expect.any(Array));
  });
});

describe("5. the model tier from the environment fingerprint", () => {
  it("reads the tier from payload.env_fingerprint.model when payload.model is absent", async () => {
    const { hello } = await evolverNode("claude-sonnet-4");
    expect(hello).toMatchObject({ model_tier: 3, model_tier_label: "advanced" });
    const frontier = await evolverNode("gpt-5");
    expect(frontier.hello.model_tier).toBe(4);
  });

  it("reads it from the proxy's env_fingerprint beside the envelope", async () => {
    const res = await a2a("/hello", evolver.proxyHello(evolverNodeId(), { model: "claude-opus-4" }), null, {
      "cf-connecting-ip": sourceIp(),
    });
    expect(res.body).toMatchObject({ model_tier: 4, model_tier_label: "frontier" });
  });
});

describe("6. tasks: discovered, claimed, completed with an asset, listed as the node's own", () => {
  it("lists open tasks in the client's task shape on fetch and in the heartbeat's available_work", async () => {
    const taskId = await openSwarmTask({ signals: ["digest", "council"] });
    const dormant = await insertProject("approved");
    const notYet = await openSwarmTask({ projectId: dormant });
    const { nodeId, secret } = await evolverNode();
    await giveReputation(nodeId, 30);

    const fetched = await a2a("/fetch", evolver.fetchTasks(nodeId), secret);
    const task = fetched.body.tasks.find((t: any) => t.task_id === taskId);
    // the client's task schema: a string task_id, a known status, signals as one comma-separated string
    expect(task).toMatchObject({ task_id: taskId, status: "open", signals: "digest,council", title: expect.any(String) });
    expect(fetched.body.tasks.map((t: any) => t.task_id)).not.toContain(notYet);
    const anonymous = await a2a("/fetch", evolver.fetchTasks(nodeId), null);
    expect(anonymous.body.tasks.map((t: any) => t.task_id)).toContain(taskId);

    const hb = await beat(nodeId, secret);
    expect(hb.body.available_work.map((t: any) => t.task_id)).toContain(taskId);
    expect(hb.body.available_work.map((t: any) => t.task_id)).not.toContain(notYet);
    // below the claim floor (new nodes start at 10) a node may claim only project tasks (verifiable work)
    const newcomer = await evolverNode();
    const newcomerWork = (await beat(newcomer.nodeId, newcomer.secret)).body.available_work;
    expect(newcomerWork.map((t: any) => t.task_id)).not.toContain(taskId);
    for (const t of newcomerWork) expect(t.kind).toBe("project");
  });

  it("claims with a commitment deadline, lists the task as the node's own, and completes it with an asset id", async () => {
    const taskId = await openSwarmTask();
    const { nodeId, secret } = await evolverNode();
    await giveReputation(nodeId, 30);
    const claim = await a2a("/task/claim", evolver.claim(taskId, nodeId), secret);
    expect(claim.status, JSON.stringify(claim.body)).toBe(200);
    expect(claim.body).toMatchObject({ status: "claimed", claimed_by: nodeId });
    expect((await a2a("/task/claim", evolver.claim(taskId, nodeId), secret)).status).toBe(200); // the client re-claims each cycle

    const mine = await a2a(evolver.myTasksPath(nodeId), undefined, secret);
    expect(mine.status).toBe(200);
    expect(mine.body.tasks).toEqual([expect.objectContaining({ task_id: taskId, status: "claimed", claimed_by: nodeId })]);

    const asset = `sha256:${"ab".repeat(32)}`;
    const done = await a2a("/task/complete", evolver.complete(taskId, asset, nodeId), secret);
    expect(done.status, JSON.stringify(done.body)).toBe(200);
    expect(done.body).toMatchObject({ status: "completed", completed_by: nodeId });
    const v1 = (await call(`/v1/swarm/tasks/${taskId}`, { token: null })).body;
    expect(v1).toMatchObject({ status: "completed", completed_by: nodeId, summary: expect.stringContaining(asset) });
  });

  it("serves the worker pool: a claim is an assignment, completed with the result asset", async () => {
    const taskId = await openSwarmTask();
    const { nodeId, secret } = await evolverNode();
    await giveReputation(nodeId, 30);
    const assignment = await a2a("/work/claim", evolver.workClaim(taskId, nodeId), secret);
    expect(assignment.status).toBe(200);
    const assignmentId = assignment.body.id || assignment.body.assignment_id; // as the client reads it
    expect(assignmentId).toBe(taskId);
    const asset = `sha256:${"cd".repeat(32)}`;
    const done = await a2a("/work/complete", evolver.workComplete(assignmentId, nodeId, asset), secret);
    expect(done.status, JSON.stringify(done.body)).toBe(200);
    expect((await call(`/v1/swarm/tasks/${taskId}`, { token: null })).body).toMatchObject({ status: "completed", completed_by: nodeId });
  });

  it("refuses a claim in another node's name", async () => {
    const taskId = await openSwarmTask();
    const a = await evolverNode();
    const b = await evolverNode();
    const res = await a2a("/task/claim", evolver.claim(taskId, b.nodeId), a.secret);
    expect(res.status).toBe(401);
    expect((await call(`/v1/swarm/tasks/${taskId}`, { token: null })).body.status).toBe("open");
  });
});

describe("what the facade does not serve", () => {
  it("answers EvoMap's asset, memory and signal calls with 404, which the client reads as nothing there", async () => {
    const { nodeId, secret } = await evolverNode();
    const search = await a2a(`/assets/semantic-search?q=stable_success_plateau&type=Gene&limit=10`, undefined, secret);
    const memory = await a2a("/memory/event", { sender_id: nodeId, event: { type: "MemoryGraphEvent", kind: "attempt" } }, secret);
    const signal = await a2a("/signal/analyze", { sender_id: nodeId, corpus_summary: "x", signal_types: [] }, secret);
    for (const res of [search, memory, signal]) expect([res.status, res.body.code]).toEqual([404, "not_found"]);
  });
});
