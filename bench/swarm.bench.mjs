// Swarm scale (issue 26): 10k simulated nodes heartbeating on a compressed schedule (every node once
// per simulated minute: the test clock is moved so that one pass over all nodes is one minute) while
// councils are in session, against the same request stream with each heartbeat a bare D1 write (the
// baseline Worker's one D1 insert). Reports D1 rows written per second by heartbeats, heartbeat
// p50/p99, and what the capacity model (bench/README.md "Capacity model") predicts for 100k nodes.
// Runs under the bench harness (`npm run bench -- swarm`; bench/run.mjs, bench/lib/*).
import { createHash, randomBytes } from "node:crypto";
import autocannon from "autocannon";
import { drive, round, warm } from "./lib/load.mjs";

const NODES = 10_000;
const SESSIONS = 10;
/** The hot set: few enough that a pass takes seconds here, so a run covers several windows of simulated time. */
const HOT_NODES = 8;
/** src/nodes/presence.ts: PRESENCE_WINDOW_MS and PRESENCE_SHARDS. */
const WINDOW_MS = 10 * 60_000;
const SHARDS = 8;
const HEARTBEAT_EVERY_MS = 60_000;
const PROPOSAL_BODY =
  "Every week the council publishes a digest of all sessions, ballots and principles, so that nodes outside the council can follow its work and object in time. The digest is generated from the public trail.";

const hex = (bytes) => randomBytes(bytes).toString("hex");
const sha256 = (text) => createHash("sha256").update(text).digest("hex");

/**
 * Nodes straight into D1 (10k registrations over HTTP would take minutes here): each with its node
 * credential, standing to deliberate, and a last heartbeat spread over the window before now, as a
 * swarm heartbeating every minute leaves it (what D1 holds is at most one window old).
 */
async function seedNodes(env, count, nowMs) {
  const nodes = [];
  const rows = [];
  const at = new Date(nowMs).toISOString();
  for (let i = 0; i < count; i++) {
    const id = `node_${hex(8)}`;
    const credentialId = `ncred_${hex(8)}`;
    const secret = hex(32);
    const beat = new Date(nowMs - Math.floor(Math.random() * WINDOW_MS)).toISOString();
    nodes.push({ node_id: id, token: `${credentialId}.${secret}` });
    rows.push({ i: id, c: credentialId, n: `swarm-${i}`, h: sha256(secret), b: beat });
  }
  // 1,000 nodes per statement through one JSON parameter (D1 binds at most 100 values per statement).
  const field = (k) => `json_extract(value, '$.${k}')`;
  for (let i = 0; i < rows.length; i += 1_000) {
    const json = JSON.stringify(rows.slice(i, i + 1_000));
    await env.DB.batch([
      env.DB.prepare(
        `INSERT INTO credentials (id, kind, name, role, subject, secret_hash, created_at)
         SELECT ${field("c")}, 'node', ${field("n")}, NULL, ${field("i")}, ${field("h")}, ?2 FROM json_each(?1)`,
      ).bind(json, at),
      env.DB.prepare(
        `INSERT INTO nodes (id, name, model_tier, reputation, credential_id, created_at, updated_at, last_heartbeat_at)
         SELECT ${field("i")}, ${field("n")}, 3, 50, ${field("c")}, ?2, ?2, ${field("b")} FROM json_each(?1)`,
      ).bind(json, at),
    ]);
  }
  return nodes;
}

/** Counts the D1 row writes heartbeats make (the window write and presence's flush both set last_heartbeat_at). */
async function installWriteCounter(env) {
  await env.DB.batch([
    env.DB.prepare(`CREATE TABLE IF NOT EXISTS bench_heartbeat_writes (id INTEGER PRIMARY KEY, n INTEGER NOT NULL)`),
    env.DB.prepare(`INSERT OR REPLACE INTO bench_heartbeat_writes (id, n) VALUES (1, 0)`),
    env.DB.prepare(`CREATE TRIGGER IF NOT EXISTS bench_heartbeat_writes_count AFTER UPDATE OF last_heartbeat_at, acked_through ON nodes
       BEGIN UPDATE bench_heartbeat_writes SET n = n + 1 WHERE id = 1; END`),
  ]);
  return async () => (await env.DB.prepare(`SELECT n FROM bench_heartbeat_writes WHERE id = 1`).first()).n;
}

