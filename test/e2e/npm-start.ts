/**
 * Driving `npm start` (scripts/start.mjs) from a test: a throwaway state dir and runner home under
 * `scratch`, a free port, and the output kept so tests can wait on what it says.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";
import { ROOT } from "./stack";

export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const { port } = server.address() as { port: number };
  await new Promise((r) => server.close(r));
  return port;
}

/** All descendants of `root` (Linux /proc): wrangler's wrapper, its CLI, workerd, the runner. */
export function descendants(root: number): number[] {
  const parents = new Map<number, number[]>();
  for (const d of readdirSync("/proc").filter((d) => /^\d+$/.test(d))) {
    try {
      const ppid = Number(readFileSync(`/proc/${d}/stat`, "utf8").split(") ")[1]!.split(" ")[1]);
      parents.set(ppid, [...(parents.get(ppid) ?? []), Number(d)]);
    } catch {
      // exited while we looked
    }
  }
  const found: number[] = [];
  const walk = (pid: number) => (parents.get(pid) ?? []).forEach((c) => (found.push(c), walk(c)));
  walk(root);
  return found;
}

/** Running, not a zombie waiting to be reaped (a zombie runs nothing). */
export const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return !["Z", "X"].includes(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[0]!);
  } catch {
    return false;
  }
};

/** Pids whose command line mentions `marker` (Linux /proc), to prove nothing was left running. */
export function processesMentioning(marker: string): number[] {
  return readdirSync("/proc")
    .filter((d) => /^\d+$/.test(d))
    .flatMap((pid) => {
      try {
        return readFileSync(`/proc/${pid}/cmdline`, "utf8").includes(marker) ? [Number(pid)] : [];
      } catch {
        return [];
      }
    });
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function until<T>(check: () => T | Promise<T>, what: string, timeoutMs: number, everyMs = 200): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value as NonNullable<T>;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(everyMs);
  }
}

export interface NpmStart {
  child: ChildProcess;
  base: string;
  admin: string;
  output(): string;
  exited: Promise<number | null>;
  /** Waits for `pattern` in the output written after character `from`; returns the match. */
  waitFor(pattern: RegExp, timeoutMs: number, from?: number): Promise<RegExpExecArray>;
  api(path: string, body?: unknown): Promise<{ status: number; body: any }>;
}

/** Starts `npm start`'s script and waits until it says the stack is up. */
export async function startNpmStart(scratch: string, env: Record<string, string> = {}): Promise<NpmStart> {
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const child = spawn(process.execPath, [join(ROOT, "scripts/start.mjs")], {
    cwd: ROOT,
    env: { ...process.env, PORT: String(port), CREWPLANE_STATE_DIR: join(scratch, "state"), CREWPLANE_HOME: join(scratch, "home"), ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  const exited = new Promise<number | null>((r) => child.once("exit", (code) => r(code)));
  let out = "";
  child.stdout!.on("data", (d) => (out += d));
  child.stderr!.on("data", (d) => (out += d));

  const waitFor = (pattern: RegExp, timeoutMs: number, from = 0) =>
    until(() => pattern.exec(out.slice(from)), `${pattern} in npm start's output`, timeoutMs, 100).catch((err: Error) => {
      throw new Error(`${err.message}\n--- output ---\n${out.slice(-6000)}`);
    });

  await waitFor(/crewplane is running|start failed/, 180_000);
  if (out.includes("start failed")) throw new Error(`npm start failed:\n${out}`);
  const admin = /admin token \([^)]*\): (\S+)/.exec(out)?.[1];
  if (!admin) throw new Error(`no admin token in npm start's output:\n${out}`);

  async function api(path: string, body?: unknown) {
    const res = await fetch(`${base}${path}`, {
      method: body === undefined ? "GET" : "POST",
      headers: { authorization: `Bearer ${admin}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : null };
  }

  return { child, base, admin, output: () => out, exited, waitFor, api };
}
