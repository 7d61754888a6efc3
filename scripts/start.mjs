#!/usr/bin/env node
// `npm start`: the whole product on one machine. Applies D1 migrations locally, starts
// `wrangler dev` (local D1, Durable Objects, Queues), fires the cron triggers on schedule (Miniflare
// never does on its own), mints a runner token and starts the local-runner against the Worker.
// The Worker is the stack: if it dies everything stops. The runner is restarted with backoff when it
// dies, unless it exits with a fatal code (bad configuration, token rejected) or we are stopping.
import { spawn, spawnSync } from "node:child_process";
import { generateKeyPairSync, randomBytes } from "node:crypto";
import { appendFileSync, existsSync, readFileSync, writeFileSync } from "node:fs";
import { hostname } from "node:os";
import { delimiter, dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { describeExit, restartDecision } from "./lib/runner-restart.mjs";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const port = Number(process.env.PORT ?? 8787);
const url = `http://127.0.0.1:${port}`;
const wrangler = join(root, "node_modules", ".bin", "wrangler");
// Local D1 / Durable Object state; overridable so tests can run a throwaway stack beside a dev one.
const stateDir = resolve(root, process.env.CREWPLANE_STATE_DIR ?? ".wrangler/state");
const children = [];
let stopping = false;
/** The current runner process (replaced on each restart) and the pending restart, if any. */
let runnerChild;
let restartTimer;

function log(msg) {
  process.stdout.write(`[crewplane] ${msg}\n`);
}

/** The bootstrap admin token lives in .dev.vars (read by wrangler dev); generated once. */
function ensureAdminToken() {
  const file = join(root, ".dev.vars");
  const existing = existsSync(file) ? readFileSync(file, "utf8") : "";
  const match = /^ADMIN_TOKEN\s*=\s*"?([^"\n]+)"?\s*$/m.exec(existing);
  if (match) return { token: match[1], generated: false };
  const token = `cpadmin_${randomBytes(24).toString("hex")}`;
  appendFileSync(file, `${existing && !existing.endsWith("\n") ? "\n" : ""}ADMIN_TOKEN="${token}"\n`, { mode: 0o600 });
  return { token, generated: true };
}

/**
 * The audit checkpoint key (an Ed25519 private JWK, issue 24) lives in .dev.vars too; generated once,
 * single-quoted (the JWK has double quotes). Production: `npx crewplane-audit keygen | wrangler secret put AUDIT_SIGNING_KEY`.
 */
function ensureAuditKey() {
  const file = join(root, ".dev.vars");
  const existing = existsSync(file) ? readFileSync(file, "utf8") : "";
  if (/^AUDIT_SIGNING_KEY\s*=/m.test(existing)) return false;
  const { d, x } = generateKeyPairSync("ed25519").privateKey.export({ format: "jwk" });
  const jwk = JSON.stringify({ kty: "OKP", crv: "Ed25519", d, x });
  appendFileSync(file, `${existing && !existing.endsWith("\n") ? "\n" : ""}AUDIT_SIGNING_KEY='${jwk}'\n`, { mode: 0o600 });
  return true;
}

function run(cmd, args) {
  const res = spawnSync(cmd, args, { cwd: root, stdio: "inherit", env: { ...process.env, CI: "true" } });
  if (res.status !== 0) throw new Error(`${cmd} ${args.join(" ")} exited with ${res.status}`);
}

/**
 * `group`: the child leads its own process group and is stopped as a group. wrangler runs as a
 * wrapper, a Node CLI and workerd processes; signalling only the wrapper can orphan the rest.
 */
function start(name, cmd, args, env, { group = false, onExit } = {}) {
  const child = spawn(cmd, args, { cwd: root, env, stdio: ["ignore", "pipe", "pipe"], detached: group });
  child.group = group;
  const prefix = (stream, out) => {
    let buf = "";
    stream.on("data", (chunk) => {
      buf += chunk;
      const lines = buf.split("\n");
      buf = lines.pop();
      for (const line of lines) out.write(`[${name}] ${line}\n`);
    });
  };
  prefix(child.stdout, process.stdout);
  prefix(child.stderr, process.stderr);
  child.on("exit", (code, signal) => {
    // Forget it: once reaped, its pid (and group id) may be handed to an unrelated process.
    children.splice(children.indexOf(child), 1);
    if (stopping) return;
    if (onExit) return onExit(code, signal);
    log(`${name} exited (${signal ?? code}); stopping everything`);
    shutdown(1);
  });
  children.push(child);
  return child;
}

async function waitForHealth(deadlineMs) {
  const deadline = Date.now() + deadlineMs;
  while (Date.now() < deadline) {
    try {
      const res = await fetch(`${url}/v1/health`);
      if (res.ok) return await res.json();
    } catch {
      // not up yet
    }
    await new Promise((r) => setTimeout(r, 500));
  }
  throw new Error(`the Worker did not answer ${url}/v1/health within ${deadlineMs / 1000}s`);
}

