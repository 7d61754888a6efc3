import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { getAgentLock } from "../../../src/durable-objects/agent-lock-rpc";
import { call } from "../../factories";
import { putEmployee } from "../../factories/org";

/**
 * Writers of one employee's state take turns (src/conversations/close.ts): twenty transcripts of one
 * user at once are all accepted and all counted, with no "try again" for the client to handle.
 */
describe("concurrent transcripts of one user", () => {
  it("accepts all twenty and counts every one in the user model", async () => {
    await putEmployee("busy-agent");
    const at = new Date().toISOString();
    const transcript = (i: number) => ({
      agent_id: "busy-agent",
      user_id: "same-user",
      messages: [
        { role: "user", content: `Question number ${i}: when does the office open?`, at },
        { role: "assistant", content: "At nine.", at },
      ],
    });
    const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => call("/v1/conversations", { body: transcript(i) })));
    expect(answers.map((a) => a.status)).toEqual(Array(20).fill(200));
    const model = await env.DB.prepare(
      `SELECT total_conversations, version FROM user_models WHERE user_id = 'same-user' AND agent_id = 'busy-agent'`,
    ).first();
    expect(model).toEqual({ total_conversations: 20, version: 20 });
    const closed = await env.DB.prepare(
      `SELECT COUNT(*) AS n FROM conversations WHERE employee_id = 'busy-agent' AND status = 'closed'`,
    ).first();
    expect(closed).toEqual({ n: 20 });
  });
});

describe("an agent's turn", () => {
  it("admits waiters in arrival order, one at a time", async () => {
    const turn = getAgentLock(env, `turn:order-${crypto.randomUUID()}`);
    expect(await turn.enterTurn({ holder: "a", ttl_ms: 10_000, wait_ms: 5_000 })).toEqual({ ok: true });
    const order: string[] = [];
    const b = turn.enterTurn({ holder: "b", ttl_ms: 10_000, wait_ms: 5_000 }).then(() => order.push("b"));
    await new Promise((r) => setTimeout(r, 20));
    const c = turn.enterTurn({ holder: "c", ttl_ms: 10_000, wait_ms: 5_000 }).then(() => order.push("c"));
    await new Promise((r) => setTimeout(r, 50));
    expect(order).toEqual([]);
    expect(await turn.leaveTurn({ holder: "nobody" })).toEqual({ left: false });
    expect(await turn.leaveTurn({ holder: "a" })).toEqual({ left: true });
    await b;
    expect(order).toEqual(["b"]);
    await turn.leaveTurn({ holder: "b" });
    await c;
    expect(order).toEqual(["b", "c"]);
  });

  it("moves on when a holder never leaves, and gives up a wait that runs out", async () => {
    const turn = getAgentLock(env, `turn:lapse-${crypto.randomUUID()}`);
    await turn.enterTurn({ holder: "dead", ttl_ms: 200, wait_ms: 0 });
    const started = Date.now();
    expect(await turn.enterTurn({ holder: "next", ttl_ms: 10_000, wait_ms: 5_000 })).toEqual({ ok: true });
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(await turn.enterTurn({ holder: "impatient", ttl_ms: 10_000, wait_ms: 100 })).toEqual({ ok: false, reason: "wait_timeout" });
  });
});
