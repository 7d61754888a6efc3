// The audit trail (issue 24): the submit path (POST /v1/admin/jobs) and the council dialog path with
// sealing on, against the same paths with sealing off (AUDIT_SEALING=off), in one run: two product
// Workers side by side, driven in alternating slices (off, on, on, off, …) by the same load generator
// at the same concurrency. Goal: on/off ≥ 0.9. Then the sealing lag under that load (sealed_at −
// created_at of every event the "on" Worker wrote during its slices; the event's time is taken when
// its request started, so this bounds commit-to-seal from above), and export + offline verify
// throughput over 100,000 events (seeded straight into D1, sealed by the sealer, exported through
// GET /v1/audit/export, verified by the crewplane-audit CLI). Runs under the bench harness
// (`npm run bench -- audit`; bench/run.mjs): `{ name, run(ctx) }`.
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createTestHarness } from "wrangler";
import { driveRaw, percentile, round, summarize, warm } from "./lib/load.mjs";
import { ADMIN_TOKEN, ROOT } from "./lib/servers.mjs";

// A fixed key for the benchmark's Worker only (an Ed25519 private JWK; never a real one).
const BENCH_KEY =
  '{"crv":"Ed25519","d":"Ttp-5I1ycC88FPU8UaLLKXxvpgohS0oJlDPjzlPEhE4","x":"aqc1o5cqNyln50UDBmIOCU7HcHDHLVvOjNDCyyl7NE8","kty":"OKP"}';
const EXPORT_EVENTS = 100_000;
const SUBMIT_BODY = JSON.stringify({ kind: "utility", runtime: "offline", prompt: "bench" });
const DIALOG_BODY = JSON.stringify({ dialog_type: "develop", content: "A further thought on the digest format." });
const PROPOSAL_BODY =
  "Every week the council publishes a digest of all sessions, ballots and principles, so that nodes outside the council can follow its work and object in time. The digest is generated from the public trail.";

