/**
 * The maintenance sweep removes exactly the scaffolds whose round is over (seed 002: a member whose
 * round died before its own cleanup is swept by the next maintenance pass), asking the Worker with
 * each member's own token.
 */
import { existsSync } from "node:fs";
import { afterEach, describe, expect, it } from "vitest";
import { createMemoryLogger } from "../../../local-runner/src/logger.ts";
import { createScaffoldJanitor } from "../../../local-runner/src/members/scaffold-janitor.ts";
import { writeScaffold } from "../../../local-runner/src/members/scaffold.ts";
import type { ScaffoldSpec } from "../../../local-runner/src/members/scaffold.ts";
import { startFakeTeamApi } from "../helpers/fake-team-api.ts";
import { tempDir } from "../helpers/paths.ts";

const teardown: Array<() => unknown> = [];
afterEach(async () => {
  for (const step of teardown.splice(0).reverse()) await step();
});

describe("the scaffold sweep", () => {
  it("removes scaffolds of rounds that are over (token refused, stage ended, token expired) and keeps the rest", async () => {
    const api = await startFakeTeamApi();
    teardown.push(() => api.close());
    const { dir: home, cleanup } = tempDir("crewplane-sweep-");
    teardown.push(cleanup);
    const hour = 3_600_000;

    const member = async (
      stageId: string,
      opts: { revoked?: boolean; ended?: boolean; expiresInMs?: number; apiUrl?: string; jobId?: string },
    ) => {
      const token = api.mint({ employeeId: "emp_1", taskId: "task_1", round: 1, role: "executor" });
      if (opts.revoked) api.revoke(token);
      if (opts.ended) api.endStage(token);
      const spec: ScaffoldSpec = {
        home,
        taskId: "task_1",
        round: 1,
        role: "executor",
        stageId,
        roundId: "trnd_1",
        ...(opts.jobId ? { jobId: opts.jobId } : {}),
        runtime: "codex",
        model: "gpt-5.5",
        employee: { id: "emp_1" },
        member: { token, apiUrl: opts.apiUrl ?? api.url, expiresAt: new Date(Date.now() + (opts.expiresInMs ?? hour)).toISOString() },
      };
      return (await writeScaffold(spec)).dir;
    };
    const live = await member("stg_live", {});
    const revoked = await member("stg_revoked", { revoked: true });
    const ended = await member("stg_ended", { ended: true });
    const expired = await member("stg_expired", { expiresInMs: -1_000 });
    const running = await member("stg_running", { revoked: true, jobId: "job_running" });
    // The Worker cannot be asked (nothing listens there) and the token has not expired: unknown, kept.
    const unreachable = await member("stg_unknown", { apiUrl: "http://127.0.0.1:9" });

    const logger = createMemoryLogger();
    const janitor = createScaffoldJanitor({ home, logger, apiUrl: api.url, runningJobIds: () => ["job_running"] });
    const report = await janitor.sweep();

    expect(report.removed.sort()).toEqual([ended, expired, revoked].sort());
    expect(report.kept.sort()).toEqual([live, running, unreachable].sort());
    for (const dir of [ended, expired, revoked]) expect(existsSync(dir)).toBe(false);
    expect(logger.records.filter((r) => r.event === "scaffold.swept")).toHaveLength(3);
    // Every question went out with the member's own token, never the runner's.
    expect(api.requests.filter((r) => r.path === "/v1/team/member").every((r) => r.authorization?.startsWith("Bearer member_"))).toBe(true);
  });
});
