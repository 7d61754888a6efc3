import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { getDb } from "../../src/db/client";
import { appendEvent } from "../../src/lib/events";
import { call, createOperator } from "../factories";
import { eventFrames, readStream } from "../factories/sse";

/** Appends events straight to the feed (what any feature's batch does), one statement each. */
async function append(...list: { type: string; subject: string; payload?: Record<string, unknown> }[]): Promise<string[]> {
  const db = getDb(env.DB);
  for (const e of list) await appendEvent(db, { ...e, payload: e.payload ?? {} }, new Date());
  const page = (await call(`/v1/events?limit=500`)).body.events as { id: string }[];
  return page.slice(-list.length).map((e) => e.id);
}

const newest = async () => {
  const page = (await call(`/v1/events?limit=500`)).body.events as { id: string }[];
  return page.at(-1)?.id ?? "0";
};

describe("GET /v1/events/stream", () => {
  it("streams what happens from now on as Server-Sent Events: event = type, id = event id, data = the event", async () => {
    const before = await newest();
    // The stream starts at the newest event; once it says so, an event lands.
    const { status, contentType, frames } = await readStream("/v1/events/stream", (f) => eventFrames(f).length >= 1, {
      onReady: () => append({ type: "probe.live", subject: "probe:1", payload: { n: 1 } }),
    });
    expect(status).toBe(200);
    expect(contentType).toMatch(/^text\/event-stream/);
    expect(frames[0]).toMatchObject({ event: "ready", retry: "2000" });
    expect(JSON.parse(frames[0]!.data!)).toEqual({ after: before });
    const [live] = eventFrames(frames);
    expect(live).toMatchObject({ event: "probe.live" });
    expect(JSON.parse(live!.data!)).toMatchObject({ id: live!.id, type: "probe.live", subject: "probe:1", payload: { n: 1 } });
  });

  it("resumes after Last-Event-ID with the backlog, in order, and applies the type and subject filters", async () => {
    const [first, , third, fourth] = await append(
      { type: "probe.a", subject: "s1" },
      { type: "other.b", subject: "s1" },
      { type: "probe.c", subject: "s1" },
      { type: "probe.d", subject: "s2" },
    );
    const all = await readStream("/v1/events/stream", (f) => eventFrames(f).length >= 3, { headers: { "last-event-id": first! } });
    expect(eventFrames(all.frames).map((f) => f.event)).toEqual(["other.b", "probe.c", "probe.d"]);
    const filtered = await readStream(`/v1/events/stream?type=probe.&subject=s1&cursor=${first}`, (f) => eventFrames(f).length >= 1);
    expect(eventFrames(filtered.frames).map((f) => f.id)).toEqual([third]);
    // Last-Event-ID wins over the cursor: that is what a reconnecting EventSource sends.
    const resumed = await readStream(`/v1/events/stream?cursor=${first}`, (f) => eventFrames(f).length >= 1, {
      headers: { "last-event-id": third! },
    });
    expect(eventFrames(resumed.frames)[0]!.id).toBe(fourth);
  });

  it("needs a viewer token and a numeric resume point, answering problem+json otherwise", async () => {
    expect((await readStream("/v1/events/stream", () => true, { token: null })).status).toBe(401);
    expect((await readStream("/v1/events/stream", () => true, { token: await createOperator("viewer", "stream-viewer") })).status).toBe(
      200,
    );
    const bad = await readStream("/v1/events/stream", () => true, { headers: { "last-event-id": "abc" } });
    expect([bad.status, (bad.body as any).code]).toEqual([422, "validation_failed"]);
    expect((await readStream("/v1/events/stream?cursor=-1", () => true)).status).toBe(422);
  });

  it("refuses an out-of-range cursor with 422 naming cursor, as it refuses such a Last-Event-ID, on both streams", async () => {
    for (const path of ["/v1/events/stream", "/v1/public/events/stream"]) {
      for (const cursor of ["99999999999999999999", "9007199254740993", "1".repeat(16)]) {
        const res = await readStream(`${path}?cursor=${cursor}`, () => true, { token: path.includes("public") ? null : undefined });
        expect([res.status, (res.body as any)?.code], `${path} ${cursor}`).toEqual([422, "validation_failed"]);
        expect((res.body as any).errors).toEqual([expect.objectContaining({ path: "cursor" })]);
      }
      const header = await readStream(path, () => true, {
        token: path.includes("public") ? null : undefined,
        headers: { "last-event-id": "99999999999999999999" },
      });
      expect(header.status).toBe(422);
    }
  });

  it("refuses type and subject filters with a NUL or another control character, on the list and both streams", async () => {
    for (const filter of ["type=probe.%00", "subject=s%00", "type=a%01b", "subject=x%0Ay"]) {
      const list = await call(`/v1/events?${filter}`);
      expect([list.status, list.body.code], filter).toEqual([422, "validation_failed"]);
      for (const path of ["/v1/events/stream", "/v1/public/events/stream"]) {
        const res = await readStream(`${path}?${filter}`, () => true, { token: path.includes("public") ? null : undefined });
        expect(res.status, `${path} ${filter}`).toBe(422);
      }
    }
  });

  it("starts a resume point past the newest event at the newest event, so what lands next is sent", async () => {
    const newestId = Number(await newest());
    const ahead = String(newestId + 1_000_000);
    for (const resume of [{ cursor: ahead }, { headers: { "last-event-id": ahead } }]) {
      const path = `/v1/events/stream?type=probe.ahead${resume.cursor ? `&cursor=${resume.cursor}` : ""}`;
      const { status, frames } = await readStream(path, (f) => eventFrames(f).length >= 1, {
        ...(resume.headers ? { headers: resume.headers } : {}),
        onReady: () => append({ type: "probe.ahead", subject: "ahead" }),
      });
      expect(status).toBe(200);
      expect(Number(JSON.parse(frames[0]!.data!).after)).toBeLessThanOrEqual(newestId + 1);
      expect(eventFrames(frames).map((f) => f.event)).toEqual(["probe.ahead"]);
    }
  });
});

describe("GET /v1/public/events/stream", () => {
  it("streams the public event types to anyone, and never an operator's", async () => {
    const from = await newest();
    await append(
      { type: "approval.requested", subject: "apr_1" },
      { type: "council.session_opened", subject: "delib_1" },
      { type: "task.created", subject: "task_1" },
      { type: "project.proposed", subject: "proj_1" },
      { type: "node.updated", subject: "node_1" },
      { type: "swarm_task.created", subject: "swarm_1" },
      { type: "node.registered", subject: "node_1" },
      { type: "governance.principle_crystallized", subject: "pr_1" },
    );
    const res = await readStream(`/v1/public/events/stream?cursor=${from}`, (f) => eventFrames(f).length >= 5, { token: null });
    expect(res.status).toBe(200);
    expect(eventFrames(res.frames).map((f) => f.event)).toEqual([
      "council.session_opened",
      "project.proposed",
      "swarm_task.created",
      "node.registered",
      "governance.principle_crystallized",
    ]);
    // A type filter narrows the public set; it cannot widen it.
    const narrowed = await readStream(`/v1/public/events/stream?cursor=${from}&type=council.`, (f) => eventFrames(f).length >= 1, {
      token: null,
    });
    expect(eventFrames(narrowed.frames).map((f) => f.event)).toEqual(["council.session_opened"]);
    const none = await readStream(`/v1/public/events/stream?cursor=${from}&type=approval.`, (f) => eventFrames(f).length >= 1, {
      token: null,
      timeoutMs: 2_500,
    });
    expect(eventFrames(none.frames)).toEqual([]);
  });
});
