/**
 * Command-line parsing only: argv + environment → a typed options object. Nothing here touches
 * the network or the filesystem; bad input throws UsageError (exit code 2).
 */
import { homedir } from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { UsageError } from "./errors.ts";
import { KNOWN_RUNTIMES } from "./runtimes/index.ts";

export interface RunnerOptions {
  url: string;
  token: string;
  /**
   * Where the token came from. `--token` still works but is discouraged: a command line is
   * readable by every user of the host (ps, /proc/<pid>/cmdline); the environment is not.
   */
  tokenSource: "env" | "flag";
  home: string;
  concurrency: number;
  /** Restricts the advertised runtimes; undefined means every runtime that is available. */
  runtimes?: string[];
}

export type CliCommand = { command: "help" } | { command: "run"; options: RunnerOptions };

export const USAGE = `Usage: crewplane-runner --url <base> [options]
The runner token is read from CREWPLANE_RUNNER_TOKEN.

Options:
  --url <base>          Worker base URL (env CREWPLANE_URL)
  --token <token>       runner token; discouraged, since other users of the host can read a
                        command line: set CREWPLANE_RUNNER_TOKEN in the environment instead
  --home <dir>          working directory root (env CREWPLANE_HOME, default ~/.crewplane)
  --concurrency <n>     jobs run at once (env CREWPLANE_CONCURRENCY, default 2)
  --runtimes <a,b>      only offer these runtimes (known: ${KNOWN_RUNTIMES.join(", ")})
  -h, --help            show this help
`;

const MAX_CONCURRENCY = 64;

export function parseCli(argv: readonly string[], env: NodeJS.ProcessEnv = process.env): CliCommand {
  let values;
  try {
    ({ values } = parseArgs({
      args: [...argv],
      options: {
        url: { type: "string" },
        token: { type: "string" },
        home: { type: "string" },
        concurrency: { type: "string" },
        runtimes: { type: "string" },
        help: { type: "boolean", short: "h" },
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
  const url = values.url ?? fromEnv("CREWPLANE_URL");
  if (!url) throw new UsageError("missing --url (or CREWPLANE_URL)");
  const token = values.token ?? fromEnv("CREWPLANE_RUNNER_TOKEN");
  if (!token) throw new UsageError("missing CREWPLANE_RUNNER_TOKEN (or --token)");

  if (values.home === "") throw new UsageError("--home needs a directory");
  const home = values.home ?? fromEnv("CREWPLANE_HOME") ?? join(homedir(), ".crewplane");
  const runtimes = values.runtimes === undefined ? undefined : parseRuntimes(values.runtimes);
  return {
    command: "run",
    options: {
      url: parseUrl(url),
      token,
      tokenSource: values.token !== undefined ? "flag" : "env",
      home: resolve(expandTilde(home)),
      concurrency: parseConcurrency(values.concurrency ?? fromEnv("CREWPLANE_CONCURRENCY") ?? "2"),
      ...(runtimes ? { runtimes } : {}),
    },
  };
}

function parseUrl(raw: string): string {
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
