import { env, exports } from "cloudflare:workers";
import { expect } from "vitest";
import type { TestNode } from "./nodes";
import { expectConforms } from "./contract";

let seq = 0;

/** A gep-a2a envelope as an EvoMap client builds it. */
export function envelope(messageType: string, senderId: string, payload: Record<string, unknown>) {
  return {
    protocol: "gep-a2a",
    protocol_version: "1.0.0",
    message_type: messageType,
    message_id: `msg_${Date.now()}_${(seq++).toString(16).padStart(8, "0")}`,
    sender_id: senderId,
    timestamp: new Date().toISOString(),
    payload,
  };
}

const hex = (bytes: number) => Array.from(crypto.getRandomValues(new Uint8Array(bytes)), (b) => b.toString(16).padStart(2, "0")).join("");

/**
 * A node id a client chose: `node_` + 16 hex by default (also the form `/v1` mints, which the admin
 * routes take); `evolverNodeId()` is the 12 hex the published EvoMap client generates.
 */
export function senderId(): string {
  return `node_${hex(8)}`;
}
export function evolverNodeId(): string {
  return `node_${hex(6)}`;
}

/** A source address of its own (`cf-connecting-ip`), so registrations do not share one rate window. */
export function sourceIp(): string {
  const [a, b, c] = crypto.getRandomValues(new Uint8Array(3));
  return `10.${a}.${b}.${c}`;
}

