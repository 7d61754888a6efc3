// Council throughput (issue 8): sustained dialog and heartbeat requests per second with 1,000
// registered nodes and 50 open sessions, beside the baseline Worker's one-D1-write (dialog) and
// one-D1-read (heartbeat) routes, at the same concurrency. Runs under the bench harness
// (`npm run bench -- council`; bench/run.mjs, bench/lib/*): `{ name, run(ctx) }`.

const NODES = 1_000;
const SESSIONS = 50;
const PROPOSAL_BODY =
  "Every week the council publishes a digest of all sessions, ballots and principles, so that nodes outside the council can follow its work and object in time. The digest is generated from the public trail.";

async function register(product, count, connections) {
  const nodes = [];
  let next = 0;
  async function worker() {
    while (next < count) {
      const i = next++;
      const res = await product.api("/v1/nodes", { body: { name: `bench-${i}`, model_tier: 3 } });
      if (res.status !== 201) throw new Error(`register: ${res.status} ${JSON.stringify(res.body)}`);
      nodes.push({ node_id: res.body.node_id, token: res.body.node_secret });
    }
  }
  await Promise.all(Array.from({ length: connections }, worker));
  return nodes;
}

export default {
  name: "council",
  async run(ctx) {
    const { product, options, log } = ctx;
    const smoke = options.smoke;
    // A node posts at most 30 dialogs in one session (a product rule, 429 rate_limited past it), so
    // the smoke run needs enough (session, poster) pairs that 2 s at full speed stays under the cap:
    // with 4 sessions a fast machine reached it (about 940 posts over 32 pairs).
    const nodeCount = smoke ? 150 : NODES;
    const sessionCount = smoke ? 12 : SESSIONS;
    const env = await product.env();
    log(`registering ${nodeCount} nodes`);
    const nodes = await register(product, nodeCount, 8);
    // Standing and a fresh heartbeat for everyone (an admin would PATCH these; SQL is faster for 1,000).
    const now = new Date().toISOString();
    await env.DB.prepare(`UPDATE nodes SET reputation = 50, model_tier = 3, last_heartbeat_at = ?`).bind(now).run();
    // Proposers above 60: their proposals skip seconding and open straight into diverge.
    const proposers = nodes.slice(0, Math.ceil(sessionCount / 2));
    for (const p of proposers) await env.DB.prepare(`UPDATE nodes SET reputation = 65 WHERE id = ?`).bind(p.node_id).run();

    log(`opening ${sessionCount} sessions`);
    const sessions = [];
    for (let i = 0; i < sessionCount; i++) {
      const proposer = proposers[Math.floor(i / 2)];
      const res = await product.api("/v1/council/proposals", {
        token: proposer.token,
        body: { title: `Bench proposal number ${i}`, body: PROPOSAL_BODY, kind: "general" },
      });
      if (res.status !== 201 || !res.body.session_id) throw new Error(`proposal ${i}: ${res.status} ${JSON.stringify(res.body)}`);
      const view = await product.api(`/v1/council/sessions/${res.body.session_id}`);
      if (view.body.phase !== "diverge") throw new Error(`session ${i} is ${view.body.phase}, expected diverge`);
      // Everyone posts but one member, so no session can complete diverge during the run; the
      // proposer posts too (proposers take part in discussion).
      const seats = view.body.members.filter((m) => m.role !== "proposer").map((m) => m.node_id);
      const byId = new Map(nodes.map((n) => [n.node_id, n]));
      const posters = [proposer, ...seats.slice(1).map((id) => byId.get(id))];
      sessions.push({ id: res.body.session_id, posters });
    }
    const pairs = sessions.flatMap((s) => s.posters.map((p) => ({ session: s.id, token: p.token })));

    log("dialog");
    let d = 0;
    let created = 0;
    const refused = new Map();
    const dialogBody = JSON.stringify({ dialog_type: "develop", content: "A further thought on the digest format." });
    // Ten warm-up posts from ten different posters: from one poster they would bring it ten dialogs
    // closer to the per-node cap (30 per session), which a fast smoke run then reached (429).
    for (const pair of pairs.slice(0, 10)) {
      const res = await fetch(`${product.url}/v1/council/sessions/${pair.session}/dialog`, {
        method: "POST",
        headers: { authorization: `Bearer ${pair.token}`, "content-type": "application/json" },
        body: dialogBody,
      });
      if (res.status !== 201) throw new Error(`warm-up dialog: ${res.status} ${await res.text()}`);
    }
    // Alternating slices of the baseline route and the product path (ctx.compare), like every other
    // benchmark here, so a change of machine load during the run weighs on both alike.
    const { product: dialog, baseline: dialogBase } = await ctx.compare("d1Insert", {
      url: product.url,
      method: "POST",
      requests: [
        {
          method: "POST",
          setupRequest: (req) => {
            const pair = pairs[d++ % pairs.length];
            return {
              ...req,
              path: `/v1/council/sessions/${pair.session}/dialog`,
              headers: { ...req.headers, authorization: `Bearer ${pair.token}`, "content-type": "application/json" },
              body: dialogBody,
            };
          },
          onResponse: (status, body) => {
            if (status === 201) created++;
            else {
              // What a refused post said, so a failed check names its cause (status and problem code).
              const key = `${status} ${/"code":"([a-z_]+)"/.exec(String(body))?.[1] ?? "?"}`;
              refused.set(key, (refused.get(key) ?? 0) + 1);
            }
          },
        },
      ],
    });

    // The progress checks the last dialogs asked for (10 s debounce) would otherwise run inside the
    // heartbeat's measurement and be counted as its CPU: wait until every session's check has run
    // (a check moves next_check_at on to the phase's deadline, hours away).
    const settled = Date.now() + 30_000;
    for (;;) {
      const soon = new Date(Date.now() + 60_000).toISOString();
      const due = await env.DB.prepare(`SELECT COUNT(*) AS n FROM council_sessions WHERE next_check_at <= ?`).bind(soon).first();
      if (due.n === 0 || Date.now() > settled) break;
      await new Promise((r) => setTimeout(r, 500));
    }

    log("heartbeat");
    let h = 0;
    const heartbeatRequest = {
      url: product.url,
      method: "POST",
      requests: [
        {
          method: "POST",
          setupRequest: (req) => {
            const node = nodes[h++ % nodes.length];
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
    // The floor does the heartbeat's platform work: a POST whose JSON body it reads, and one D1 read
    // (issue 41, 2026-12-07). Issue 8's GET floor stays beside it for continuity, without a goal: a
    // request with a body costs workerd 0.1-0.3 ms more than a GET before any code runs, up to a
    // sixth of that floor (bench/README.md, council, "seventh session").
    const { product: heartbeat, baseline: heartbeatBase } = await ctx.compare("d1ReadPost", heartbeatRequest);
    log("heartbeat against issue 8's GET floor");
    const { product: heartbeatVsGet, baseline: heartbeatGetBase } = await ctx.compare("d1Read", heartbeatRequest);

    const stored = await env.DB.prepare(`SELECT COUNT(*) AS n FROM council_dialogs WHERE dialog_type = 'develop'`).first();
    const stillDiverging = await env.DB.prepare(`SELECT COUNT(*) AS n FROM council_sessions WHERE phase = 'diverge'`).first();
    const checks = [
      // 10 warm-up posts, and up to one request per connection still in flight when a slice of the
      // load stopped (ctx.compare runs the product in 4 slices, 1 in a smoke run)
      {
        name: "every 201 dialog is in the trail",
        ok: stored.n >= created + 10 && stored.n <= created + 10 + options.connections * (options.smoke ? 1 : 4),
        detail: `${created} counted 201 + 10 warm-up, ${stored.n} stored`,
      },
      {
        name: "no dialog or heartbeat failed",
        ok: dialog.non_2xx + dialog.errors + heartbeat.non_2xx + heartbeat.errors + heartbeatVsGet.non_2xx + heartbeatVsGet.errors === 0,
        detail: `dialog ${dialog.non_2xx}/${dialog.errors}, heartbeat ${heartbeat.non_2xx + heartbeatVsGet.non_2xx}/${heartbeat.errors + heartbeatVsGet.errors} (non-2xx/errors)${
          refused.size ? `; dialog answers: ${[...refused].map(([k, n]) => `${k} ×${n}`).join(", ")}` : ""
        }`,
      },
      {
        name: `all ${sessionCount} sessions stayed open in diverge`,
        ok: stillDiverging.n === sessionCount,
        detail: `${stillDiverging.n} in diverge`,
      },
    ];
    return {
      rows: [
        { path: "POST /v1/council/sessions/:id/dialog", product: dialog, baseline: dialogBase, goal: 0.8 },
        { path: "POST /v1/nodes/:id/heartbeat", product: heartbeat, baseline: heartbeatBase, goal: 0.8 },
        { path: "POST /v1/nodes/:id/heartbeat (issue 8's GET floor)", product: heartbeatVsGet, baseline: heartbeatGetBase },
      ],
      checks,
      notes: [
        `${nodeCount} nodes, ${sessionCount} sessions in diverge, ${pairs.length} (session, poster) pairs rotated; heartbeats rotate over every node`,
      ],
    };
  },
};