async function startProduct(label, { vars = {}, secrets = {} }) {
  const server = createTestHarness({
    root: ROOT,
    workers: [{ configPath: "./wrangler.toml", vars: { ENVIRONMENT: "development", ...vars }, secrets: { ADMIN_TOKEN, ...secrets } }],
  });
  const { url } = await server.listen();
  await server.getWorker().applyD1Migrations("DB");
  const base = url.toString().replace(/\/$/, "");
  async function api(path, { body, token = ADMIN_TOKEN } = {}) {
    const res = await fetch(`${base}${path}`, {
      method: body === undefined ? "GET" : "POST",
      headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : null };
  }
  const env = await server.getWorker().getEnv();
  return { label, server, url: base, api, db: env.DB };
}

/**
 * Nodes, standing and open sessions in diverge: the council benchmark's setup, smaller. A node posts
 * at most 30 dialogs in a session, so there are enough (session, poster) pairs for the whole run.
 */
async function councilSetup(p, nodeCount, sessionCount) {
  const nodes = [];
  let next = 0;
  async function register() {
    while (next < nodeCount) {
      const i = next++;
      const res = await p.api("/v1/nodes", { body: { name: `bench-${i}`, model_tier: 3 } });
      if (res.status !== 201) throw new Error(`${p.label} register: ${res.status} ${JSON.stringify(res.body)}`);
      nodes.push({ node_id: res.body.node_id, token: res.body.node_secret });
    }
  }
  await Promise.all(Array.from({ length: 8 }, register));
  await p.db.prepare(`UPDATE nodes SET reputation = 50, model_tier = 3, last_heartbeat_at = ?`).bind(new Date().toISOString()).run();
  const proposers = nodes.slice(0, Math.ceil(sessionCount / 2));
  for (const n of proposers) await p.db.prepare(`UPDATE nodes SET reputation = 65 WHERE id = ?`).bind(n.node_id).run();
  const byId = new Map(nodes.map((n) => [n.node_id, n]));
  const pairs = [];
  for (let i = 0; i < sessionCount; i++) {
    const proposer = proposers[Math.floor(i / 2)];
    const res = await p.api("/v1/council/proposals", {
      token: proposer.token,
      body: { title: `Bench proposal number ${i}`, body: PROPOSAL_BODY, kind: "general" },
    });
    if (res.status !== 201 || !res.body.session_id) throw new Error(`${p.label} proposal: ${res.status} ${JSON.stringify(res.body)}`);
    const view = await p.api(`/v1/council/sessions/${res.body.session_id}`);
    // Everyone posts but one member, so no session leaves diverge during the run.
    const seats = view.body.members.filter((m) => m.role !== "proposer").map((m) => m.node_id);
    for (const poster of [proposer, ...seats.slice(1).map((id) => byId.get(id))])
      pairs.push({ session: res.body.session_id, token: poster.token });
  }
  return pairs;
}

function submitRequests() {
  return [
    {
      method: "POST",
      path: "/v1/admin/jobs",
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": "application/json" },
      body: SUBMIT_BODY,
    },
  ];
}

function dialogRequests(pairs) {
  let d = 0;
  return [
    {
      method: "POST",
      setupRequest: (req) => {
        const pair = pairs[d++ % pairs.length];
        return {
          ...req,
          path: `/v1/council/sessions/${pair.session}/dialog`,
          headers: { ...req.headers, authorization: `Bearer ${pair.token}`, "content-type": "application/json" },
          body: DIALOG_BODY,
        };
      },
    },
  ];
}

/**
 * Sealing off and on in alternating slices (off, on, on, off, …), each side's slices merged. On a
 * shared machine the load moves by the second, so slices are short and many; the median of the
 * per-round ratios is reported beside the merged one.
 */
async function onOff(servers, requestsFor, { connections, duration, rounds }) {
  const raw = { on: [], off: [] };
  const slice = duration / rounds;
  for (let round = 0; round < rounds; round++) {
    for (const side of round % 2 === 0 ? ["off", "on"] : ["on", "off"]) {
      const s = servers[side];
      raw[side].push(await driveRaw({ url: s.url, connections, duration: slice, method: "POST", requests: requestsFor(side) }));
    }
  }
  const opts = (side) => ({ url: servers[side].url, connections });
  const perRound = raw.on.map((r, i) => r["2xx"] / r.duration / (raw.off[i]["2xx"] / raw.off[i].duration)).sort((a, b) => a - b);
  return {
    on: summarize(raw.on, opts("on")),
    off: { label: "the same path, sealing off", ...summarize(raw.off, opts("off")) },
    medianRoundRatio: round(perRound[Math.floor(perRound.length / 2)], 2),
  };
}

async function status(p) {
  return (await p.api("/v1/audit/status")).body;
}

async function settle(p, timeoutMs) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const s = await status(p);
    if (s.unsealed === 0 && s.unsigned === 0) return s;
    if (Date.now() > deadline) throw new Error(`${p.label}: audit not settled after ${timeoutMs} ms: ${JSON.stringify(s)}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

const headSeq = async (p) => (await p.db.prepare(`SELECT COALESCE(MAX(seq), 0) AS seq FROM audit_chain`).first()).seq;

async function lagOf(p, fromSeqExclusive) {
  const { results } = await p.db
    .prepare(`SELECT c.sealed_at, e.created_at FROM audit_chain c JOIN events e ON e.id = c.event_id WHERE c.seq > ?`)
    .bind(fromSeqExclusive)
    .all();
  return results.map((r) => Date.parse(r.sealed_at) - Date.parse(r.created_at));
}

/** `n` events straight into D1 (one statement per 5,000), shaped like the feed's: small JSON payloads. */
async function seedEvents(db, n) {
  const now = Date.now();
  for (let start = 0; start < n; start += 5_000) {
    const end = Math.min(n, start + 5_000) - 1;
    await db
      .prepare(
        `INSERT INTO events (type, subject, payload, created_at)
         WITH RECURSIVE seq(n) AS (SELECT ?1 UNION ALL SELECT n + 1 FROM seq WHERE n < ?2)
         SELECT CASE WHEN n % 3 = 0 THEN 'council.dialog_posted' ELSE 'job.queued' END, printf('job_%016x', n),
                json_object('job_id', printf('job_%016x', n), 'kind', 'utility', 'attempt', 1, 'n', n),
                strftime('%Y-%m-%dT%H:%M:%fZ', ?3 / 1000.0, 'unixepoch')
         FROM seq`,
      )
      .bind(start, end, now)
      .run();
  }
}

function verifyCli(file) {
  return new Promise((resolve) => {
    execFile(join(ROOT, "node_modules/.bin/crewplane-audit"), ["verify", file, "--json"], { maxBuffer: 1 << 20 }, (err, stdout, stderr) =>
      resolve({ code: err ? (err.code ?? 1) : 0, result: stdout ? JSON.parse(stdout) : null, stderr }),
    );
  });
}

export default {
  name: "audit",
  async run(ctx) {
    const { options, log } = ctx;
    const smoke = options.smoke;
    // The goal is a 10% margin, finer than the machine's noise over a few seconds: 3× the usual
    // measurement per path, in 12 rounds.
    const rounds = smoke ? 1 : 12;
    const duration = smoke ? options.duration : options.duration * 3;
    log("starting a product Worker with sealing on and one with sealing off");
    const [on, off] = await Promise.all([
      startProduct("on", { secrets: { AUDIT_SIGNING_KEY: BENCH_KEY } }),
      startProduct("off", { vars: { AUDIT_SEALING: "off" } }),
    ]);
    const servers = { on, off };
    const dir = mkdtempSync(join(tmpdir(), "crewplane-audit-bench-"));
    try {
      log("council setup on both");
      const [pairsOn, pairsOff] = await Promise.all([
        councilSetup(on, smoke ? 40 : 300, smoke ? 4 : 60),
        councilSetup(off, smoke ? 40 : 300, smoke ? 4 : 60),
      ]);
      const pairs = { on: pairsOn, off: pairsOff };
      await settle(on, 60_000);
      for (const p of [on, off])
        await warm(`${p.url}/v1/admin/jobs`, {
          method: "POST",
          headers: { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": "application/json" },
          body: SUBMIT_BODY,
        });
      const loadFrom = await headSeq(on);

      log("submit, sealing on vs off");
      const submit = await onOff(servers, () => submitRequests(), { connections: options.connections, duration, rounds });
      log("council dialog, sealing on vs off");
      const dialog = await onOff(servers, (side) => dialogRequests(pairs[side]), { connections: options.connections, duration, rounds });

      log("waiting for the sealer to settle");
      const settled = await settle(on, 120_000);
      const lags = await lagOf(on, loadFrom);
      const offChain = await headSeq(off);
      log(`sealing lag over ${lags.length} events: p50 ${percentile(lags, 50)} ms, p99 ${percentile(lags, 99)} ms`);

      // Export + verify over EXPORT_EVENTS more events (sealed by the sealer as a backlog).
      const extra = smoke ? 5_000 : EXPORT_EVENTS;
      log(`seeding ${extra} events and sealing them`);
      const beforeSeed = settled.head.seq;
      await seedEvents(on.db, extra);
      const sealStart = performance.now();
      await on.api("/v1/admin/ticks/audit", { body: {} });
      const afterSeal = await settle(on, 600_000);
      const sealSeconds = (performance.now() - sealStart) / 1000;
      const sealedBacklog = afterSeal.head.seq - beforeSeed;

      log("export");
      const exportStart = performance.now();
      const res = await fetch(`${on.url}/v1/audit/export`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
      const file = join(dir, "export.ndjson");
      writeFileSync(file, Buffer.from(await res.arrayBuffer()));
      const exportSeconds = (performance.now() - exportStart) / 1000;
      const exported = afterSeal.head.seq;
      log("verify");
      const verifyStart = performance.now();
      const verified = await verifyCli(file);
      const verifySeconds = (performance.now() - verifyStart) / 1000;
      const bytes = statSync(file).size;

      const rate = (n, s) => Math.round(n / s);
      const checks = [
        {
          name: "sealing on/off ≥ 0.9 on submit",
          ok: smoke || submit.on.rate / submit.off.rate >= 0.9,
          detail: `${round(submit.on.rate / submit.off.rate, 2)}`,
        },
        {
          name: "sealing on/off ≥ 0.9 on council dialog",
          ok: smoke || dialog.on.rate / dialog.off.rate >= 0.9,
          detail: `${round(dialog.on.rate / dialog.off.rate, 2)}`,
        },
        {
          name: "no request failed",
          ok: [submit.on, submit.off, dialog.on, dialog.off].every((s) => s.non_2xx + s.errors === 0),
          detail: [submit.on, submit.off, dialog.on, dialog.off].map((s) => `${s.non_2xx}/${s.errors}`).join(", "),
        },
        { name: "the off Worker sealed nothing", ok: offChain === 0, detail: `${offChain} chain entries` },
        {
          name: "every event of the run sealed, signed and verified offline",
          ok: verified.code === 0 && verified.result?.ok === true && verified.result.events === exported && settled.unsealed === 0,
          detail: verified.result
            ? `${verified.result.events} events, ${verified.result.checkpoints} checkpoints${verified.result.failure ? `; ${JSON.stringify(verified.result.failure)}` : ""}`
            : verified.stderr,
        },
      ];
      const lagCell = `${percentile(lags, 50)} / ${percentile(lags, 99)} (max ${lags.length ? Math.max(...lags) : null}, n ${lags.length})`;
      return {
        rows: [
          {
            path: "submit: POST /v1/admin/jobs, sealing on",
            product: submit.on,
            baseline: submit.off,
            goal: 0.9,
            extra: { "median round ratio": submit.medianRoundRatio, "sealing lag p50 / p99 ms": lagCell },
          },
          {
            path: "POST /v1/council/sessions/:id/dialog, sealing on",
            product: dialog.on,
            baseline: dialog.off,
            goal: 0.9,
            extra: { "median round ratio": dialog.medianRoundRatio, "sealing lag p50 / p99 ms": lagCell },
          },
        ],
        checks,
        notes: [
          `each path: ${duration} s per side in ${rounds} alternating rounds (3× the usual measurement: the goal's 10% margin is finer than this machine's noise over a few seconds); ${options.connections} connections per side`,
          "the dialog path writes no event (the dialog row is its own record), so sealing costs it only the throttled poke; its ratio shows how far two identical Workers drift apart in one run",
          `sealing lag over the ${lags.length} events the on Worker wrote under load (sealed_at − created_at; created_at is taken when the request starts): p50 ${percentile(lags, 50)} ms, p99 ${percentile(lags, 99)} ms, max ${lags.length ? Math.max(...lags) : "-"} ms`,
          `backlog: ${sealedBacklog} events seeded straight into D1 were sealed and signed in ${round(sealSeconds, 1)} s (${rate(sealedBacklog, sealSeconds)} events/s)`,
          `export: ${exported} events (${round(bytes / 1e6, 1)} MB NDJSON) through GET /v1/audit/export in ${round(exportSeconds, 1)} s (${rate(exported, exportSeconds)} events/s)`,
          `verify: crewplane-audit verify over the same file in ${round(verifySeconds, 1)} s (${rate(exported, verifySeconds)} events/s, process start included; ${verified.result ? round(exported / verified.result.seconds) : "-"} events/s inside the verifier)`,
        ],
      };
    } finally {
      rmSync(dir, { recursive: true, force: true });
      await Promise.allSettled([on.server.close(), off.server.close()]);
    }
  },
};
