// Conversation turn latency (issue 21): a user's message to the employee's reply, through the real
// local-runner on its bundled offline runtime (no model, so what is measured is crewplane's own path:
// the turn's batch, the dispatch queue, the inbox, the runner's lease, the employee_turn job with its
// workspace scan, the completion and the owner call that lands the reply), beside the bare runner job
// round trip it rides on (`POST /v1/admin/jobs` utility → completed) in the same run.
//
//   product   POST /v1/conversations/:id/messages → the reply turn visible in GET /v1/conversations/:id
//   baseline  POST /v1/admin/jobs {utility, offline} → GET /v1/admin/jobs/:id says completed
//
// Sequential, one at a time (a person waits for each reply), polling every 20 ms; slices alternate
// (baseline, product, product, baseline, …). rate = 1000 / p50 ms; ratio = product / baseline rate.
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { round } from "./lib/load.mjs";
import { createRunnerToken } from "./lib/runner-loop.mjs";
import { ROOT } from "./lib/servers.mjs";

const POLL_MS = 20;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const pct = (sorted, p) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];

function stats(samplesMs, label) {
  const ms = [...samplesMs].sort((a, b) => a - b);
  const p50 = pct(ms, 50);
  return {
    ...(label ? { label } : {}),
    connections: 1,
    rate: round(1000 / p50, 2),
    requests: ms.length,
    ok: ms.length,
    non_2xx: 0,
    errors: 0,
    timeouts: 0,
    p50_ms: round(p50, 1),
    p99_ms: round(pct(ms, 99), 1),
    max_ms: round(ms[ms.length - 1], 1),
  };
}

async function until(check, what, timeoutMs = 60_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await check();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(POLL_MS);
  }
}

export default {
  name: "conversation",
  async run(ctx) {
    const { product, options, log } = ctx;
    const home = mkdtempSync(join(tmpdir(), "crewplane-bench-conv-"));
    const token = await createRunnerToken(product, "bench-conversation");
    const runner = spawn(join(ROOT, "local-runner/bin/crewplane-runner"), ["--url", product.url, "--home", home, "--concurrency", "2"], {
      env: {
        ...process.env,
        CREWPLANE_RUNNER_TOKEN: token,
        PATH: (process.env.PATH ?? "")
          .split(":")
          .filter((p) => !p.includes("node_modules"))
          .join(":"),
      },
      stdio: ["ignore", "ignore", "pipe"],
    });
    // The runner's last words, so that a failed run says why rather than only "timed out".
    let runnerErr = "";
    runner.stderr.on("data", (d) => {
      runnerErr = (runnerErr + d).slice(-4000);
    });
    try {
      const put = await product.api("/v1/employees/bench-nao", {
        method: "PUT",
        body: { name: "Nao", runtime: "offline", model: { preferred: "offline" } },
      });
      if (put.status !== 200) throw new Error(`employee: ${put.status} ${JSON.stringify(put.body)}`);
      const opened = await product.api("/v1/employees/bench-nao/conversations", { body: { user_id: "bench-user" } });
      const id = opened.body.conversation_id;
      let turns = 0;

      const turn = async () => {
        const t0 = performance.now();
        const sent = await product.api(`/v1/conversations/${id}/messages`, { body: { content: `How is the release going? (${turns})` } });
        if (sent.status !== 202) throw new Error(`message: ${sent.status} ${JSON.stringify(sent.body)}`);
        turns += 2;
        await until(async () => {
          const v = (await product.api(`/v1/conversations/${id}`)).body;
          return v.turns.length >= turns && v.reply_pending === false;
        }, "the reply");
        return performance.now() - t0;
      };
      const job = async () => {
        const t0 = performance.now();
        const res = await product.api("/v1/admin/jobs", { body: { kind: "utility", runtime: "offline", prompt: "bench" } });
        if (res.status !== 202) throw new Error(`job: ${res.status}`);
        await until(async () => (await product.api(`/v1/admin/jobs/${res.body.job_id}`)).body.status === "completed", "the job");
        return performance.now() - t0;
      };

      log("warming up (the runner's first lease, the first workspace)");
      try {
        await job();
        await turn();
      } catch (e) {
        throw new Error(`${e.message}; runner ${runner.exitCode === null ? "running" : `exited ${runner.exitCode}`}, stderr: ${runnerErr || "(none)"}`);
      }
      const per = options.smoke ? 3 : 15;
      const rounds = options.smoke ? 1 : 4;
      const prod = [];
      const base = [];
      for (let r = 0; r < rounds; r++) {
        const order = r % 2 === 0 ? [base, prod] : [prod, base];
        for (const bucket of order) for (let i = 0; i < per; i++) bucket.push(bucket === prod ? await turn() : await job());
      }
      const p = stats(prod);
      const b = stats(base, "bare runner job round trip (utility, offline)");
      const check = (await product.api(`/v1/conversations/${id}`)).body;
      return {
        rows: [
          {
            path: "conversation turn: message → reply (employee_turn on the offline runtime)",
            product: p,
            baseline: b,
            extra: { "turn p50 / p99 ms": `${p.p50_ms} / ${p.p99_ms}`, "job p50 / p99 ms": `${b.p50_ms} / ${b.p99_ms}` },
          },
        ],
        checks: [
          {
            name: "every turn got its reply, in order",
            ok:
              check.turns.length === turns &&
              check.turns.every((t, i) => t.role === (i % 2 === 0 ? "user" : "assistant") && t.status === "ok"),
            detail: `${check.turns.length} turns`,
          },
        ],
        notes: [
          `sequential turns, ${per} per slice, ${rounds * 2} slices alternating with the bare job; polled every ${POLL_MS} ms, so both sides include up to ${POLL_MS} ms of polling`,
          "a turn adds to the bare job: the turn's guarded batch (user turn, job row, member token), the employee_turn job's workspace scans, the reply's batch and its event",
        ],
      };
    } finally {
      runner.kill("SIGTERM");
      await new Promise((r) => runner.once("exit", r));
      rmSync(home, { recursive: true, force: true });
    }
  },
};
