/**
 * Command-line parsing only: argv + environment → a typed options object. Nothing here touches
 * the network or the filesystem (a token file is read by main.ts); bad input throws UsageError
 * (exit code 2).
 */
import { homedir } from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { UsageError } from "./errors.ts";
import { KNOWN_RUNTIMES } from "./runtimes/index.ts";
import { defaultTokenFile } from "./token-file.ts";

export interface RunnerOptions {
  url: string;
  token: string;
  /**
   * Where the token came from. `--token` still works but is discouraged: a command line is
   * readable by every user of the host (ps, /proc/<pid>/cmdline); the environment and an
   * owner-only file (`--token-file`, what a service uses) are not.
   */
  tokenSource: "env" | "flag" | "file";
  home: string;
  concurrency: number;
  /** Restricts the advertised runtimes; undefined means every runtime that is available. */
  runtimes?: string[];
}

/** How the token is given: its value, or the file it is in (read by main.ts, not here). */
export type TokenRef = { kind: "env" | "flag"; token: string } | { kind: "file"; path: string };

export interface DoctorOptions {
  /** As given: doctor reports a missing or malformed URL instead of refusing to start. */
  url?: string;
  token?: TokenRef;
  runtimes?: string[];
}

export interface ServiceOptions {
  url: string;
  tokenFile: string;
  home: string;
  concurrency: number;
  runtimes?: string[];
  kind: "systemd" | "launchd";
  /** Only print the unit; write nothing. */
  print: boolean;
  /** Where the unit goes instead of the per-user default (tests, packaging). */
  dir?: string;
}

export type CliCommand =
  | { command: "help" }
  | { command: "run"; options: RunnerOptions }
  | { command: "run"; tokenFile: string; options: Omit<RunnerOptions, "token" | "tokenSource"> }
  | { command: "doctor"; options: DoctorOptions }
  | { command: "install-service"; options: ServiceOptions };

export const USAGE = `Usage: crewplane-runner --url <base> [options]          run the runner
       crewplane-runner doctor [options]                  check this host's setup, one line per check
       crewplane-runner install-service --url <base> [options]
                                                          write a systemd user unit (Linux) or a
                                                          launchd agent (macOS) that runs it
The runner token is read from CREWPLANE_RUNNER_TOKEN, or from an owner-only file (--token-file).

Options:
  --url <base>          Worker base URL (env CREWPLANE_URL)
  --token-file <file>   read the token from this file, which must be mode 600 (env
                        CREWPLANE_RUNNER_TOKEN_FILE); install-service default: ~/.config/crewplane/runner-token
  --token <token>       runner token; discouraged, since other users of the host can read a
                        command line: set CREWPLANE_RUNNER_TOKEN in the environment instead
  --home <dir>          working directory root (env CREWPLANE_HOME, default ~/.crewplane)
  --concurrency <n>     jobs run at once (env CREWPLANE_CONCURRENCY, default 2)
  --runtimes <a,b>      only offer these runtimes (known: ${KNOWN_RUNTIMES.join(", ")})
  -h, --help            show this help

install-service only:
  --print               print the unit instead of writing it
  --dir <dir>           write the unit there (default ~/.config/systemd/user or ~/Library/LaunchAgents)
  --kind <kind>         systemd or launchd (default: this system's)
`;

const MAX_CONCURRENCY = 64;
const SUBCOMMANDS = ["doctor", "install-service"] as const;

