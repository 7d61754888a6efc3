/**
 * Entry point (run by bin/crewplane-runner under Node ≥ 22.18). The one place where errors
 * become exit codes.
 */
import { parseCli, USAGE } from "./cli.ts";
import type { RunnerOptions } from "./cli.ts";
import { runDoctor } from "./doctor.ts";
import { EXIT_CODES, exitCodeFor, UsageError } from "./errors.ts";
import { runRunner } from "./runner.ts";
import { installService } from "./service.ts";
import { readTokenFile } from "./token-file.ts";

async function main(argv: readonly string[]): Promise<number> {
  const parsed = parseCli(argv, process.env);
  if (parsed.command === "help") {
    process.stdout.write(USAGE);
    return EXIT_CODES.ok;
  }
  if (parsed.command === "install-service") return installService(parsed.options);
  // Model CLIs inherit our environment and run arbitrary tools: they must not see the runner token.
  delete process.env.CREWPLANE_RUNNER_TOKEN;
  if (parsed.command === "doctor") return await runDoctor(parsed.options);
  const options: RunnerOptions =
    "tokenFile" in parsed ? { ...parsed.options, token: readTokenFile(parsed.tokenFile), tokenSource: "file" } : parsed.options;
  // Everything the runner and its CLIs create (work dirs, run records, CLI output) is owner-only.
  process.umask(0o077);
  await runRunner(options);
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
