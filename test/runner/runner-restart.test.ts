/**
 * `npm start`'s restart policy for the runner (scripts/lib/runner-restart.mjs).
 */
import { describe, expect, it } from "vitest";
import { EXIT_CODES } from "../../local-runner/src/errors.ts";
import { describeExit, FATAL_RUNNER_EXITS, restartDecision, STABLE_RUN_MS } from "../../scripts/lib/runner-restart.mjs";

describe("runner restart policy", () => {
  it("gives up only on the runner's fatal exit codes: bad configuration and a rejected token", () => {
    expect([...FATAL_RUNNER_EXITS.keys()].sort()).toEqual([EXIT_CODES.usage, EXIT_CODES.unauthorized].sort());
    expect(restartDecision({ code: EXIT_CODES.unauthorized, signal: null, ranMs: 5000, failures: 0 })).toEqual({
      restart: false,
      reason: "the Worker rejected its runner token",
    });
    expect(restartDecision({ code: EXIT_CODES.usage, signal: null, ranMs: 100, failures: 0 })).toMatchObject({ restart: false });
  });

  it("restarts after a SIGKILL, a crash or a plain exit, backing off 1 s, 2 s, 4 s … up to 30 s", () => {
    let failures = 0;
    const delays: number[] = [];
    for (let i = 0; i < 7; i += 1) {
      const decision = restartDecision({ code: null, signal: "SIGKILL", ranMs: 2000, failures });
      if (!decision.restart) throw new Error("expected a restart");
      delays.push(decision.delayMs);
      failures = decision.failures;
    }
    expect(delays).toEqual([1000, 2000, 4000, 8000, 16_000, 30_000, 30_000]);
    expect(restartDecision({ code: EXIT_CODES.unexpected, signal: null, ranMs: 10, failures: 0 })).toMatchObject({ restart: true });
    expect(restartDecision({ code: 0, signal: null, ranMs: 10, failures: 0 })).toMatchObject({ restart: true });
  });

  it("starts the backoff over after a runner that ran stably", () => {
    expect(restartDecision({ code: null, signal: "SIGKILL", ranMs: STABLE_RUN_MS, failures: 5 })).toEqual({
      restart: true,
      delayMs: 1000,
      failures: 1,
    });
  });

  it("describes the exit the way the log states it", () => {
    expect(describeExit(null, "SIGKILL")).toBe("signal SIGKILL");
    expect(describeExit(1, null)).toBe("code 1");
  });
});
