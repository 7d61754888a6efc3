/**
 * The maintenance pass over member scaffolds (seed 002 "メンバーはラウンドが終わったときに片付けられ"):
 * a team stage removes its own scaffold on every way out, so what is left here belongs to a runner
 * that was killed outright, or to a stage still running. Each leftover is removed once its round is
 * really over: the member token's recorded expiry has passed, or the Worker refuses the token (a
 * round that ends revokes its members' tokens), or says the round or stage is over. A scaffold whose
 * round cannot be asked about right now is kept for the next pass; one of a running job is never
 * touched; one without an identity file can never run and goes at once.
 */
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import type { Logger } from "../logger.ts";
import { checkMemberRound } from "./round-check.ts";
import { sweepScaffolds } from "./scaffold.ts";
import type { FoundScaffold, ScaffoldKey, SweepReport } from "./scaffold.ts";

export const DEFAULT_SCAFFOLD_SWEEP_MS = 10 * 60_000;

export interface ScaffoldJanitorOptions {
  home: string;
  logger: Logger;
  /** The Worker URL, used when a member file does not name one. */
  apiUrl?: string;
  fetch?: typeof fetch;
  now?: () => number;
  /** Jobs running right now: their scaffolds are never swept. */
  runningJobIds: () => Iterable<string>;
  sweepIntervalMs?: number;
}

export interface ScaffoldJanitor {
  /** Starts the periodic sweep with one pass now; later calls do nothing. */
  start(): void;
  sweep(): Promise<SweepReport>;
  stop(): Promise<void>;
}

export function createScaffoldJanitor(options: ScaffoldJanitorOptions): ScaffoldJanitor {
  const { home, logger } = options;
  const now = options.now ?? Date.now;
  let timer: NodeJS.Timeout | undefined;
  let sweeping: Promise<SweepReport> | undefined;

  const isRoundOver = async (key: ScaffoldKey, found: FoundScaffold): Promise<boolean> => {
    const running = new Set(options.runningJobIds());
    if (found.manifest?.job_id && running.has(found.manifest.job_id)) return false;
    const member = await readMember(found.dir);
    if (!member) {
      logger.info("scaffold.swept", {
        dir: found.dir,
        task_id: key.taskId,
        round: key.round,
        role: key.role,
        reason: "no member identity",
      });
      return true;
    }
    const apiUrl = member.api_url ?? options.apiUrl;
    const expiresAt = member.expires_at ?? found.manifest?.expires_at;
    const verdict = apiUrl
      ? await checkMemberRound({
          apiUrl,
          token: member.member_token,
          expiresAt,
          now: now(),
          ...(options.fetch ? { fetch: options.fetch } : {}),
        })
      : expiresAt && Date.parse(expiresAt) <= now()
        ? ({ state: "over", reason: `the member token expired at ${expiresAt}` } as const)
        : ({ state: "unknown", reason: "no Worker URL to ask" } as const);
    if (verdict.state === "over") {
      logger.info("scaffold.swept", { dir: found.dir, task_id: key.taskId, round: key.round, role: key.role, reason: verdict.reason });
      return true;
    }
    if (verdict.state === "unknown") logger.debug("scaffold.kept", { dir: found.dir, reason: verdict.reason });
    return false;
  };

  const sweep = (): Promise<SweepReport> => {
    sweeping ??= sweepScaffolds(home, isRoundOver)
      .catch((err: unknown) => {
        logger.warn("scaffold.sweep_failed", { error: err });
        return { removed: [], kept: [] };
      })
      .finally(() => (sweeping = undefined));
    return sweeping;
  };

  return {
    start() {
      if (timer) return;
      timer = setInterval(() => void sweep(), options.sweepIntervalMs ?? DEFAULT_SCAFFOLD_SWEEP_MS);
      timer.unref();
      void sweep();
    },
    sweep,
    async stop() {
      clearInterval(timer);
      await sweeping;
    },
  };
}

async function readMember(dir: string): Promise<{ member_token: string; api_url?: string; expires_at?: string } | undefined> {
  try {
    const value = JSON.parse(await readFile(join(dir, "member.json"), "utf8")) as Record<string, unknown>;
    if (typeof value.member_token !== "string" || value.member_token === "") return undefined;
    return {
      member_token: value.member_token,
      ...(typeof value.api_url === "string" ? { api_url: value.api_url } : {}),
      ...(typeof value.expires_at === "string" ? { expires_at: value.expires_at } : {}),
    };
  } catch {
    return undefined;
  }
}
