/**
 * Runs one model CLI as a child process with the rules every CLI needs (reference model-clis.md):
 * stdin closed (or, with `stdinText`, written once and then closed), a wall-clock timeout, and the
 * whole process group killed — grandchildren included.
 * Raw stdout/stderr go to files in the job's work dir; stdout is also handed over line by line.
 */
import { spawn } from "node:child_process";
import type { ChildProcess } from "node:child_process";
import { createWriteStream } from "node:fs";
import type { WriteStream } from "node:fs";
import { StringDecoder } from "node:string_decoder";
import type { GroupRecorder } from "./process-groups.ts";

export interface RunProcessOptions {
  command: string;
  args: readonly string[];
  cwd: string;
  env?: NodeJS.ProcessEnv;
  /** Wall-clock limit measured from spawn. */
  timeoutMs: number;
  /** Time between SIGTERM and SIGKILL to the process group. */
  killGraceMs?: number;
  stdoutPath: string;
  stderrPath: string;
  onStdoutLine?: (line: string) => void;
  /** Aborting kills the process group the same way a timeout does. */
  signal?: AbortSignal;
  /** Where the spawned group is recorded while it lives; defaults to the one set for the runner. */
  groups?: GroupRecorder;
  /**
   * Text written to the child's stdin, which is then closed (EOF). Prompts travel this way rather
   * than in argv (argv is world-readable in /proc and size-limited). Without it stdin is /dev/null.
   */
  stdinText?: string;
}

let defaultGroups: GroupRecorder | undefined;

/**
 * The runner sets its `<home>/run/` registry once at start, so every group any job kind spawns is
 * recorded without each caller having to pass it along.
 */
export function setDefaultGroupRecorder(groups: GroupRecorder | undefined): void {
  defaultGroups = groups;
}

export type Termination = "exited" | "timeout" | "aborted" | "spawn_failed";

export interface ProcessOutcome {
  /** How the run ended from the runner's point of view; `exited` means we did not kill it. */
  termination: Termination;
  pid: number | undefined;
  exitCode: number | null;
  exitSignal: NodeJS.Signals | null;
  durationMs: number;
  /** The last lines of stderr, for failure messages. */
  stderrTail: string[];
  spawnError?: { code?: string; message: string };
}

const DEFAULT_KILL_GRACE_MS = 2000;
/** A grandchild in another session could keep our pipes open forever after the child exits. */
const PIPE_DRAIN_LIMIT_MS = 2000;
const STDERR_TAIL_LINES = 20;

