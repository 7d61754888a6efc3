import { describe, expect, it } from "vitest";
import { call, createOperator } from "../factories";

async function eventually<T>(read: () => Promise<T | undefined>, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error("not recorded in time");
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe("a tick run by hand", () => {
  it("answers with the tick's summary and records who ran it, with that summary, as tick.ran", async () => {
    const manager = await createOperator("manager", "tick-runner");
    const res = await call("/v1/admin/ticks/leases", { method: "POST", token: manager });
    expect(res.status).toBe(200);
    expect(res.body.ran).toBe("leases");
    const recorded = await eventually(async () => {
      const events = (await call("/v1/events?type=tick.ran&subject=tick:leases")).body.events as Array<{ payload: any }>;
      return events.find(
        (e) => e.payload.trigger === "admin" && e.payload.summary && JSON.stringify(e.payload.summary) === JSON.stringify(res.body.summary),
      );
    });
    expect(recorded.payload).toMatchObject({ name: "leases", trigger: "admin" });
    expect(recorded.payload.by).toMatch(/^op_/);
  });

  it("is for managers: a viewer is refused and nothing is recorded", async () => {
    const viewer = await createOperator("viewer", "tick-viewer");
    const before = (await call("/v1/events?type=tick.ran")).body.events.length;
    expect((await call("/v1/admin/ticks/leases", { method: "POST", token: viewer })).status).toBe(403);
    expect((await call("/v1/events?type=tick.ran")).body.events.length).toBe(before);
  });
});