async function openSessions(product, env, nodes, count) {
  // Proposers above 60: their proposals skip seconding and open straight into diverge.
  const proposers = nodes.slice(0, count);
  for (const p of proposers) await env.DB.prepare(`UPDATE nodes SET reputation = 65 WHERE id = ?`).bind(p.node_id).run();
  const byId = new Map(nodes.map((n) => [n.node_id, n]));
  const pairs = [];
  for (let i = 0; i < count; i++) {
    const res = await product.api("/v1/council/proposals", {
      token: proposers[i].token,
      body: { title: `Swarm bench proposal ${i}`, body: PROPOSAL_BODY, kind: "general" },
    });
    if (res.status !== 201 || !res.body.session_id) throw new Error(`proposal ${i}: ${res.status} ${JSON.stringify(res.body)}`);
    const view = await product.api(`/v1/council/sessions/${res.body.session_id}`);
    // Everyone but one member posts, so no session completes diverge during the run.
    const seats = view.body.members.filter((m) => m.role !== "proposer").map((m) => m.node_id);
    // A seat may go to a node another benchmark registered on the same Worker (smoke runs share one):
    // only the nodes seeded here have tokens this benchmark knows.
    for (const poster of [proposers[i], ...seats.slice(1).map((id) => byId.get(id))])
      if (poster) pairs.push({ session: res.body.session_id, poster });
  }
  return pairs;
}