/**
 * The local runner's token is kept beside the local D1 state it is valid in (.wrangler/), so
 * restarts reuse one runner instead of minting a new one each time; wiping the state drops both.
 */
async function runnerToken(adminToken) {
  const file = join(stateDir, "crewplane-runner-token");
  const auth = { authorization: `Bearer ${adminToken}`, "content-type": "application/json" };
  if (existsSync(file)) {
    const token = readFileSync(file, "utf8").trim();
    const res = await fetch(`${url}/v1/admin/runners`, { headers: auth });
    const live = res.ok && (await res.json()).runners.some((r) => r.runner_id === token.split(".")[0] && !r.revoked_at);
    if (live) return token;
  }
  const res = await fetch(`${url}/v1/admin/runners`, {
    method: "POST",
    headers: auth,
    body: JSON.stringify({ name: `local-${hostname()}` }),
  });
  if (res.status !== 201) throw new Error(`could not create a runner token: ${res.status} ${await res.text()}`);
  const { token } = await res.json();
  writeFileSync(file, `${token}\n`, { mode: 0o600 });
  return token;
}

/** Fires each cron expression of wrangler.toml when it is due, through wrangler dev's test endpoint. */
function startCron() {
  const fire = async (cron) => {
    try {
      const res = await fetch(`${url}/cdn-cgi/handler/scheduled?cron=${encodeURIComponent(cron)}`);
      if (!res.ok) log(`cron ${cron} failed: ${res.status} ${await res.text()}`);
    } catch (err) {
      log(`cron ${cron} could not be fired: ${err.message}`);
    }
  };
  const tick = () => {
    const now = new Date();
    void fire("* * * * *");
    if (now.getUTCMinutes() === 0) void fire("0 * * * *");
  };
  const timer = setTimeout(
    function next() {
      tick();
      timers.push(setTimeout(next, 60_000 - (Date.now() % 60_000)));
    },
    60_000 - (Date.now() % 60_000),
  );
  timers.push(timer);
}
const timers = [];

function signal(child, sig) {
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  try {
    // A group leader is signalled with its whole group (negative pid).
    process.kill(child.group ? -child.pid : child.pid, sig);
  } catch {
    // already gone
  }
}

function shutdown(code) {
  if (stopping) return;
  stopping = true;
  timers.forEach(clearTimeout);
  clearTimeout(restartTimer);
  // The runner first, so it can hand its in-flight jobs back while the Worker is still up.
  const wranglerChild = children.find((child) => child !== runnerChild);
  const runner = runnerChild;
  const stop = (child) =>
    new Promise((r) => {
      if (!child || child.exitCode !== null || child.signalCode !== null) return r();
      child.once("exit", r);
      signal(child, "SIGTERM");
    });
  stop(runner)
    .then(() => stop(wranglerChild))
    .then(() => process.exit(code));
  setTimeout(() => {
    children.forEach((child) => signal(child, "SIGKILL"));
    process.exit(code);
  }, 15_000).unref();
}

/**
 * Starts the runner in its own process group (a terminal's Ctrl-C then reaches only us, and the
 * runner gets exactly one SIGTERM: a second would make it exit without handing its jobs back). The
 * token travels in the environment, never on the command line, where any user of the host could read it.
 */
function startRunner(env, failures = 0) {
  // Ctrl-C during startup (before the runner token came back) must not start a runner after the fact:
  // in its own process group, nothing would stop it.
  if (stopping) return;
  const startedAt = Date.now();
  runnerChild = start("runner", join(root, "local-runner", "bin", "crewplane-runner"), ["--url", url], env, {
    group: true,
    onExit(code, sig) {
      const ranMs = Date.now() - startedAt;
      const ran = `after ${(ranMs / 1000).toFixed(1)} s`;
      const decision = restartDecision({ code, signal: sig, ranMs, failures });
      if (!decision.restart) {
        log(`runner exited with ${describeExit(code, sig)} ${ran}: ${decision.reason}; not restarting it.`);
        log(`the Worker keeps running at ${url}; fix the cause and run npm start again (Ctrl-C stops everything).`);
        return;
      }
      const delay = decision.delayMs;
      log(`runner exited with ${describeExit(code, sig)} ${ran}; restarting it in ${delay / 1000} s (restart ${decision.failures})`);
      restartTimer = setTimeout(() => {
        if (!stopping) startRunner(env, decision.failures);
      }, delay);
    },
  });
  log(`runner started (pid ${runnerChild.pid})`);
}

/** Model runtimes in the order `npm start` suggests them for `model_work` (never `offline`: it judges nothing). */
const MODEL_RUNTIMES = ["claude", "codex", "antigravity", "grok"];

