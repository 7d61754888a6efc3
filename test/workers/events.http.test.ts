import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { getDb } from "../../src/db/client";
import { appendEvent } from "../../src/lib/events";
import { call } from "../factories";

async function seed(types: string[], subject = "s-1") {
  const db = getDb(env.DB);
  for (const type of types) await appendEvent(db, { type, subject, payload: { type } }, new Date());
}

describe("GET /v1/events", () => {
  it("pages through the feed oldest first with next_cursor until it is exhausted", async () => {
    await seed(["paging.a", "paging.b", "paging.c", "paging.d", "paging.e"]);
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const res: { body: { events: { type: string }[]; next_cursor: string | null } } = await call(
        `/v1/events?type=paging.&limit=2${cursor ? `&cursor=${cursor}` : ""}`,
      );
      seen.push(...res.body.events.map((e) => e.type));
      cursor = res.body.next_cursor;
      pages++;
    } while (cursor);
    expect(seen).toEqual(["paging.a", "paging.b", "paging.c", "paging.d", "paging.e"]);
    expect(pages).toBe(3);
  });

  it("filters by type prefix and by subject, with each event's shape", async () => {
    await seed(["topology.proposed", "topology.approved"], "cls-1");
    await seed(["topologyx.other", "council.decided"], "cls-1");
    await seed(["topology.rejected"], "cls-2");
    const byType = await call("/v1/events?type=topology.");
    expect(byType.body.events.map((e: { type: string }) => e.type)).toEqual([
      "topology.proposed",
      "topology.approved",
      "topology.rejected",
    ]);
    const bySubject = await call("/v1/events?type=topology.&subject=cls-2");
    expect(bySubject.body.events).toEqual([
      {
        id: expect.any(String),
        type: "topology.rejected",
        subject: "cls-2",
        payload: { type: "topology.rejected" },
        created_at: expect.stringMatching(/Z$/),
      },
    ]);
  });

  it("rejects a limit above 500 and a cursor that did not come from the feed", async () => {
    expect((await call("/v1/events?limit=501")).status).toBe(422);
    expect((await call("/v1/events?cursor=abc")).status).toBe(422);
  });
});