/** One facade request through the real Worker; `headers` go as given (e.g. `cf-connecting-ip`). */
export async function a2a(path: string, body?: unknown, token?: string | null, headers: Record<string, string> = {}) {
  const all: Record<string, string> = { ...headers };
  if (token) all.authorization = `Bearer ${token}`;
  if (body !== undefined) all["content-type"] = "application/json";
  const res = await exports.default.fetch(`http://crewplane.test/a2a${path}`, {
    method: body === undefined ? "GET" : "POST",
    headers: all,
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  await expectConforms(body === undefined ? "GET" : "POST", `http://crewplane.test/a2a${path}`, { status: res.status, headers: res.headers, text });
  return { status: res.status, headers: res.headers, body: (text ? JSON.parse(text) : null) as any };
}

/** Registers a node over `/a2a/hello` (the model string sets its tier), from an address of its own. */
export async function helloNode(model = "claude-sonnet-4", sender = senderId()): Promise<TestNode & { sender: string; v1_token: string }> {
  const res = await a2a("/hello", envelope("hello", sender, { model }), null, { "cf-connecting-ip": sourceIp() });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return { node_id: res.body.node_id, token: res.body.node_secret, v1_token: res.body.v1_token, sender };
}

/** `/a2a/heartbeat` until nothing is pending, acknowledging as it goes: every event, once each. */
export async function a2aDrain(node: TestNode) {
  const all: { id: string; type: string; payload: any }[] = [];
  let ack: string | undefined;
  for (;;) {
    const res = await a2a("/heartbeat", { sender_id: node.node_id, ...(ack ? { ack_through: ack } : {}) }, node.token);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const fresh = (res.body.pending_events as typeof all).filter((e) => !all.some((a) => a.id === e.id));
    all.push(...fresh);
    if (res.body.pending_events.length === 0) return all;
    ack = res.body.pending_events[res.body.pending_events.length - 1].id;
  }
}

/**
 * The published EvoMap client's requests (`@evomap/evolver` 1.94.0), shape for shape as it sends them
 * on the wire (recorded against a stand-in hub): the conformance suite replays these.
 */
export const evolver = {
  fingerprint(model = "claude-sonnet-4") {
    return {
      device_id: "50e434fba82eebe749a6b2f3d126eb19",
      node_version: "v22.23.3",
      platform: "linux",
      arch: "x64",
      os_release: "6.18.44",
      hostname: "5bce98f73f3e",
      evolver_version: "1.94.0",
      client: "@evomap/evolver",
      client_version: "1.94.0",
      model,
      cwd: "d2baf894d577",
      container: true,
      captured_at: new Date().toISOString(),
    };
  },
  envelope(messageType: string, nodeId: string, payload: Record<string, unknown>, messageId = `msg_${Date.now()}_${hex(4)}`) {
    return {
      protocol: "gep-a2a",
      protocol_version: "1.0.0",
      message_type: messageType,
      message_id: messageId,
      sender_id: nodeId,
      timestamp: new Date().toISOString(),
      payload,
    };
  },
  /** Its first hello: no Authorization, the model only inside `payload.env_fingerprint` (from EVOLVER_MODEL_NAME). */
  hello(nodeId: string, model = "claude-sonnet-4") {
    return evolver.envelope("hello", nodeId, {
      capabilities: {},
      gene_count: null,
      capsule_count: null,
      env_fingerprint: evolver.fingerprint(model),
      name: model,
    });
  },
  /** Its proxy's hello (and re-authentication): `env_fingerprint` beside the envelope, `rotate_secret` to re-key. */
  proxyHello(nodeId: string, opts: { rotate?: boolean; model?: string } = {}) {
    return {
      ...evolver.envelope("hello", nodeId, { capabilities: {}, ...(opts.rotate ? { rotate_secret: true } : {}) }),
      env_fingerprint: evolver.fingerprint(opts.model),
    };
  },
  /** Its heartbeat: flat, with statistics crewplane does not read. */
  heartbeat(nodeId: string) {
    const fp = evolver.fingerprint();
    return {
      node_id: nodeId,
      sender_id: nodeId,
      env_fingerprint: fp,
      evolver_version: "1.94.0",
      meta: { env_fingerprint: fp, anti_abuse: { schema_version: "anti_abuse.v1", event_type: "node.heartbeat" }, outbound_pending: 0 },
    };
  },
  /** Its event poll: an envelope whose payload is empty (no timeout, never an acknowledgement). */
  poll(nodeId: string) {
    return evolver.envelope("events_poll", nodeId, {}, `poll_${Date.now()}`);
  },
  /** Its task discovery. */
  fetchTasks(nodeId: string) {
    return evolver.envelope("fetch", nodeId, { tasks_only: true, include_tasks: true });
  },
  /** The paths of its GET requests. */
  streamPath: (nodeId: string) => `/events/stream?node_id=${nodeId}&duration_ms=300000`,
  myTasksPath: (nodeId: string) => `/task/my?node_id=${nodeId}&limit=20`,
  claim: (taskId: string, nodeId: string) => ({
    task_id: taskId,
    node_id: nodeId,
    commitment_deadline: new Date(Date.now() + 15 * 60_000).toISOString(),
  }),
  complete: (taskId: string, assetId: string, nodeId: string) => ({ task_id: taskId, asset_id: assetId, node_id: nodeId }),
  workClaim: (taskId: string, nodeId: string) => ({ task_id: taskId, node_id: nodeId }),
  workComplete: (assignmentId: string, nodeId: string, resultAssetId: string) => ({
    assignment_id: assignmentId,
    node_id: nodeId,
    result_asset_id: resultAssetId,
  }),
};

/** What the client keeps from a hello answer (it drops a secret that is not exactly 64 hex). */
export function secretTheClientKeeps(body: any): string | null {
  const secret = body?.payload?.node_secret || body?.node_secret || null;
  return typeof secret === "string" && /^[a-f0-9]{64}$/i.test(secret) ? secret : null;
}

/** An open council swarm task, written as the council writes one (tests need work to discover). */
export async function openSwarmTask(opts: { title?: string; signals?: string[]; projectId?: string } = {}) {
  const id = `task_${hex(8)}`;
  const now = new Date();
  await env.DB.prepare(
    `INSERT INTO swarm_tasks (id, title, body, status, project_id, created_at, expires_at, signals, updated_at)
     VALUES (?, ?, ?, 'open', ?, ?, ?, ?, ?)`,
  )
    .bind(
      id,
      opts.title ?? "Write the council digest generator",
      "Generate the weekly digest from the public trail.",
      opts.projectId ?? null,
      now.toISOString(),
      new Date(now.getTime() + 90 * 86_400_000).toISOString(),
      JSON.stringify(opts.signals ?? ["digest", "council"]),
      now.toISOString(),
    )
    .run();
  return id;
}
