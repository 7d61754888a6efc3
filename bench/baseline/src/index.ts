import { DurableObject } from "cloudflare:workers";
import { Hono } from "hono";

interface Env {
  DB: D1Database;
  COUNTER: DurableObjectNamespace<Counter>;
  QUEUE: Queue<{ id: string }>;
}

/** One SQLite write per call, like the smallest useful Durable Object method. */
export class Counter extends DurableObject<Env> {
  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    ctx.storage.sql.exec(`CREATE TABLE IF NOT EXISTS hits (id INTEGER PRIMARY KEY, n INTEGER NOT NULL)`);
  }

  async hit(): Promise<number> {
    return this.ctx.storage.sql
      .exec<{ n: number }>(`INSERT INTO hits (id, n) VALUES (1, 1) ON CONFLICT(id) DO UPDATE SET n = n + 1 RETURNING n`)
      .one().n;
  }
}

const readItem = (env: Env) =>
  env.DB.prepare(`SELECT id, body FROM items WHERE id = ?`)
    .bind(`seed-${1 + Math.floor(Math.random() * 1000)}`)
    .first();

const insertItem = (env: Env, id: string) =>
  env.DB.prepare(`INSERT INTO items (id, body, created_at) VALUES (?, ?, ?)`).bind(id, `{"n":1}`, new Date().toISOString()).run();

/**
 * Each route does one platform thing (POST routes read their JSON body first, as any JSON endpoint
 * must); the product's paths are measured against these in the same run.
 */
const app = new Hono<{ Bindings: Env }>()
  .get("/nothing", (c) => c.json({ ok: true }))
  .get("/d1-read", async (c) => c.json(await readItem(c.env)))
  // The same read behind a POST with a JSON body: the floor of a POST path that reads (a heartbeat).
  .post("/d1-read", async (c) => {
    await c.req.json();
    return c.json(await readItem(c.env));
  })
  .post("/d1-insert", async (c) => {
    await c.req.json();
    await insertItem(c.env, crypto.randomUUID());
    return c.json({ ok: true });
  })
  .post("/do-rpc", async (c) => {
    await c.req.json();
    return c.json({ n: await c.env.COUNTER.getByName("bench").hit() });
  })
  .post("/do-rpc-d1-insert", async (c) => {
    await c.req.json();
    const n = await c.env.COUNTER.getByName("bench").hit();
    await insertItem(c.env, crypto.randomUUID());
    return c.json({ n });
  })
  .post("/queue-d1-insert", async (c) => {
    await c.req.json();
    const id = crypto.randomUUID();
    await insertItem(c.env, id);
    await c.env.QUEUE.send({ id }, { contentType: "json" });
    return c.json({ id }, 202);
  });

export default {
  fetch: app.fetch,
  async queue(batch) {
    batch.ackAll();
  },
} satisfies ExportedHandler<Env, { id: string }>;