export default {
  name: "swarm",
  async run(ctx) {
    const { product, options, log } = ctx;
    const nodeCount = options.smoke ? 300 : NODES;
    const sessionCount = options.smoke ? 2 : SESSIONS;
    const env = await product.env();
    const clockNow = Date.parse((await product.api("/v1/admin/clock")).body.now);
    log(`seeding ${nodeCount} nodes`);
    const nodes = await seedNodes(env, nodeCount, clockNow);
    log(`opening ${sessionCount} council sessions`);
    const pairs = await openSessions(product, env, nodes, sessionCount);
    const writes = await installWriteCounter(env);

    // Councils in session throughout, on both sides: dialogs at 2 connections against the product.
    let d = 0;
    const dialogBody = JSON.stringify({ dialog_type: "develop", content: "A further thought on the digest format." });
    const council = autocannon({
      url: product.url,
      connections: 2,
      duration: options.duration * 2 + 30,
      timeout: 30,
      requests: [
        {
          method: "POST",
          setupRequest: (req) => {
            const pair = pairs[d++ % pairs.length];
            return {
              ...req,
              path: `/v1/council/sessions/${pair.session}/dialog`,
              headers: { authorization: `Bearer ${pair.poster.token}`, "content-type": "application/json" },
              body: dialogBody,
            };
          },
        },
      ],
    });

    // The baseline Worker gets a background of the same shape (2 connections of its one D1 insert), so
    // neither side's single workerd thread serves its heartbeats alone.
    const baselineBackground = autocannon({
      url: `${ctx.baseline.url}/d1-insert`,
      connections: 2,
      duration: options.duration * 2 + 30,
      timeout: 30,
      method: "POST",
      headers: { "content-type": "application/json" },
      body: "{}",
    });

    // The compressed schedule: one pass over the heartbeating nodes is one simulated minute. The test
    // clock runs on real time; after each pass it is moved on by whatever of the minute the pass did
    // not take.
    const first = nodes[0];
    await warm(`${product.url}/v1/nodes/${first.node_id}/heartbeat`, {
      method: "POST",
      headers: { authorization: `Bearer ${first.token}`, "content-type": "application/json" },
      body: "{}",
    });
    async function measure(set, { productOnly = false } = {}) {
      let h = 0;
      let passStarted = Date.now();
      let clockMoves = 0;
      const advance = () => {
        const left = HEARTBEAT_EVERY_MS - (Date.now() - passStarted);
        passStarted = Date.now();
        if (left <= 0) return;
        clockMoves++;
        product.api("/v1/admin/clock", { body: { advance_ms: left } }).catch(() => undefined);
      };
      const writesBefore = await writes();
      const started = Date.now();
      const request = {
        url: product.url,
        method: "POST",
        requests: [
          {
            method: "POST",
            setupRequest: (req) => {
              const i = h++ % set.length;
              if (i === 0 && h > 1) advance();
              const node = set[i];
              return {
                ...req,
                path: `/v1/nodes/${node.node_id}/heartbeat`,
                headers: { ...req.headers, authorization: `Bearer ${node.token}`, "content-type": "application/json" },
                body: "{}",
              };
            },
          },
        ],
      };
      const { product: beat, baseline } = productOnly
        ? { product: await drive({ ...request, connections: options.connections, duration: options.duration * 3 }), baseline: null }
        : await ctx.compare("d1Insert", request);
      const wall = (Date.now() - started) / 1000;
      const rows = (await writes()) - writesBefore;
      return { beat, baseline, rows, wall, passes: round(h / set.length, 2), clockMoves, perBeat: beat.ok > 0 ? rows / beat.ok : 0 };
    }
    // All nodes in rotation: at this machine's rate each node beats about once, so this row shows the
    // latency and the write rate right after a swarm's D1 state (the worst case: half the held beats
    // are due within the flush's look-ahead).
    const all = await measure(nodes);
    // A hot set beating on the compressed minute for several windows: the steady state, one D1 row
    // per node per window.
    // Product only (the bare write is one row per heartbeat by construction), three times as long.
    const hot = await measure(nodes.slice(-HOT_NODES), { productOnly: true });
    council.stop?.();
    baselineBackground.stop?.();
    const [dialogs, background] = await Promise.all([council, baselineBackground]);
    // Every heartbeat a shard holds is less than one window newer than what D1 holds for its node
    // (else the heartbeat should have been D1's): read from the shards' own SQLite.
    const d1Beats = new Map(
      (await env.DB.prepare(`SELECT id, last_heartbeat_at FROM nodes`).all()).results.map((r) => [r.id, r.last_heartbeat_at]),
    );
    let heldBeats = 0;
    let beyondWindow = 0;
    for (let shard = 0; shard < SHARDS; shard++) {
      const storage = await product.server.getWorker().getDurableObjectStorage("NODE_PRESENCE", { name: `presence-${shard}` });
      let rows = [];
      try {
        rows = await storage.exec(`SELECT node_id, beat_ms FROM presence`);
      } catch {
        rows = []; // a shard no heartbeat reached has no table yet
      }
      for (const r of rows) {
        const d1 = d1Beats.get(r.node_id);
        if (d1 === undefined) continue;
        heldBeats++;
        if (d1 === null || r.beat_ms - Date.parse(d1) >= WINDOW_MS) beyondWindow++;
      }
    }

    // D1 rows written per second by heartbeats: presence's flushes run on real time, so they are
    // counted over the whole wall time of each comparison; the bare write is one row per heartbeat.
    const writesPerS = (m) => round(m.rows / Math.max(m.wall, 1), 1);
    // The model (bench/README.md): every node heartbeating once a minute; D1 takes one row per node
    // every half to whole window (its window write, or presence's flush, which takes everything due
    // within half a window) and one read batch per heartbeat.
    const at100k = {
      heartbeats_per_s: round(100_000 / (HEARTBEAT_EVERY_MS / 1000)),
      d1_rows_written_per_s: `${round(100_000 / (WINDOW_MS / 1000))}–${round(100_000 / (WINDOW_MS / 2000))}`,
      d1_rows_written_per_s_before: round(100_000 / (HEARTBEAT_EVERY_MS / 1000)),
      presence_calls_per_shard_per_s: round(100_000 / (HEARTBEAT_EVERY_MS / 1000) / SHARDS, 1),
    };
    const failedBeats = all.beat.non_2xx + all.beat.errors + hot.beat.non_2xx + hot.beat.errors;
    const checks = [
      {
        name: "no heartbeat failed",
        ok: failedBeats === 0,
        detail: `${failedBeats} non-2xx or errors of ${all.beat.requests + hot.beat.requests}`,
      },
      {
        name: "heartbeats write D1 far less than once each over a node's life (hot set)",
        // The steady state is a tenth to a fifth of a row per heartbeat; the bound leaves room for a run
        // too short to cover many windows.
        ok: options.smoke || hot.perBeat < 0.5,
        detail: `hot set: ${hot.rows} rows for ${hot.beat.ok} heartbeats (${round(hot.perBeat, 3)} each, ${hot.passes} simulated minutes per node)`,
      },
      {
        name: "a swarm's first heartbeats write D1 less than the bare write (all nodes)",
        // Each node beats about once in this pass, and each held beat is written once when its window
        // ends (within 10 minutes): during the run that is about half of them, not the steady state.
        ok: options.smoke || all.perBeat < 1,
        detail: `all nodes: ${all.rows} rows for ${all.beat.ok} heartbeats (${round(all.perBeat, 3)} each; the bare write: 1)`,
      },
      {
        name: "presence holds no heartbeat a window or more newer than D1's",
        ok: heldBeats > 0 && beyondWindow === 0,
        detail: `${heldBeats} nodes in presence, ${beyondWindow} beyond the window`,
      },
    ];
    const row = (m, path) => ({
      path,
      product: m.beat,
      baseline: m.baseline,
      extra: {
        "D1 rows written/s (product / bare)": `${writesPerS(m)} / ${m.baseline.rate}`,
        "rows per heartbeat": round(m.perBeat, 3),
        "simulated minutes per node": m.passes,
      },
    });
    return {
      rows: [row(all, `heartbeat, ${nodeCount} nodes in rotation`)],
      checks,
      notes: [
        `${nodeCount} nodes, ${sessionCount} sessions in diverge with ${pairs.length} posters; dialogs alongside at 2 connections: ${round(dialogs.requests.average, 1)}/s, ${dialogs.non2xx} non-2xx (sessions move on as the clock does); the baseline Worker had 2 connections of its D1 insert alongside (${round(background.requests.average, 1)}/s)`,
        `compressed schedule: after each pass over the heartbeating nodes the test clock moves on to a full minute (${all.clockMoves} + ${hot.clockMoves} moves); wall time ${round(all.wall, 1)} s and ${round(hot.wall, 1)} s`,
        `model for 100k nodes heartbeating every minute: ${at100k.heartbeats_per_s} heartbeats/s; D1 rows written by heartbeats ${at100k.d1_rows_written_per_s}/s (before: ${at100k.d1_rows_written_per_s_before}/s); ${at100k.presence_calls_per_shard_per_s} presence calls/s per shard of ${SHARDS}; one D1 read batch per heartbeat remains (${at100k.heartbeats_per_s}/s)`,
        `hot set: ${HOT_NODES} of the nodes heartbeating alone for ${hot.beat.duration_s} s (no baseline: a bare write is one row per heartbeat): ${hot.beat.rate} heartbeats/s, p50 ${hot.beat.p50_ms} ms, p99 ${hot.beat.p99_ms} ms, ${hot.passes} simulated minutes per node, ${hot.rows} D1 rows for ${hot.beat.ok} heartbeats (${round(hot.perBeat, 3)} each)`,
        `measured rows per heartbeat scaled to 100k nodes: ${round(all.perBeat * at100k.heartbeats_per_s)} rows/s (all nodes, about one beat each) and ${round(hot.perBeat * at100k.heartbeats_per_s)} rows/s (hot set, ${hot.passes} simulated minutes each)`,
      ],
    };
  },
};
