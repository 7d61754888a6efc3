import { expect } from "vitest";
import { call } from "./index";
import type { TestNode } from "./nodes";

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

/** An EvoMap-style sender id: `node_` + 16 hex, generated once by the client. */
export function senderId(): string {
  return `node_${Array.from(crypto.getRandomValues(new Uint8Array(8)), (b) => b.toString(16).padStart(2, "0")).join("")}`;
}

export function a2a(path: string, body?: unknown, token?: string | null) {
  return call(`/a2a${path}`, { token: token === undefined ? null : token, ...(body === undefined ? {} : { body }) });
}

/** Registers a node over `/a2a/hello` (the model string sets its tier). */
export async function helloNode(model = "claude-sonnet-4", sender = senderId()): Promise<TestNode & { sender: string }> {
  const res = await a2a("/hello", envelope("hello", sender, { model }));
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return { node_id: res.body.node_id, token: res.body.node_secret, sender };
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