export function runProcess(options: RunProcessOptions): Promise<ProcessOutcome> {
  const startedAt = performance.now();
  // Owner-only: CLI output can hold anything the model saw.
  const stdoutFile = createWriteStream(options.stdoutPath, { mode: 0o600 });
  const stderrFile = createWriteStream(options.stderrPath, { mode: 0o600 });
  const groups = options.groups ?? defaultGroups;
  const stderrTail = createTail(STDERR_TAIL_LINES);

  const settle = async (partial: Omit<ProcessOutcome, "durationMs" | "stderrTail">, durationMs: number): Promise<ProcessOutcome> => {
    await Promise.all([endStream(stdoutFile), endStream(stderrFile)]);
    return { ...partial, durationMs, stderrTail: stderrTail.lines() };
  };

  if (options.signal?.aborted) {
    return settle({ termination: "aborted", pid: undefined, exitCode: null, exitSignal: null }, 0);
  }

  let child: ChildProcess;
  try {
    child = spawn(options.command, options.args, {
      cwd: options.cwd,
      env: options.env ?? process.env,
      // Model CLIs block on an open stdin; detached makes the child a process-group leader so the
      // whole group (its tools, MCP servers, shells) can be signalled at once.
      stdio: [options.stdinText === undefined ? "ignore" : "pipe", "pipe", "pipe"],
      detached: true,
    });
  } catch (err) {
    return settle(
      { termination: "spawn_failed", pid: undefined, exitCode: null, exitSignal: null, spawnError: describeSpawnError(err) },
      0,
    );
  }

  // Recorded before anything else can happen, so a runner killed from here on leaves a trace of it.
  const groupPid = child.pid;
  if (groupPid !== undefined) groups?.record({ pid: groupPid, command: options.command, argv0: options.command });

  return new Promise<ProcessOutcome>((resolve) => {
    let termination: Termination | undefined;
    let exitCode: number | null = null;
    let exitSignal: NodeJS.Signals | null = null;
    let exitedAt: number | undefined;
    let graceTimer: NodeJS.Timeout | undefined;
    let drainTimer: NodeJS.Timeout | undefined;
    let finished = false;

    if (options.stdinText !== undefined && child.stdin) {
      // A child that exits without reading (an argv error) closes the pipe: EPIPE is expected then.
      child.stdin.on("error", () => {});
      child.stdin.end(options.stdinText);
    }

    const lines = createLineSplitter((line) => options.onStdoutLine?.(line));
    child.stdout?.on("data", (chunk: Buffer) => {
      stdoutFile.write(chunk);
      lines.push(chunk);
    });
    child.stderr?.on("data", (chunk: Buffer) => {
      stderrFile.write(chunk);
      stderrTail.push(chunk);
    });

    const killGroup = (signal: NodeJS.Signals): void => {
      if (child.pid === undefined) return;
      try {
        process.kill(-child.pid, signal);
      } catch (err) {
        // ESRCH: the group is already gone, which is the goal.
        if ((err as NodeJS.ErrnoException).code !== "ESRCH") child.kill(signal);
      }
    };

    const stop = (reason: Termination): void => {
      if (termination !== undefined || exitedAt !== undefined) return;
      termination = reason;
      killGroup("SIGTERM");
      graceTimer = setTimeout(() => killGroup("SIGKILL"), options.killGraceMs ?? DEFAULT_KILL_GRACE_MS);
    };

    const timeoutTimer = setTimeout(() => stop("timeout"), options.timeoutMs);
    const onAbort = (): void => stop("aborted");
    options.signal?.addEventListener("abort", onAbort, { once: true });

    const cleanup = (): void => {
      clearTimeout(timeoutTimer);
      clearTimeout(graceTimer);
      clearTimeout(drainTimer);
      options.signal?.removeEventListener("abort", onAbort);
    };

    const finish = (partial: Omit<ProcessOutcome, "durationMs" | "stderrTail">): void => {
      if (finished) return;
      finished = true;
      cleanup();
      // By now the leader has exited and its group was SIGKILLed on exit: nothing is left to reap.
      if (groupPid !== undefined) groups?.remove(groupPid);
      lines.flush();
      const durationMs = Math.round((exitedAt ?? performance.now()) - startedAt);
      void settle(partial, durationMs).then(resolve);
    };

    child.once("error", (err) => {
      // Without a pid the process never started (ENOENT, EACCES); 'exit' will not follow.
      if (child.pid === undefined) {
        finish({ termination: "spawn_failed", pid: undefined, exitCode: null, exitSignal: null, spawnError: describeSpawnError(err) });
      }
    });

    child.once("exit", (code, signal) => {
      exitedAt = performance.now();
      exitCode = code;
      exitSignal = signal;
      clearTimeout(timeoutTimer);
      clearTimeout(graceTimer);
      // The leader is gone; anything it left behind in its group goes too.
      killGroup("SIGKILL");
      drainTimer = setTimeout(() => {
        child.stdout?.destroy();
        child.stderr?.destroy();
      }, PIPE_DRAIN_LIMIT_MS);
    });

    child.once("close", () => {
      finish({ termination: termination ?? "exited", pid: child.pid, exitCode, exitSignal });
    });
  });
}

function describeSpawnError(err: unknown): { code?: string; message: string } {
  const e = err as NodeJS.ErrnoException;
  return e && typeof e === "object" ? { ...(e.code ? { code: e.code } : {}), message: e.message } : { message: String(err) };
}

function endStream(stream: WriteStream): Promise<void> {
  return new Promise((resolve) => {
    if (stream.closed) return resolve();
    stream.end(() => resolve());
    stream.once("error", () => resolve());
  });
}

/** Splits a byte stream into lines without breaking multi-byte characters across chunks. */
function createLineSplitter(onLine: (line: string) => void): { push(chunk: Buffer): void; flush(): void } {
  const decoder = new StringDecoder("utf8");
  let pending = "";
  const emit = (text: string): void => {
    pending += text;
    let newline = pending.indexOf("\n");
    while (newline !== -1) {
      onLine(pending.slice(0, newline).replace(/\r$/, ""));
      pending = pending.slice(newline + 1);
      newline = pending.indexOf("\n");
    }
  };
  return {
    push: (chunk) => emit(decoder.write(chunk)),
    flush() {
      emit(decoder.end());
      // A last line without a newline still counts (it is often the truncated one).
      if (pending.length > 0) onLine(pending);
      pending = "";
    },
  };
}

function createTail(maxLines: number): { push(chunk: Buffer): void; lines(): string[] } {
  const decoder = new StringDecoder("utf8");
  let text = "";
  return {
    push(chunk) {
      text += decoder.write(chunk);
      // Keep memory bounded for chatty CLIs; only the end is ever reported.
      if (text.length > 64 * 1024) text = text.slice(-16 * 1024);
    },
    lines() {
      return (text + decoder.end())
        .split("\n")
        .map((line) => line.trimEnd())
        .filter((line) => line.length > 0)
        .slice(-maxLines);
    },
  };
}
