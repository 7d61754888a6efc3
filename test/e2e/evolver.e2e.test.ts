import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startWorker } from "./stack";

/**
 * The published EvoMap node client (`@evomap/evolver`), started the way a new user starts it, pointed
 * at crewplane: it must register once, keep its identity, heartbeat with its secret, take its events
 * and claim work, and reach nothing but the hub (its optional features off). It needs Node ≥ 22.12
 * (the project's Node 22), git on PATH, and the package installed (a devDependency; or
 * EVOLVER_PACKAGE_DIR pointing at an unpacked copy).
 */

function evolverEntry(): { entry?: string; why?: string } {
  const dir =
    process.env.EVOLVER_PACKAGE_DIR ??
    (() => {
      try {
        return dirname(createRequire(import.meta.url).resolve("@evomap/evolver/package.json"));
      } catch {
        return undefined;
      }
    })();
  if (!dir || !existsSync(join(dir, "index.js")))
    return { why: "@evomap/evolver is not installed (add it as a devDependency, or set EVOLVER_PACKAGE_DIR)" };
  const [major, minor] = process.versions.node.split(".").map(Number) as [number, number];
  if (major < 22 || (major === 22 && minor < 12)) return { why: `the client needs Node ≥ 22.12; this is ${process.versions.node}` };
  try {
    execFileSync("git", ["--version"], { stdio: "ignore" });
  } catch {
    return { why: "the client's preflight needs git on PATH" };
  }
  return { entry: join(dir, "index.js") };
}

const found = evolverEntry();
const TASK_ID = "task_00000000000e2e01";
const NODE_ID = `node_${Array.from(crypto.getRandomValues(new Uint8Array(6)), (b) => b.toString(16).padStart(2, "0")).join("")}`;

async function eventually<T>(what: string, probe: () => Promise<T | undefined | null | false>, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 500));
  }
}

describe.skipIf(!found.entry)(`the published EvoMap client against crewplane${found.why ? ` (skipped: ${found.why})` : ""}`, () => {
  let stack: Awaited<ReturnType<typeof startWorker>>;
  let db: D1Like;
  let client: ChildProcess;
  let output = "";
  let home: string;

  interface D1Like {
    prepare(sql: string): { bind(...v: unknown[]): { first<T>(): Promise<T | null>; run(): Promise<unknown> } };
  }

  beforeAll(async () => {
    stack = await startWorker();
    db = ((await stack.server.getWorker().getEnv()) as { DB: D1Like }).DB;
    home = mkdtempSync(join(tmpdir(), "crewplane-evolver-"));
    execFileSync("git", ["init", "-q"], { cwd: home });
    client = spawn(process.execPath, [found.entry!, "--loop"], {
      cwd: home,
      // A clean environment: only what a user sets to point the client at crewplane, and its optional features off.
      env: {
        PATH: process.env.PATH ?? "",
        HOME: home,
        A2A_HUB_URL: stack.base,
        EVOMAP_HUB_ALLOW_INSECURE: "1",
        A2A_NODE_ID: NODE_ID,
        EVOLVER_MODEL_NAME: "claude-sonnet-4",
        EVOLVER_ATP: "off",
        EVOLVER_ATP_AUTOBUY: "off",
        EVOLVER_ATP_AUTODELIVER: "off",
        EVOLVER_VALIDATOR_ENABLED: "false",
        EVOLVE_BRIDGE: "false",
        EVOLVER_HEARTBEAT_FIRST_DELAY_MS: "1000",
        // Its evolution loop backs off up to 5 min between idle cycles (each cycle fetches tasks): keep it short.
        EVOLVER_MAX_SLEEP_MS: "5000",
        EVOLVE_PENDING_SLEEP_MS: "3000",
        // It skips its cycles while the host's load is over ~0.9 per core; a test machine often is.
        EVOLVE_LOAD_MAX: "1000",
        EVOLVER_DISABLE_OOM_ADJUST: "1",
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    client.stdout!.on("data", (d) => (output += d));
    client.stderr!.on("data", (d) => (output += d));
  });

  afterAll(async () => {
    if (client && client.exitCode === null) {
      const exited = new Promise((r) => client.once("exit", r));
      client.kill("SIGTERM");
      await Promise.race([exited, new Promise((r) => setTimeout(r, 5_000))]);
      if (client.exitCode === null) client.kill("SIGKILL");
    }
    await stack?.close();
    if (process.env.EVOLVER_E2E_LOG) writeFileSync(process.env.EVOLVER_E2E_LOG, output);
    if (home) rmSync(home, { recursive: true, force: true });
  });

  it("registers once under its own id, heartbeats with its secret, takes its events and claims work", async () => {
    const registered = await eventually("the client's hello", async () => {
      const { body } = await stack.api(`/v1/events?type=node.registered&subject=${NODE_ID}`);
      return body.events.length > 0 ? body.events : undefined;
    });
    expect(registered[0].payload).toMatchObject({ via: "a2a", model: "claude-sonnet-4", model_tier: 3 });
    // work for later: with standing (an admin's, here written directly), an open task to discover
    await db.prepare("UPDATE nodes SET reputation = 30 WHERE id = ?").bind(NODE_ID).run();
    const now = new Date();
    await db
      .prepare(
        `INSERT INTO swarm_tasks (id, title, body, status, created_at, expires_at, signals, updated_at)
         VALUES (?, 'Write the digest generator for council records', 'Generate it from the public trail.', 'open', ?, ?, ?, ?)`,
      )
      .bind(
        TASK_ID,
        now.toISOString(),
        new Date(now.getTime() + 30 * 86_400_000).toISOString(),
        JSON.stringify(["digest"]),
        now.toISOString(),
      )
      .run();

    // its heartbeat authenticates (a refused one would send it back to hello with rotate_secret)
    await eventually(
      "an accepted heartbeat",
      async () =>
        (await db.prepare("SELECT last_heartbeat_at AS t FROM nodes WHERE id = ?").bind(NODE_ID).first<{ t: string | null }>())?.t,
    );

    // an event for it is taken by its poll or its stream, and counted delivered
    await db
      .prepare("INSERT INTO node_events (node_id, type, payload, created_at) VALUES (?, 'council_invite', ?, ?)")
      .bind(NODE_ID, JSON.stringify({ deliberation_id: "delib_0123456789abcdef" }), new Date().toISOString())
      .run();
    const pending = await db.prepare("SELECT MAX(id) AS id FROM node_events WHERE node_id = ?").bind(NODE_ID).first<{ id: number }>();
    await eventually(
      "the event delivered",
      async () =>
        (await db.prepare("SELECT acked_through AS a FROM nodes WHERE id = ?").bind(NODE_ID).first<{ a: number }>())!.a >= pending!.id,
      90_000,
    );

    // it discovers the task (fetch, or the heartbeat's available_work) and claims it
    await eventually(
      "the client's claim",
      async () =>
        (await db.prepare("SELECT claimed_by AS c FROM swarm_tasks WHERE id = ?").bind(TASK_ID).first<{ c: string | null }>())?.c ===
        NODE_ID,
      90_000,
    );

    // one node all along: it never lost its secret and said hello again as someone new
    const nodes = await db.prepare("SELECT COUNT(*) AS n FROM nodes").bind().first<{ n: number }>();
    expect(nodes!.n).toBe(1);
    expect(output).not.toMatch(/auth failed|re-auth|node_id_already_claimed/);
  }, 240_000);
});
