import { call } from "./index";

export interface TestNode {
  node_id: string;
  token: string;
  webhook_secret?: string;
}

export async function registerNode(opts: { name?: string; model_tier?: number; webhook_url?: string } = {}): Promise<TestNode> {
  const res = await call("/v1/nodes", {
    token: null,
    body: { name: opts.name ?? "node", model_tier: opts.model_tier ?? 3, ...(opts.webhook_url ? { webhook_url: opts.webhook_url } : {}) },
  });
  if (res.status !== 201) throw new Error(`register: ${res.status} ${JSON.stringify(res.body)}`);
  return {
    node_id: res.body.node_id,
    token: res.body.node_secret,
    ...(res.body.webhook_secret ? { webhook_secret: res.body.webhook_secret } : {}),
  };
}

export async function patchNode(nodeId: string, patch: Record<string, unknown>) {
  const res = await call(`/v1/admin/nodes/${nodeId}`, { method: "PATCH", body: patch });
  if (res.status !== 200) throw new Error(`patch: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body;
}

export async function heartbeat(node: TestNode, ack_through?: string) {
  const res = await call(`/v1/nodes/${node.node_id}/heartbeat`, {
    token: node.token,
    body: ack_through === undefined ? {} : { ack_through },
  });
  if (res.status !== 200) throw new Error(`heartbeat: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body as {
    pending_events: { id: string; type: string; payload: any; created_at: string }[];
    has_more: boolean;
    server_time: string;
  };
}

/** A node that may deliberate: registered, given standing by an admin, and heartbeating. */
export async function eligibleNode(name: string, reputation = 50, model_tier = 3): Promise<TestNode> {
  const node = await registerNode({ name, model_tier });
  await patchNode(node.node_id, { reputation });
  await heartbeat(node);
  return node;
}

/** Every pending event of a node, acknowledging as it goes. */
export async function drainEvents(node: TestNode) {
  const all: { id: string; type: string; payload: any }[] = [];
  let ack: string | undefined;
  for (;;) {
    const beat = await heartbeat(node, ack);
    const fresh = beat.pending_events.filter((e) => !all.some((a) => a.id === e.id));
    all.push(...fresh);
    if (beat.pending_events.length === 0) return all;
    ack = beat.pending_events[beat.pending_events.length - 1]!.id;
  }
}
