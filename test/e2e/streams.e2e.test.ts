import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ADMIN_TOKEN, startWorker } from "./stack";

// Issue 25 item 4: over real HTTP, a client that goes away frees its stream, and the streams a
// client may hold open are capped (429 too_many_streams), so a reloading tab is never locked out.
const CAP = 8;

let worker: Awaited<ReturnType<typeof startWorker>>;

beforeAll(async () => {
  worker = await startWorker();
});
afterAll(async () => {
  await worker?.close();
});

interface Open {
  status: number;
  body?: any;
  headers: Headers;
  close: () => void;
}

/** Opens a stream and, when it is one, reads until its `ready` frame (the server holds a slot by then). */
async function open(path: string, token?: string): Promise<Open> {
  const controller = new AbortController();
  const res = await fetch(`${worker.base}${path}`, {
    headers: token ? { authorization: `Bearer ${token}` } : {},
    signal: controller.signal,
  });
  if (!res.headers.get("content-type")?.startsWith("text/event-stream")) {
    return { status: res.status, body: await res.json(), headers: res.headers, close: () => {} };
  }
  const reader = res.body!.getReader();
  let text = "";
  while (!text.includes("event: ready")) {
    const { done, value } = await reader.read();
    if (done) break;
    text += new TextDecoder().decode(value);
  }
  return { status: res.status, headers: res.headers, close: () => controller.abort() };
}

/** Opens until the server lets one in (it has seen a closed client), within a generous bound. */
async function openWhenFreed(path: string, token?: string): Promise<Open> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const s = await open(path, token);
    if (s.status === 200 || Date.now() > deadline) return s;
    await new Promise((r) => setTimeout(r, 250));
  }
}

describe.each([
  { name: "the public stream (by address)", path: "/v1/public/events/stream", token: undefined },
  { name: "the operator stream (by token)", path: "/v1/events/stream", token: ADMIN_TOKEN },
])("$name", ({ path, token }) => {
  it("refuses a stream past the cap with 429 too_many_streams, and takes one again once a client closes", async () => {
    const held: Open[] = [];
    try {
      for (let i = 0; i < CAP; i++) {
        const s = await open(path, token);
        expect(s.status).toBe(200);
        held.push(s);
      }
      const refused = await open(path, token);
      expect(refused.status).toBe(429);
      expect(refused.headers.get("content-type")).toMatch(/^application\/problem\+json/);
      expect(refused.headers.get("retry-after")).toBe("2");
      expect(refused.body).toMatchObject({ code: "too_many_streams", limit: CAP, open_streams: CAP });

      // A page that goes away: its connection closes, and the server gives its slot back.
      held.shift()!.close();
      const again = await openWhenFreed(path, token);
      expect(again.status).toBe(200);
      held.push(again);

      // A "reload" of every page at once: all close, all reopen.
      for (const s of held.splice(0)) s.close();
      for (let i = 0; i < CAP; i++) held.push(await openWhenFreed(path, token));
      expect(held.every((s) => s.status === 200)).toBe(true);
    } finally {
      for (const s of held) s.close();
    }
  });
});
