/**
 * Entry point (run by bin/crewplane-runner under Node ≥ 22.18). The one place where errors
 * become exit codes.
 */
import { parseCli, USAGE } from "./cli.ts";
import { EXIT_CODES, exitCodeFor, UsageError } from "./errors.ts";
import { runRunner } from "./runner.ts";

async function main(argv: readonly string[]): Promise<number> {
  const parsed = parseCli(argv, process.env);
  if (parsed.command === "help") {
    process.stdout.write(USAGE);
    return EXIT_CODES.ok;
  }
  // Model CLIs inherit our environment and run arbitrary tools: they must not see the runner token.
  delete process.env.CREWPLANE_RUNNER_TOKEN;
  // Everything the runner and its CLIs create (work dirs, run records, CLI output) is owner-only.
  process.umask(0o077);
  await runRunner(parsed.options);
  return EXIT_CODES.ok;
}

main(process.argv.slice(2)).then(
  // Exit explicitly: idle keep-alive sockets must not hold a stopped runner open.
  (code) => process.exit(code),
  (err: unknown) => {
    if (err instanceof UsageError) process.stderr.write(`crewplane-runner: ${err.message}\n\n${USAGE}`);
    else process.stderr.write(`crewplane-runner: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(exitCodeFor(err));
  },
);
