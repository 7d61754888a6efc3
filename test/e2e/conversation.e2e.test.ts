/**
 * A conversation with an employee end to end (issue 21): the Worker under wrangler's test harness and
 * the real local-runner on its bundled offline runtime (no model CLI needed). The reply arrives as a
 * `conversation.replied` event on the live stream; closing runs the prediction engine once and its
 * router writes the episodic memory.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitFor } from "../runner/helpers/processes";
import { ADMIN_TOKEN, startRunner, startWorker } from "./stack";

type Stack = Awaited<ReturnType<typeof startWorker>>;

/** Reads Server-Sent Events until `done` picks one. */
async function nextEvent(base: string, path: string, done: (e: { event: string; data: any }) => boolean, timeoutMs = 60_000) {
  const ctrl = new AbortController();
  const timer = setTimeout(() => ctrl.abort(), timeoutMs);
  try {
    const res = await fetch(`${base}${path}`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` }, signal: ctrl.signal });
    const reader = res.body!.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    for (;;) {
      const { value, done: end } = await reader.read();
      if (end) throw new Error("stream ended");
      buffer += decoder.decode(value, { stream: true });
      let cut;
      while ((cut = buffer.indexOf("\n\n")) !== -1) {
        const frame = buffer.slice(0, cut);
        buffer = buffer.slice(cut + 2);
        const event = /^event: (.*)$/m.exec(frame)?.[1];
        const data = /^data: (.*)$/m.exec(frame)?.[1];
        if (event && data) {
          const parsed = { event, data: JSON.parse(data) };
          if (done(parsed)) {
            ctrl.abort();
            return parsed;
          }
        }
      }
    }
  } finally {
    clearTimeout(timer);
  }
}

describe("a conversation with an employee, on the real runner", () => {
  let stack: Stack;
  let runnerToken: string;

  beforeAll(async () => {
    stack = await startWorker();
    runnerToken = (await stack.api("/v1/admin/runners", { body: { name: "conversation-e2e" } })).body.token;
  });

  afterAll(async () => {
    await stack?.close();
  });

  it("replies through the runner, streams the reply, closes through the prediction engine and remembers the surprise", async () => {
    const put = await stack.api("/v1/employees/nao", {
      method: "PUT",
      body: { name: "Nao", runtime: "offline", model: { preferred: "offline" } },
    });
    expect(put.status).toBe(200);
    const runner = startRunner(stack.base, runnerToken);
    try {
      const opened = await stack.api("/v1/employees/nao/conversations", { body: { user_id: "hana" } });
      expect(opened.status).toBe(201);
      const id = opened.body.conversation_id as string;

      // Listen before sending, so the reply event cannot slip past.
      const replied = nextEvent(
        stack.base,
        `/v1/events/stream?type=conversation.replied&subject=${id}`,
        (e) => e.event === "conversation.replied" && e.data.payload.turn === 2,
      );
      await new Promise((r) => setTimeout(r, 500));
      const sent = await stack.api(`/v1/conversations/${id}/messages`, { body: { content: "Please book the room for Tuesday afternoon" } });
      expect(sent.status).toBe(202);
      const event = await replied;
      expect(event.event).toBe("conversation.replied");
      expect(event.data.payload).toMatchObject({ conversation_id: id, runtime: "offline" });
      expect(event.data.payload.content).toMatch(/^\[offline runtime\] # Conversation with hana — Nao/);

      const second = await stack.api(`/v1/conversations/${id}/messages`, {
        body: { content: "No, I meant Wednesday afternoon, not Tuesday" },
      });
      expect(second.status).toBe(202);
      await waitFor(
        async () => ((await stack.api(`/v1/conversations/${id}`)).body.turns.length === 4 ? true : undefined),
        "the second reply",
        60_000,
        250,
      );

      const closed = await stack.api(`/v1/conversations/${id}/close`, { method: "POST" });
      expect(closed.status).toBe(200);
      expect(closed.body).toMatchObject({
        status: "closed",
        prediction: { expected_satisfaction: 0.7, confidence: 0 },
        error: { category: "moderate", unexpected_correction: true },
        action: { kind: "store_episodic" },
      });
      const evolution = (await stack.api("/v1/employees/nao/evolution")).body;
      expect(evolution.recent_routes).toEqual([
        expect.objectContaining({ conversation_id: id, user_id: "hana", category: "moderate", action: "store_episodic" }),
      ]);
      const memory = (await stack.api("/v1/employees/nao/memory")).body.entries as any[];
      expect(memory).toEqual([expect.objectContaining({ tags: ["episodic"], importance: closed.body.action.importance })]);
    } finally {
      await runner.stop();
    }
  });
});
