/**
 * `crewplane-runner doctor`: one line per check, each problem with its fix. The CLIs are the fakes
 * (local-runner/fixtures/fake-clis) on a PATH of their own; the Worker is a small node:http stand-in.
 */
import { spawn } from "node:child_process";
import { chmodSync, mkdirSync, symlinkSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { doctorChecks, formatCheck, runDoctor } from "../../local-runner/src/doctor.ts";
import type { Check } from "../../local-runner/src/doctor.ts";
import { fakeClis, runnerBin, tempDir } from "./helpers/paths.ts";

const TOKEN = "rn_doctor.0123456789abcdef";
const cleanups: Array<() => unknown> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function scratch(): string {
  const { dir, cleanup } = tempDir("crewplane-doctor-");
  cleanups.push(cleanup);
  return dir;
}

interface WorkerReplies {
  health?: { status: number; body?: unknown };
  /** Status of the runner call for the right token; a wrong token always gets 401. */
  runner?: number;
}

/** The Worker's two endpoints doctor calls: GET /v1/health and a runner no-op. */
async function worker(replies: WorkerReplies = {}): Promise<string> {
  const server = createServer((req, res) => {
    const send = (status: number, body?: unknown) => {
      res.writeHead(status, { "content-type": status >= 400 ? "application/problem+json" : "application/json" });
      res.end(body === undefined ? "" : JSON.stringify(body));
    };
    if (req.method === "GET" && req.url === "/v1/health") {
      const health = replies.health ?? {
        status: 200,
        body: { ok: true, version: "0.1.0", db: "ok", environment: "production", now: new Date().toISOString() },
      };
      return send(health.status, health.body);
    }
    if (req.method === "POST" && /^\/v1\/runner\/polls\/doctor-[0-9a-f]{16}\/cancel$/.test(req.url ?? "")) {
      if (req.headers.authorization !== `Bearer ${TOKEN}`) return send(401, { code: "unauthorized", status: 401, detail: "invalid token" });
      return send(replies.runner ?? 200, { released: 0 });
    }
    return send(404, { code: "not_found", status: 404 });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  cleanups.push(() => new Promise((resolve) => server.close(resolve)));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** A PATH holding only node and the chosen CLIs (fakes, or scripts given by content). */
function binDir(clis: Partial<Record<string, string | { script: string }>>): string {
  const dir = join(scratch(), "bin");
  mkdirSync(dir);
  symlinkSync(process.execPath, join(dir, "node"));
  for (const [name, target] of Object.entries(clis)) {
    if (typeof target === "string") symlinkSync(target, join(dir, name));
    else if (target) {
      writeFileSync(join(dir, name), target.script);
      chmodSync(join(dir, name), 0o755);
    }
  }
  return dir;
}

function tokenFile(mode = 0o600, content = `${TOKEN}\n`): string {
  const file = join(scratch(), "runner-token");
  writeFileSync(file, content, { mode });
  chmodSync(file, mode);
  return file;
}

const byName = (checks: Check[]) => Object.fromEntries(checks.map((c) => [c.name, c]));

describe("crewplane-runner doctor", () => {
  it("passes a ready host: every check ok, exit 0", async () => {
    const url = await worker();
    const home = scratch();
    const path = binDir({ claude: fakeClis.claude, codex: fakeClis.codex });
    const out: string[] = [];
    const code = await runDoctor({ url, token: { kind: "file", path: tokenFile() } }, { env: { PATH: path, HOME: home }, home }, (t) =>
      out.push(t),
    );
    const text = out.join("");
    expect(code, text).toBe(0);
    for (const line of [
      /^ok {6}node: Node \d+/m,
      /^ok {6}token: read from .* \(mode 600\)$/m,
      /^ok {6}worker: http:\/\/127\.0\.0\.1:\d+ answers \(version 0\.1\.0, production environment\)$/m,
    ]) {
      expect(text).toMatch(line);
    }
    expect(text).toMatch(/^ok {6}token accepted: the Worker accepts this runner token$/m);
    expect(text).toMatch(/^ok {6}claude: 2\.1\.332 \(Claude Code\)/m);
    expect(text).toMatch(/^ok {6}claude login: logged in \(claude\.ai\)$/m);
    expect(text).toMatch(/^ok {6}codex login: Logged in using ChatGPT$/m);
    expect(text).toMatch(/^skip {4}grok: not on PATH; the runner will not use it$/m);
    expect(text).toContain("No problems found.");
  });

  it("reports each problem of the host with its fix, and exits 1", async () => {
    const url = await worker();
    const home = scratch();
    const file = tokenFile(0o644);
    const path = binDir({
      claude: fakeClis.claude,
      codex: fakeClis.codex,
      gemini: fakeClis.gemini,
      // Installed but broken: its --version fails.
      grok: { script: "#!/bin/sh\necho 'grok: error while loading shared libraries: libssl.so.3' >&2\nexit 127\n" },
    });
    const out: string[] = [];
    const code = await runDoctor(
      { url, token: { kind: "file", path: file } },
      { env: { PATH: path, HOME: home, FAKE_CLAUDE_SCENARIO: "auth", FAKE_CODEX_SCENARIO: "auth" }, home },
      (t) => out.push(t),
    );
    const text = out.join("");
    expect(code, text).toBe(1);
    const lines = text.split("\n");
    const line = (name: string) => lines.find((l) => l.includes(` ${name}: `)) ?? "";
    expect(line("token")).toBe(`problem token: token file ${file} is accessible to other users (mode 644)  → fix: chmod 600 ${file}`);
    expect(line("token accepted")).toMatch(/^skip/);
    expect(line("claude login")).toBe(
      "problem claude login: not logged in  → fix: run `claude auth login` as this user (or put ANTHROPIC_API_KEY in the service's environment file)",
    );
    expect(line("codex login")).toMatch(/^problem codex login: Not logged in {2}→ fix: run `codex login`/);
    expect(line("gemini login")).toMatch(/^problem gemini login: no auth method.* {2}→ fix: put GEMINI_API_KEY/);
    expect(line("grok")).toMatch(
      /^problem grok: .*--version failed: grok: error while loading shared libraries.* {2}→ fix: reinstall grok/,
    );
    expect(text).toContain("5 problem(s) found.");
  });

  it.each<[string, WorkerReplies | "down" | "no-url", RegExp, RegExp]>([
    ["no URL", "no-url", /no Worker URL/, /pass --url <base>/],
    ["nothing listening", "down", /cannot reach http:\/\/127\.0\.0\.1:\d+\/v1\/health \(ECONNREFUSED\)/, /is the Worker deployed/],
    [
      "something else at the URL",
      { health: { status: 404, body: { error: "nope" } } },
      /answered 404: this is not a crewplane Worker/,
      /check --url/,
    ],
    [
      "a Worker whose database is down",
      { health: { status: 503, body: { ok: false, version: "0.1.0", db: "error" } } },
      /its database does not/,
      /npm run deploy/,
    ],
    ["a token the Worker rejects", { runner: 401 }, /rejected the token \(401\)/, /create a new one \(POST \/v1\/admin\/runners/],
    ["a token that is not a runner's", { runner: 403 }, /not a runner token \(403\)/, /create a runner token/],
  ])("reports %s with its fix", async (_label, replies, problem, fix) => {
    let url: string | undefined;
    if (replies === "down") {
      url = await worker();
      await cleanups.pop()!(); // closed: the port answers nothing now
    } else if (replies !== "no-url") url = await worker(replies);
    const checks = await doctorChecks(
      { ...(url ? { url } : {}), token: { kind: "env", token: TOKEN } },
      { env: { PATH: binDir({}) }, home: scratch() },
    );
    const failed = checks.filter((c) => c.status === "problem");
    expect(failed, JSON.stringify(checks)).toHaveLength(1);
    expect(formatCheck(failed[0]!)).toMatch(problem);
    expect(failed[0]!.fix).toMatch(fix);
  });

  it("reports a missing token, a missing token file, a runtime asked for but not installed, and an old Node", async () => {
    const env = { PATH: binDir({}) };
    const none = byName(
      await doctorChecks({ url: "http://127.0.0.1:9" }, { env, home: scratch(), fetch: () => Promise.reject(new Error("offline")) }),
    );
    expect(none.token).toMatchObject({ status: "problem", fix: expect.stringContaining("POST /v1/admin/runners") });

    const missing = join(scratch(), "nope", "runner-token");
    const checks = byName(
      await doctorChecks(
        { token: { kind: "file", path: missing }, runtimes: ["offline", "claude"] },
        { env, home: scratch(), nodeVersion: "20.11.1", nodePath: "/usr/bin/node" },
      ),
    );
    expect(checks.token).toMatchObject({ status: "problem", detail: `token file ${missing} does not exist` });
    expect(checks.token!.fix).toContain(`> ${missing}`);
    expect(checks.claude).toMatchObject({ status: "problem", detail: "--runtimes asks for claude, but claude is not on PATH" });
    expect(checks.node).toMatchObject({ status: "problem", detail: expect.stringContaining("Node 20.11.1 is too old") });
    expect(checks.node!.fix).toContain("npm install");
  });

  it("runs from the launcher: exit 0 for a ready host, 1 with the problem and its fix otherwise", async () => {
    const path = binDir({ claude: fakeClis.claude });
    const run = async (url: string, file: string) => {
      const child = spawn(runnerBin, ["doctor", "--url", url, "--token-file", file], {
        cwd: "/",
        env: { PATH: path, HOME: scratch() },
        stdio: ["ignore", "pipe", "pipe"],
      });
      let stdout = "";
      child.stdout.on("data", (c) => (stdout += c));
      child.stderr.resume();
      const code = await new Promise<number | null>((resolve) => child.on("close", resolve));
      return { code, stdout };
    };
    const good = await run(await worker(), tokenFile());
    expect(good.code, good.stdout).toBe(0);
    expect(good.stdout).toContain("ok      token accepted");
    const revoked = await run(await worker(), tokenFile(0o600, "rn_revoked.ffff\n"));
    expect(revoked.code).toBe(1);
    expect(revoked.stdout).toMatch(/problem token accepted: the Worker rejected the token \(401\).*→ fix: create a new one/);
  });
});
