/**
 * The runner as a service: `--token-file` (owner-only, or refused with the chmod fix) and
 * `crewplane-runner install-service` (a systemd user unit or a launchd agent that starts the
 * launcher by absolute path and reads the token from that file).
 */
import { spawn } from "node:child_process";
import type { ChildProcess } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { parseCli } from "../../local-runner/src/cli.ts";
import type { ServiceOptions } from "../../local-runner/src/cli.ts";
import { UsageError } from "../../local-runner/src/errors.ts";
import { installService, launchdPlist, systemdUnit } from "../../local-runner/src/service.ts";
import { startFakeServer } from "./helpers/fake-server.ts";
import { runnerBin, tempDir } from "./helpers/paths.ts";
import { waitFor } from "./helpers/processes.ts";

const cleanups: Array<() => unknown> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function scratch(): string {
  const { dir, cleanup } = tempDir("crewplane-service-");
  cleanups.push(cleanup);
  return dir;
}

function start(args: string[], env: NodeJS.ProcessEnv): { child: ChildProcess; output: () => string; exited: Promise<number | null> } {
  const child = spawn(runnerBin, args, {
    cwd: "/",
    env: { PATH: process.env.PATH, HOME: scratch(), ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  child.stdout!.on("data", (c) => (output += c));
  child.stderr!.on("data", (c) => (output += c));
  const exited = new Promise<number | null>((resolve) => child.on("close", resolve));
  cleanups.push(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  });
  return { child, output: () => output, exited };
}

const service = (over: Partial<ServiceOptions> = {}): ServiceOptions => ({
  url: "https://crewplane-production.example.workers.dev",
  tokenFile: "/home/ops/.config/crewplane/runner-token",
  home: "/home/ops/.crewplane",
  concurrency: 2,
  kind: "systemd",
  print: false,
  ...over,
});
const ctx = {
  launcher: "/opt/crewplane/local-runner/bin/crewplane-runner",
  path: "/home/ops/.local/bin:/usr/bin:/bin",
  home: "/home/ops",
  env: {},
};

describe("parsing the service commands", () => {
  it("reads the token file from --token-file or CREWPLANE_RUNNER_TOKEN_FILE; flags win, one token source at a time", () => {
    expect(parseCli(["--url", "http://a", "--token-file", "/t"], {})).toMatchObject({ command: "run", tokenFile: "/t" });
    expect(parseCli(["--url", "http://a"], { CREWPLANE_RUNNER_TOKEN_FILE: "/t" })).toMatchObject({ command: "run", tokenFile: "/t" });
    // A token in the environment wins over a file in the environment; a flag wins over both.
    expect(parseCli(["--url", "http://a"], { CREWPLANE_RUNNER_TOKEN: "v", CREWPLANE_RUNNER_TOKEN_FILE: "/t" })).toMatchObject({
      options: { token: "v" },
    });
    expect(parseCli(["--url", "http://a", "--token-file", "/f"], { CREWPLANE_RUNNER_TOKEN: "v" })).toMatchObject({ tokenFile: "/f" });
    expect(() => parseCli(["--url", "http://a", "--token", "t", "--token-file", "/t"], {})).toThrow(/not both/);
  });

  it("never takes a token on the install-service command line, and picks the unit kind of the system", () => {
    expect(() => parseCli(["install-service", "--url", "http://a", "--token", "t"], {})).toThrow(UsageError);
    const linux = parseCli(["install-service", "--url", "http://a/"], { XDG_CONFIG_HOME: "/cfg" }, "linux");
    expect(linux).toMatchObject({
      command: "install-service",
      options: { kind: "systemd", url: "http://a", tokenFile: "/cfg/crewplane/runner-token" },
    });
    expect(parseCli(["install-service", "--url", "http://a"], {}, "darwin")).toMatchObject({ options: { kind: "launchd" } });
    expect(() => parseCli(["install-service", "--url", "http://a", "--kind", "upstart"], {})).toThrow(/systemd or launchd/);
  });

  it("lets doctor start without a URL or token, to report them", () => {
    expect(parseCli(["doctor"], {})).toEqual({ command: "doctor", options: {} });
    expect(parseCli(["doctor", "--token-file", "/t", "--runtimes", "claude"], { CREWPLANE_URL: "https://x" })).toEqual({
      command: "doctor",
      options: { url: "https://x", token: { kind: "file", path: "/t" }, runtimes: ["claude"] },
    });
  });
});

describe("the unit files", () => {
  it("a systemd user unit starts the launcher by absolute path with --token-file, and holds no token", () => {
    const unit = systemdUnit(service({ runtimes: ["offline", "claude"] }), ctx);
    expect(unit).toContain(
      "ExecStart=/opt/crewplane/local-runner/bin/crewplane-runner --url https://crewplane-production.example.workers.dev --token-file /home/ops/.config/crewplane/runner-token --home /home/ops/.crewplane --concurrency 2 --runtimes offline,claude",
    );
    expect(unit).toContain('Environment="PATH=/home/ops/.local/bin:/usr/bin:/bin"');
    expect(unit).toContain("EnvironmentFile=-/home/ops/.config/crewplane/runner.env");
    expect(unit).toContain("RestartPreventExitStatus=2 3");
    expect(unit).toContain("KillMode=mixed");
    expect(unit).toContain("WantedBy=default.target");
    expect(unit).not.toMatch(/CREWPLANE_RUNNER_TOKEN=|--token /);
  });

  it("quotes what systemd would split or expand", () => {
    const unit = systemdUnit(service({ home: "/home/ops/crew plane", tokenFile: "/home/ops/100%/token" }), { ...ctx, path: "/a b:/c%d" });
    expect(unit).toContain('--home "/home/ops/crew plane"');
    expect(unit).toContain('--token-file "/home/ops/100%%/token"');
    expect(unit).toContain('Environment="PATH=/a b:/c%%d"');
  });

  it("a launchd agent runs the same command, restarts after a crash, and escapes XML", () => {
    const plist = launchdPlist(service({ kind: "launchd", home: "/Users/ops/a&b" }), { ...ctx, home: "/Users/ops" });
    expect(plist).toContain("<string>dev.crewplane.runner</string>");
    expect(plist).toContain("    <string>/opt/crewplane/local-runner/bin/crewplane-runner</string>\n    <string>--url</string>");
    expect(plist).toContain("<string>--token-file</string>\n    <string>/home/ops/.config/crewplane/runner-token</string>");
    expect(plist).toContain("<string>/Users/ops/a&#38;b</string>");
    expect(plist).toMatch(/<key>KeepAlive<\/key>\s*<dict>\s*<key>SuccessfulExit<\/key>\s*<false\/>/);
    expect(plist).toContain("<string>/Users/ops/Library/Logs/crewplane-runner.log</string>");
  });

  it("--print only prints", () => {
    const dir = scratch();
    const out: string[] = [];
    installService(service({ print: true, dir, tokenFile: join(dir, "missing") }), ctx, (t) => out.push(t));
    expect(out.join("")).toContain("[Service]");
    expect(existsSync(join(dir, "crewplane-runner.service"))).toBe(false);
  });
});

describe("crewplane-runner install-service", () => {
  it("writes the token from the environment to a 600 file, then the unit, and prints how to start it", async () => {
    const dir = scratch();
    const tokenFile = join(dir, "config", "crewplane", "runner-token");
    const units = join(dir, "units");
    const run = start(["install-service", "--url", "https://cp.example", "--token-file", tokenFile, "--dir", units, "--kind", "systemd"], {
      CREWPLANE_RUNNER_TOKEN: "rn_service.secret",
    });
    expect(await run.exited, run.output()).toBe(0);
    expect(readFileSync(tokenFile, "utf8")).toBe("rn_service.secret\n");
    expect(statSync(tokenFile).mode & 0o777).toBe(0o600);
    expect(statSync(join(dir, "config", "crewplane")).mode & 0o777).toBe(0o700);
    const unit = readFileSync(join(units, "crewplane-runner.service"), "utf8");
    expect(unit).toContain(`ExecStart=${runnerBin} --url https://cp.example --token-file ${tokenFile} `);
    expect(unit).not.toContain("rn_service.secret");
    expect(run.output()).toContain("systemctl --user enable --now crewplane-runner.service");
    expect(run.output()).toContain("loginctl enable-linger");
  });

  it("refuses a token file other users can read, with the chmod fix, and writes no unit", async () => {
    const dir = scratch();
    const tokenFile = join(dir, "runner-token");
    writeFileSync(tokenFile, "rn_x.y\n");
    chmodSync(tokenFile, 0o640);
    const run = start(["install-service", "--url", "https://cp.example", "--token-file", tokenFile, "--dir", join(dir, "units")], {});
    expect(await run.exited).toBe(2);
    expect(run.output()).toContain(`is accessible to other users (mode 640); fix: chmod 600 ${tokenFile}`);
    expect(existsSync(join(dir, "units"))).toBe(false);
  });

  it("refuses to go on without a token, saying how to give one", async () => {
    const dir = scratch();
    const run = start(
      ["install-service", "--url", "https://cp.example", "--token-file", join(dir, "none"), "--dir", join(dir, "units")],
      {},
    );
    expect(await run.exited).toBe(2);
    expect(run.output()).toContain("does not exist");
    expect(run.output()).toContain("CREWPLANE_RUNNER_TOKEN");
  });
});

describe("the runner with --token-file", () => {
  it("authenticates with the token read from the file", async () => {
    const server = await startFakeServer();
    cleanups.push(() => server.close());
    const dir = scratch();
    const tokenFile = join(dir, "runner-token");
    writeFileSync(tokenFile, `${server.token}\n`, { mode: 0o600 });
    mkdirSync(join(dir, "home"));
    const run = start(["--url", server.url, "--token-file", tokenFile, "--home", join(dir, "home"), "--runtimes", "offline"], {});
    const lease = await waitFor(() => server.requests.find((r) => r.path === "/v1/runner/lease"), "a lease call", 20_000);
    expect(lease.authorization).toBe(`Bearer ${server.token}`);
    run.child.kill("SIGTERM");
    expect(await run.exited).toBe(0);
    expect(run.output()).not.toContain("token_on_command_line");
  });

  it("exits 2 with the chmod fix when the file is group-readable", async () => {
    const dir = scratch();
    const tokenFile = join(dir, "runner-token");
    writeFileSync(tokenFile, "rn_x.y\n");
    chmodSync(tokenFile, 0o644);
    const run = start(["--url", "http://127.0.0.1:9", "--token-file", tokenFile], {});
    expect(await run.exited).toBe(2);
    expect(run.output()).toContain(`chmod 600 ${tokenFile}`);
  });
});