export function parseCli(
  argv: readonly string[],
  env: NodeJS.ProcessEnv = process.env,
  platform: NodeJS.Platform = process.platform,
): CliCommand {
  const sub = SUBCOMMANDS.find((name) => name === argv[0]);
  const args = sub ? argv.slice(1) : argv;
  let values;
  try {
    ({ values } = parseArgs({
      args: [...args],
      options: {
        url: { type: "string" },
        token: { type: "string" },
        "token-file": { type: "string" },
        home: { type: "string" },
        concurrency: { type: "string" },
        runtimes: { type: "string" },
        help: { type: "boolean", short: "h" },
        ...(sub === "install-service" ? { print: { type: "boolean" }, dir: { type: "string" }, kind: { type: "string" } } : {}),
      },
      strict: true,
      allowPositionals: false,
    }));
  } catch (err) {
    throw new UsageError(err instanceof Error ? err.message : String(err));
  }
  if (values.help) return { command: "help" };

  // An empty variable (`CREWPLANE_HOME=` in a unit file or compose file) means "not set": read as a
  // value, an empty home would resolve to the cwd and the runner would fill it with work/ and run/.
  const fromEnv = (name: string): string | undefined => env[name] || undefined;
  if (values.token !== undefined && values["token-file"] !== undefined) throw new UsageError("give --token or --token-file, not both");
  if (values["token-file"] === "") throw new UsageError("--token-file needs a file");
  if (values.home === "") throw new UsageError("--home needs a directory");
  const runtimes = values.runtimes === undefined ? undefined : parseRuntimes(values.runtimes);
  const url = values.url ?? fromEnv("CREWPLANE_URL");
  // Flags win over the environment; a value wins over a file at the same level.
  const tokenFile =
    values["token-file"] ??
    (values.token === undefined && !fromEnv("CREWPLANE_RUNNER_TOKEN") ? fromEnv("CREWPLANE_RUNNER_TOKEN_FILE") : undefined);
  const token = values.token ?? (values["token-file"] === undefined ? fromEnv("CREWPLANE_RUNNER_TOKEN") : undefined);
  const home = resolve(expandTilde(values.home ?? fromEnv("CREWPLANE_HOME") ?? join(homedir(), ".crewplane")));
  const concurrency = (): number => parseConcurrency(values.concurrency ?? fromEnv("CREWPLANE_CONCURRENCY") ?? "2");

  if (sub === "doctor") {
    const ref: TokenRef | undefined =
      tokenFile !== undefined
        ? { kind: "file", path: resolve(expandTilde(tokenFile)) }
        : token !== undefined
          ? { kind: values.token !== undefined ? "flag" : "env", token }
          : undefined;
    return { command: "doctor", options: { ...(url ? { url } : {}), ...(ref ? { token: ref } : {}), ...(runtimes ? { runtimes } : {}) } };
  }

  if (!url) throw new UsageError("missing --url (or CREWPLANE_URL)");
  if (sub === "install-service") {
    // A unit file is readable by every user of the host; so is the command line it starts.
    if (values.token !== undefined) throw new UsageError("install-service never puts the token in the unit: use --token-file (mode 600)");
    const kind = values.kind ?? (platform === "darwin" ? "launchd" : "systemd");
    if (kind !== "systemd" && kind !== "launchd") throw new UsageError(`--kind must be systemd or launchd, got "${kind}"`);
    const dir = typeof values.dir === "string" ? values.dir : undefined;
    if (dir === "") throw new UsageError("--dir needs a directory");
    return {
      command: "install-service",
      options: {
        url: parseUrl(url),
        tokenFile: resolve(expandTilde(values["token-file"] ?? fromEnv("CREWPLANE_RUNNER_TOKEN_FILE") ?? defaultTokenFile(env))),
        home,
        concurrency: concurrency(),
        ...(runtimes ? { runtimes } : {}),
        kind,
        print: values.print === true,
        ...(dir ? { dir: resolve(expandTilde(dir)) } : {}),
      },
    };
  }

  const base = { url: parseUrl(url), home, concurrency: concurrency(), ...(runtimes ? { runtimes } : {}) };
  if (tokenFile !== undefined) return { command: "run", tokenFile: resolve(expandTilde(tokenFile)), options: base };
  if (!token) throw new UsageError("missing CREWPLANE_RUNNER_TOKEN (or --token-file, or --token)");
  return {
    command: "run",
    options: {
      url: base.url,
      token,
      tokenSource: values.token !== undefined ? "flag" : "env",
      home,
      concurrency: base.concurrency,
      ...(runtimes ? { runtimes } : {}),
    },
  };
}

export function parseUrl(raw: string): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new UsageError(`--url is not a URL: ${raw}`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") throw new UsageError(`--url must be http(s): ${raw}`);
  // Request paths are appended to this base: a query or fragment would swallow them, and fetch
  // refuses URLs with credentials. Both would fail every request, forever, with a transient-looking error.
  if (url.search || url.hash) throw new UsageError(`--url must not have a query or fragment: ${raw}`);
  if (url.username || url.password) throw new UsageError("--url must not carry credentials; the runner token is the credential");
  // From the parsed URL, not the raw text: surrounding spaces (a quoted env file) would otherwise stay in.
  return `${url.origin}${url.pathname}`.replace(/\/+$/, "");
}

function parseConcurrency(raw: string): number {
  const n = Number(raw);
  if (!/^\d+$/.test(raw.trim()) || !Number.isInteger(n) || n < 1 || n > MAX_CONCURRENCY) {
    throw new UsageError(`--concurrency must be a whole number from 1 to ${MAX_CONCURRENCY}, got "${raw}"`);
  }
  return n;
}

function parseRuntimes(raw: string): string[] {
  const names = [
    ...new Set(
      raw
        .split(",")
        .map((s) => s.trim())
        .filter(Boolean),
    ),
  ];
  if (names.length === 0) throw new UsageError("--runtimes needs at least one runtime name");
  const unknown = names.filter((name) => !KNOWN_RUNTIMES.includes(name));
  if (unknown.length > 0) throw new UsageError(`unknown runtime(s) ${unknown.join(", ")}; this runner knows ${KNOWN_RUNTIMES.join(", ")}`);
  return names;
}

function expandTilde(path: string): string {
  return path === "~" || path.startsWith("~/") ? join(homedir(), path.slice(1)) : path;
}
