/**
 * `crewplane-runner doctor`: is this host ready to run jobs? One line per check, each problem with
 * its fix; exit 1 when there is any problem. Nothing here spends a model call: the CLIs are asked
 * for their version and their login state only, and the Worker for a no-op.
 *
 * Login state, per CLI (see /work/shared/reference/model-clis.md and the comments below):
 * - claude: `claude auth status` prints JSON `{"loggedIn": …, "authMethod": …}`, exit 0 when logged
 *   in and 1 when not (observed, Claude Code 2.1.332; ANTHROPIC_API_KEY counts as logged in).
 * - codex: `codex login status` exits 0 ("Logged in using ChatGPT" / "… an API key") or 1 ("Not
 *   logged in", observed 0.171.0); `codex exec` also takes CODEX_API_KEY / OPENAI_API_KEY. A revoked
 *   login still reads as logged in.
 * - gemini: no status command; it needs GEMINI_API_KEY, GOOGLE_GENAI_USE_VERTEXAI, GOOGLE_GENAI_USE_GCA
 *   or `security.auth.selectedType` in ~/.gemini/settings.json (its own non-interactive check).
 * - agy, grok: no documented status command; reported as unknown unless an API key is set (grok).
 */
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { parseUrl } from "./cli.ts";
import type { DoctorOptions } from "./cli.ts";
import { EXIT_CODES } from "./errors.ts";
import { findExecutable } from "./find-executable.ts";
import { CLI_RUNTIMES } from "./runtimes/index.ts";
import { checkTokenFile } from "./token-file.ts";

export type CheckStatus = "ok" | "problem" | "warn" | "skip";
export interface Check {
  name: string;
  status: CheckStatus;
  detail: string;
  fix?: string;
}

export interface ExecResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

export interface DoctorDeps {
  env: NodeJS.ProcessEnv;
  fetch: typeof fetch;
  exec(file: string, args: string[], env: NodeJS.ProcessEnv): Promise<ExecResult>;
  nodeVersion: string;
  nodePath: string;
  home: string;
}

const MIN_NODE: readonly [number, number] = [22, 18];
const TIMEOUT_MS = 15_000;

function withDefaults(deps: Partial<DoctorDeps>): DoctorDeps {
  return {
    env: process.env,
    fetch,
    exec: execCapture,
    nodeVersion: process.versions.node,
    nodePath: process.execPath,
    home: homedir(),
    ...deps,
  };
}

