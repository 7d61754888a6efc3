import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { delimiter, join, resolve } from "node:path";
import { createTestHarness } from "wrangler";
import { startContractProxy } from "./contract-proxy";

export const ROOT = resolve(import.meta.dirname, "../..");
export const ADMIN_TOKEN = "e2e-admin-token";

/** The Worker under wrangler's test harness: real workerd with local D1, Durable Objects and Queues. */
export async function startWorker(opts: { secrets?: Record<string, string> } = {}) {
  const server = createTestHarness({
    root: ROOT,
    workers: [{ configPath: "./wrangler.toml", vars: { ENVIRONMENT: "development" }, secrets: { ADMIN_TOKEN, ...opts.secrets } }],
  });
  const { url } = await server.listen();
  await server.getWorker().applyD1Migrations("DB");
  // Everyone reaches the Worker through a proxy that checks each answer against /openapi.json.
  const contract = await startContractProxy(url.toString().replace(/\/$/, ""));
  const base = contract.url;

  async function api(path: string, init: { method?: string; body?: unknown; token?: string } = {}) {
    const res = await fetch(`${base}${path}`, {
      method: init.method ?? (init.body === undefined ? "GET" : "POST"),
      headers: {
        authorization: `Bearer ${init.token ?? ADMIN_TOKEN}`,
        ...(init.body === undefined ? {} : { "content-type": "application/json" }),
      },
      body: init.body === undefined ? undefined : JSON.stringify(init.body),
    });
    const text = await res.text();
    return { status: res.status, body: (text ? JSON.parse(text) : null) as any };
  }

  /** Polls a diagnostic job until it reaches a terminal status. */
  async function waitForJob(jobId: string, timeoutMs = 90_000) {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const { body } = await api(`/v1/admin/jobs/${jobId}`);
      if (["completed", "failed", "dead"].includes(body.status)) return body;
      if (Date.now() > deadline) throw new Error(`job ${jobId} still ${body.status} after ${timeoutMs} ms`);
      await new Promise((r) => setTimeout(r, 250));
    }
  }

  /** Stops the stack; fails when any answer during the file broke the documented contract. */
  async function close() {
    await contract.close();
    await server.close();
    const violations = contract.violations();
    if (violations.length > 0) throw new Error(`Answers that broke the OpenAPI contract:\n${[...new Set(violations)].join("\n")}`);
  }

  return { server, base, api, waitForJob, contractViolations: contract.violations, close };
}

export interface RunnerProcess {
  child: ChildProcess;
  home: string;
  output: () => string;
  exited: Promise<number | null>;
  stop: () => Promise<number | null>;
}

/**
 * The real runner, started through its bin like a user would, with the fake CLIs first on PATH and
 * the project's node_modules/.bin removed (it holds the real, logged-out `claude`).
 */
export function startRunner(
  url: string,
  token: string,
  extraEnv: Record<string, string> = {},
  opts: { home?: string } = {},
): RunnerProcess {
  // A given home is reused (a runner restarted on the same host); otherwise a fresh one.
  const home = opts.home ?? mkdtempSync(join(tmpdir(), "crewplane-e2e-"));
  const path = [
    join(ROOT, "local-runner/fixtures/fake-clis"),
    ...(process.env.PATH ?? "").split(delimiter).filter((p) => !p.includes("node_modules")),
  ].join(delimiter);
  const child = spawn(join(ROOT, "local-runner/bin/crewplane-runner"), ["--url", url, "--home", home, "--concurrency", "2"], {
    // The token goes in the environment: a command line is readable by every user of the host.
    env: { ...process.env, PATH: path, CREWPLANE_RUNNER_TOKEN: token, ...extraEnv },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  child.stdout!.on("data", (d) => (out += d));
  child.stderr!.on("data", (d) => (out += d));
  const exited = new Promise<number | null>((r) => child.once("exit", (code) => r(code)));
  return {
    child,
    home,
    output: () => out,
    exited,
    stop: async () => {
      if (child.exitCode === null) child.kill("SIGTERM");
      const code = await exited;
      rmSync(home, { recursive: true, force: true });
      return code;
    },
  };
}