/**
 * Once the runner has leased (the Worker records what it offers), says whether the council's and
 * projects' model work is on, and if it is not but a model runtime is here, the one command that
 * turns it on. `CREWPLANE_MODEL_WORK=<runtime>` sets it instead.
 */
async function reportModelWork(adminToken) {
  const endpoint = `${url}/v1/config/model_work`;
  const headers = { authorization: `Bearer ${adminToken}`, "content-type": "application/json" };
  const wanted = process.env.CREWPLANE_MODEL_WORK?.trim();
  if (wanted) {
    const res = await fetch(endpoint, { method: "PUT", headers, body: JSON.stringify({ runtime: wanted }) });
    if (!res.ok) {
      log(`model work: CREWPLANE_MODEL_WORK=${wanted} was refused (${res.status}); use one of ${MODEL_RUNTIMES.join(", ")}`);
      return;
    }
  }
  // The runner records its runtimes on its first lease, a moment after it starts.
  let section;
  const deadline = Date.now() + 60_000;
  while (!stopping && Date.now() < deadline) {
    const res = await fetch(endpoint, { headers });
    if (res.ok) section = await res.json();
    if (section?.offered_runtimes?.length > 0) break;
    await new Promise((r) => setTimeout(r, 1_000));
  }
  if (stopping || !section) return;
  const models = MODEL_RUNTIMES.filter((r) => section.offered_runtimes.includes(r));
  if (section.runtime) {
    const offered = section.offered_runtimes.includes(section.runtime);
    log(
      offered
        ? `model work: on, on ${section.runtime} (prescreen, synthesis, ethics review, project decomposition)`
        : `model work: set to ${section.runtime}, which no runner offers yet; the stages fall back (runtime_not_offered) until one does`,
    );
  } else if (models.length > 0) {
    // One line: what is here, and the one command (or CREWPLANE_MODEL_WORK=<runtime> npm start) that turns it on.
    log(
      `model work is off; the runner offers ${models.join(", ")}. Turn it on: curl -X PUT ${endpoint} -H "authorization: Bearer ${adminToken}" -H 'content-type: application/json' -d '{"runtime":"${models[0]}"}'`,
    );
  } else {
    log("model work: no model CLI on PATH (the runner offers only offline); the council and projects use their offline fallbacks");
  }
}

process.on("SIGINT", () => shutdown(0));
process.on("SIGTERM", () => shutdown(0));

try {
  const admin = ensureAdminToken();
  if (ensureAuditKey()) log("generated AUDIT_SIGNING_KEY (audit checkpoints) into .dev.vars");
  log("applying D1 migrations (local)");
  run(wrangler, ["d1", "migrations", "apply", "DB", "--local", "--persist-to", stateDir]);
  log(`starting wrangler dev on ${url}`);
  const devArgs = ["dev", "--test-scheduled", "--ip", "127.0.0.1", "--port", String(port), "--persist-to", stateDir];
  // wrangler dev keeps every span of every request (with each D1 statement's SQL) in a SQLite store
  // under the state directory, on by default and never pruned: 6.7 MB per 1,500 health checks,
  // tens of MB a minute under a runner's load. Off unless asked for with X_LOCAL_OBSERVABILITY=true.
  const devEnv = { ...process.env, CI: "true", X_LOCAL_OBSERVABILITY: process.env.X_LOCAL_OBSERVABILITY ?? "false" };
  start("worker", wrangler, [...devArgs, "--show-interactive-dev-session=false"], devEnv, { group: true });
  const health = await waitForHealth(180_000);
  log(`worker is up: version ${health.version}, db ${health.db}`);
  startCron();

  const token = await runnerToken(admin.token);
  // The runner should see the user's own PATH: the project's node_modules/.bin holds a `claude`
  // devDependency (used for conformance tests) that is not the user's logged-in CLI.
  const userPath = (process.env.PATH ?? "")
    .split(delimiter)
    .filter((p) => !resolve(p).startsWith(join(root, "node_modules")))
    .join(delimiter);
  startRunner({ ...process.env, PATH: userPath, CREWPLANE_RUNNER_TOKEN: token });

  log("");
  log(`crewplane is running at ${url}`);
  log(`admin token${admin.generated ? " (generated into .dev.vars)" : " (from .dev.vars)"}: ${admin.token}`);
  log(`try: curl ${url}/v1/health`);
  log(
    `     curl -X POST ${url}/v1/admin/jobs -H "authorization: Bearer ${admin.token}" -H "content-type: application/json" -d '{"kind":"utility","runtime":"offline","prompt":"hello"}'`,
  );
  log("Ctrl-C stops everything.");
  reportModelWork(admin.token).catch((err) => log(`model work: could not be checked: ${err.message}`));
} catch (err) {
  log(`start failed: ${err.message}`);
  shutdown(1);
}