/** Runs a program to its end (or TIMEOUT_MS), stdin closed, capturing both streams. */
function execCapture(file: string, args: string[], env: NodeJS.ProcessEnv): Promise<ExecResult> {
  return new Promise((resolve) => {
    const child = spawn(file, args, { env, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    const timer = setTimeout(() => child.kill("SIGKILL"), TIMEOUT_MS);
    child.stdout.on("data", (c: Buffer) => (stdout += c.toString()));
    child.stderr.on("data", (c: Buffer) => (stderr += c.toString()));
    child.on("error", (err) => {
      clearTimeout(timer);
      resolve({ code: null, stdout, stderr: err.message });
    });
    child.on("close", (code, signal) => {
      clearTimeout(timer);
      resolve({
        code,
        stdout,
        stderr: signal === "SIGKILL" && code === null ? `${stderr}(no answer within ${TIMEOUT_MS / 1000}s)` : stderr,
      });
    });
  });
}

const firstLine = (text: string): string => text.trim().split("\n")[0]?.trim() ?? "";

function nodeCheck(deps: DoctorDeps): Check {
  const [major = 0, minor = 0] = deps.nodeVersion.split(".").map(Number);
  const ok = major > MIN_NODE[0] || (major === MIN_NODE[0] && minor >= MIN_NODE[1]);
  return ok
    ? { name: "node", status: "ok", detail: `Node ${deps.nodeVersion} (${deps.nodePath})` }
    : {
        name: "node",
        status: "problem",
        detail: `Node ${deps.nodeVersion} is too old; the runner needs ${MIN_NODE.join(".")} or later`,
        fix: "run `npm install` in the repository (it installs the project's Node 22), or put Node >= 22.18 on PATH",
      };
}

function tokenCheck(options: DoctorOptions): { check: Check; token?: string } {
  const ref = options.token;
  if (!ref) {
    return {
      check: {
        name: "token",
        status: "problem",
        detail: "no runner token (no --token-file, CREWPLANE_RUNNER_TOKEN_FILE or CREWPLANE_RUNNER_TOKEN)",
        fix: "create one (POST /v1/admin/runners as an admin), write it to ~/.config/crewplane/runner-token with mode 600, pass --token-file",
      },
    };
  }
  if (ref.kind === "file") {
    const file = checkTokenFile(ref.path);
    if (!file.ok) return { check: { name: "token", status: "problem", detail: file.problem, fix: file.fix } };
    return {
      check: { name: "token", status: "ok", detail: `read from ${ref.path} (mode ${file.mode.toString(8).padStart(3, "0")})` },
      token: file.token,
    };
  }
  if (ref.kind === "flag") {
    return {
      check: {
        name: "token",
        status: "warn",
        detail: "given with --token: every user of this host can read it on the command line",
        fix: "put it in a file with mode 600 and pass --token-file",
      },
      token: ref.token,
    };
  }
  return { check: { name: "token", status: "ok", detail: "from CREWPLANE_RUNNER_TOKEN" }, token: ref.token };
}

async function workerChecks(options: DoctorOptions, token: string | undefined, deps: DoctorDeps): Promise<Check[]> {
  if (!options.url) {
    return [
      {
        name: "worker",
        status: "problem",
        detail: "no Worker URL",
        fix: "pass --url <base> (or set CREWPLANE_URL): the URL npm run deploy printed",
      },
    ];
  }
  let base: string;
  try {
    base = parseUrl(options.url);
  } catch (err) {
    return [
      {
        name: "worker",
        status: "problem",
        detail: (err as Error).message,
        fix: "pass the Worker's base URL, e.g. https://crewplane-production.<you>.workers.dev",
      },
    ];
  }
  const health = `${base}/v1/health`;
  let response: Response;
  try {
    response = await deps.fetch(health, { signal: AbortSignal.timeout(TIMEOUT_MS) });
  } catch (err) {
    const cause = (err as { cause?: { code?: string; message?: string } }).cause;
    return [
      {
        name: "worker",
        status: "problem",
        detail: `cannot reach ${health} (${cause?.code ?? cause?.message ?? (err as Error).message})`,
        fix: "check the URL, DNS, proxy and firewall of this host; is the Worker deployed (npm run deploy) or running (npm start)?",
      },
      { name: "token accepted", status: "skip", detail: "the Worker is not reachable" },
    ];
  }
  const body = (await response.json().catch(() => undefined)) as
    { ok?: boolean; version?: string; environment?: string; db?: string } | undefined;
  const checks: Check[] = [];
  if (response.status === 200 && body?.ok === true) {
    checks.push({
      name: "worker",
      status: "ok",
      detail: `${base} answers (version ${body.version}, ${body.environment ?? "unknown"} environment)`,
    });
  } else if (response.status === 503 && body?.db === "error") {
    checks.push({
      name: "worker",
      status: "problem",
      detail: `${base} answers but its database does not`,
      fix: "check the D1 binding and its migrations: npm run deploy (it applies what is missing), then npx wrangler tail --env production",
    });
  } else {
    return [
      {
        name: "worker",
        status: "problem",
        detail: `${health} answered ${response.status}${body ? "" : ", not JSON"}: this is not a crewplane Worker`,
        fix: "check --url: the base URL npm run deploy printed (or http://127.0.0.1:8787 for npm start), without a path",
      },
      { name: "token accepted", status: "skip", detail: "no crewplane Worker to ask" },
    ];
  }
  if (!token) return [...checks, { name: "token accepted", status: "skip", detail: "no token to try" }];
  // A runner call that changes nothing: cancelling a long-poll that never existed.
  const probe = `${base}/v1/runner/polls/doctor-${randomBytes(8).toString("hex")}/cancel`;
  let status: number;
  try {
    status = (
      await deps.fetch(probe, {
        method: "POST",
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
        body: "{}",
        signal: AbortSignal.timeout(TIMEOUT_MS),
      })
    ).status;
  } catch (err) {
    return [
      ...checks,
      { name: "token accepted", status: "problem", detail: `the runner call failed: ${(err as Error).message}`, fix: "run doctor again" },
    ];
  }
  if (status === 200) checks.push({ name: "token accepted", status: "ok", detail: "the Worker accepts this runner token" });
  else if (status === 401) {
    checks.push({
      name: "token accepted",
      status: "problem",
      detail: "the Worker rejected the token (401): revoked, mistyped, or made by another Worker",
      fix: "create a new one (POST /v1/admin/runners on this Worker) and write it to the token file",
    });
  } else if (status === 403) {
    checks.push({
      name: "token accepted",
      status: "problem",
      detail: "the token is not a runner token (403): an operator's or the admin token?",
      fix: 'create a runner token: POST /v1/admin/runners {"name": "<host>"} as an admin',
    });
  } else
    checks.push({
      name: "token accepted",
      status: "problem",
      detail: `the runner call answered ${status}`,
      fix: "run doctor again; if it persists, see the Worker's logs",
    });
  return checks;
}

type LoginCheck = (exe: string, deps: DoctorDeps) => Promise<Omit<Check, "name">>;

const hasEnv = (deps: DoctorDeps, ...names: string[]): string | undefined => names.find((n) => deps.env[n]);

const LOGIN_CHECKS: Record<string, LoginCheck> = {
  async claude(exe, deps) {
    const r = await deps.exec(exe, ["auth", "status"], deps.env);
    let status: { loggedIn?: boolean; authMethod?: string } | undefined;
    try {
      status = JSON.parse(r.stdout) as typeof status;
    } catch {
      status = undefined;
    }
    if (r.code === 0 && status?.loggedIn) return { status: "ok", detail: `logged in (${status.authMethod ?? "unknown method"})` };
    if (status?.loggedIn === false) {
      return {
        status: "problem",
        detail: "not logged in",
        fix: "run `claude auth login` as this user (or put ANTHROPIC_API_KEY in the service's environment file)",
      };
    }
    return {
      status: "warn",
      detail: `could not read \`claude auth status\`: ${firstLine(r.stderr || r.stdout) || `exit ${r.code}`}`,
      fix: "run `claude auth status` yourself",
    };
  },
  async codex(exe, deps) {
    const key = hasEnv(deps, "CODEX_API_KEY", "OPENAI_API_KEY");
    if (key) return { status: "ok", detail: `API key from ${key}` };
    const r = await deps.exec(exe, ["login", "status"], deps.env);
    // Its answer, without the warnings codex prints around it (a temporary CODEX_HOME, say).
    const said = `${r.stdout}\n${r.stderr}`
      .split("\n")
      .map((l) => l.trim())
      .find((l) => l && !l.startsWith("WARNING"));
    if (r.code === 0) return { status: "ok", detail: said || "logged in" };
    return {
      status: "problem",
      detail: said || "not logged in",
      fix: "run `codex login` as this user (or `printenv OPENAI_API_KEY | codex login --with-api-key`)",
    };
  },
  async gemini(_exe, deps) {
    const key = hasEnv(deps, "GEMINI_API_KEY", "GOOGLE_GENAI_USE_VERTEXAI", "GOOGLE_GENAI_USE_GCA");
    if (key) return { status: "ok", detail: `auth from ${key}` };
    const settings = join(deps.env.GEMINI_CLI_HOME || deps.home, ".gemini", "settings.json");
    let selected: string | undefined;
    try {
      const json = JSON.parse(readFileSync(settings, "utf8")) as {
        security?: { auth?: { selectedType?: string } };
        selectedAuthType?: string;
      };
      selected = json.security?.auth?.selectedType ?? json.selectedAuthType;
    } catch {
      selected = undefined;
    }
    if (selected) return { status: "ok", detail: `auth method ${selected} (${settings})` };
    return {
      status: "problem",
      detail: "no auth method: headless runs fail with exit 41",
      fix: "put GEMINI_API_KEY in the service's environment file, or run `gemini` once and choose how to sign in",
    };
  },
  async agy() {
    return {
      status: "warn",
      detail: "login not checked: agy has no documented status command",
      fix: "if its jobs fail not_logged_in, sign in with agy as this user",
    };
  },
  async grok(_exe, deps) {
    if (hasEnv(deps, "XAI_API_KEY")) return { status: "ok", detail: "API key from XAI_API_KEY" };
    return {
      status: "warn",
      detail: "login not checked: grok has no status command and XAI_API_KEY is not set",
      fix: "if its jobs fail not_logged_in, run `grok login` as this user or put XAI_API_KEY in the service's environment file",
    };
  },
};

async function cliChecks(options: DoctorOptions, deps: DoctorDeps): Promise<Check[]> {
  const checks: Check[] = [];
  const wanted = (runtime: string): boolean => !options.runtimes || options.runtimes.includes(runtime);
  const found = new Set<string>();
  for (const adapter of CLI_RUNTIMES) {
    if (!wanted(adapter.name)) continue;
    const exe = findExecutable(adapter.command, deps.env.PATH);
    if (!exe) {
      checks.push({ name: adapter.command, status: "skip", detail: "not on PATH; the runner will not use it" });
      continue;
    }
    found.add(adapter.name);
    const version = await deps.exec(exe, ["--version"], deps.env);
    if (version.code !== 0) {
      checks.push({
        name: adapter.command,
        status: "problem",
        detail: `${exe} --version failed: ${firstLine(version.stderr || version.stdout) || `exit ${version.code}`}`,
        fix: `reinstall ${adapter.command}, or take its directory off PATH`,
      });
      continue;
    }
    checks.push({ name: adapter.command, status: "ok", detail: `${firstLine(version.stdout || version.stderr)} (${exe})` });
    const login = LOGIN_CHECKS[adapter.command];
    if (login) checks.push({ name: `${adapter.command} login`, ...(await login(exe, deps)) });
  }
  // A runtime asked for by name but with no executable at all is a problem; otherwise only a note.
  for (const runtime of options.runtimes ?? []) {
    if (runtime === "offline" || found.has(runtime)) continue;
    const commands = CLI_RUNTIMES.filter((a) => a.name === runtime).map((a) => a.command);
    checks.push({
      name: runtime,
      status: "problem",
      detail: `--runtimes asks for ${runtime}, but ${commands.join(" or ")} is not on PATH`,
      fix: `install it, or add its directory to PATH (install-service records the PATH it is run with); or drop ${runtime} from --runtimes`,
    });
  }
  if (found.size === 0 && !options.runtimes) {
    checks.push({
      name: "runtimes",
      status: "warn",
      detail: "no model CLI on PATH: the runner offers only the offline runtime",
      fix: "install claude, codex, agy/gemini or grok",
    });
  }
  return checks;
}

export async function doctorChecks(options: DoctorOptions, given: Partial<DoctorDeps> = {}): Promise<Check[]> {
  const deps = withDefaults(given);
  const { check: token, token: value } = tokenCheck(options);
  return [nodeCheck(deps), token, ...(await workerChecks(options, value, deps)), ...(await cliChecks(options, deps))];
}

export function formatCheck(check: Check): string {
  const fix = check.fix && check.status !== "ok" && check.status !== "skip" ? `  → fix: ${check.fix}` : "";
  return `${check.status.padEnd(7)} ${check.name}: ${check.detail}${fix}`;
}

export async function runDoctor(
  options: DoctorOptions,
  deps: Partial<DoctorDeps> = {},
  out: (text: string) => void = (t) => process.stdout.write(t),
): Promise<number> {
  const checks = await doctorChecks(options, deps);
  for (const check of checks) out(`${formatCheck(check)}\n`);
  const problems = checks.filter((c) => c.status === "problem").length;
  out(problems === 0 ? "\nNo problems found.\n" : `\n${problems} problem(s) found.\n`);
  return problems === 0 ? EXIT_CODES.ok : EXIT_CODES.unexpected;
}
