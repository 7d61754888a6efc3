// When `npm start` restarts the local-runner after it dies, and when it gives up. Plain ESM with no
// dependencies: start.mjs runs on whatever Node launched npm. Tested in test/runner/runner-restart.test.ts.

/**
 * Exit codes after which a restart cannot help (local-runner/src/errors.ts EXIT_CODES; the test
 * checks they stay in step): the command line is wrong, or the Worker rejected the token.
 */
export const FATAL_RUNNER_EXITS = new Map([
  [2, "its command line or configuration is invalid"],
  [3, "the Worker rejected its runner token"],
]);

export const RESTART_INITIAL_MS = 1000;
export const RESTART_MAX_MS = 30_000;
/** A runner that ran this long before dying was healthy: its next restart starts the backoff over. */
export const STABLE_RUN_MS = 60_000;

/**
 * `failures` counts restarts since the runner last ran stably. Returns whether to restart, after how
 * long, and the failure count to carry to the next decision.
 */
export function restartDecision({ code, signal, ranMs, failures }) {
  if (signal === null && FATAL_RUNNER_EXITS.has(code)) return { restart: false, reason: FATAL_RUNNER_EXITS.get(code) };
  const streak = ranMs >= STABLE_RUN_MS ? 0 : failures;
  const delayMs = Math.min(RESTART_MAX_MS, RESTART_INITIAL_MS * 2 ** streak);
  return { restart: true, delayMs, failures: streak + 1 };
}

/** "signal SIGKILL" / "code 1", as the log states it. */
export function describeExit(code, signal) {
  return signal ? `signal ${signal}` : `code ${code}`;
}
