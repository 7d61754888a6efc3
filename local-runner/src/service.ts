/**
 * `crewplane-runner install-service`: the runner as a per-user service, a systemd user unit (Linux)
 * or a launchd agent (macOS). The unit starts the launcher by its absolute path with
 * `--token-file`; the token itself is never in the unit, which any user of the host may read.
 */
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import type { ServiceOptions } from "./cli.ts";
import { EXIT_CODES, UsageError } from "./errors.ts";
import { checkTokenFile, writeTokenFile } from "./token-file.ts";

export const SYSTEMD_UNIT = "crewplane-runner.service";
export const LAUNCHD_LABEL = "dev.crewplane.runner";
const LAUNCHER = fileURLToPath(new URL("../bin/crewplane-runner", import.meta.url));
const RUNNER_DOC = pathToFileURL(fileURLToPath(new URL("../../docs/runner.md", import.meta.url))).href;

export interface ServiceContext {
  launcher: string;
  /** The PATH the service runs with: the installer's, so the model CLIs found now are found then. */
  path: string;
  home: string;
  env: NodeJS.ProcessEnv;
}

function runnerArgs(options: ServiceOptions): string[] {
  return [
    "--url",
    options.url,
    "--token-file",
    options.tokenFile,
    "--home",
    options.home,
    "--concurrency",
    String(options.concurrency),
    ...(options.runtimes ? ["--runtimes", options.runtimes.join(",")] : []),
  ];
}

/** One ExecStart word: quoted when it must be; `%` (specifiers) and `$` (variables) escaped. */
function systemdWord(word: string): string {
  const quoted = /^[A-Za-z0-9_@+=:,./-]+$/.test(word) ? word : `"${word.replace(/[\\"]/g, (c) => `\\${c}`)}"`;
  return quoted.replace(/%/g, "%%").replace(/\$/g, "$$$$");
}

/** `Environment=` value: quoted; only specifiers are expanded there. */
function systemdEnv(name: string, value: string): string {
  return `Environment="${`${name}=${value}`.replace(/[\\"]/g, (c) => `\\${c}`).replace(/%/g, "%%")}"`;
}

export function systemdUnit(options: ServiceOptions, ctx: ServiceContext): string {
  const envFile = join(ctx.env.XDG_CONFIG_HOME || join(ctx.home, ".config"), "crewplane", "runner.env");
  return `# The crewplane local-runner, written by \`crewplane-runner install-service\`; run it again to change this.
# The runner token is read from ${options.tokenFile} (mode 600), never from this file.
[Unit]
Description=crewplane local-runner for ${options.url}
Documentation=${RUNNER_DOC.replace(/%/g, "%%")}
After=network-online.target
Wants=network-online.target

[Service]
Type=simple
ExecStart=${[ctx.launcher, ...runnerArgs(options)].map(systemdWord).join(" ")}
${systemdEnv("PATH", ctx.path)}
# Provider API keys (ANTHROPIC_API_KEY=…), for CLIs that use a key rather than their own login:
# one VAR=value per line in this file, mode 600. It may be absent.
EnvironmentFile=-${envFile}
# SIGTERM goes to the runner alone: it hands its jobs back and stops its CLIs itself. What is still
# running after TimeoutStopSec is killed.
KillMode=mixed
TimeoutStopSec=60
Restart=on-failure
RestartSec=5
# 2: bad configuration, 3: the Worker rejected the token. A restart cannot help; \`crewplane-runner doctor\` says why.
RestartPreventExitStatus=2 3

[Install]
WantedBy=default.target
`;
}

const xml = (text: string): string => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

export function launchdPlist(options: ServiceOptions, ctx: ServiceContext): string {
  const log = join(ctx.home, "Library", "Logs", "crewplane-runner.log");
  const args = [ctx.launcher, ...runnerArgs(options)].map((a) => `    <string>${xml(a)}</string>`).join("\n");
  return `<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
<!-- The crewplane local-runner, written by crewplane-runner install-service; run it again to change this.
     The runner token is read from the token file (mode 600), never from this file. -->
<plist version="1.0">
<dict>
  <key>Label</key>
  <string>${LAUNCHD_LABEL}</string>
  <key>ProgramArguments</key>
  <array>
${args}
  </array>
  <key>EnvironmentVariables</key>
  <dict>
    <key>PATH</key>
    <string>${xml(ctx.path)}</string>
  </dict>
  <key>RunAtLoad</key>
  <true/>
  <!-- Restarted after a crash, not after a clean stop. -->
  <key>KeepAlive</key>
  <dict>
    <key>SuccessfulExit</key>
    <false/>
  </dict>
  <key>ThrottleInterval</key>
  <integer>10</integer>
  <key>ExitTimeOut</key>
  <integer>60</integer>
  <key>ProcessType</key>
  <string>Background</string>
  <key>StandardOutPath</key>
  <string>${xml(log)}</string>
  <key>StandardErrorPath</key>
  <string>${xml(log)}</string>
</dict>
</plist>
`;
}

export function defaultServiceDir(kind: ServiceOptions["kind"], home: string, env: NodeJS.ProcessEnv): string {
  return kind === "launchd" ? join(home, "Library", "LaunchAgents") : join(env.XDG_CONFIG_HOME || join(home, ".config"), "systemd", "user");
}

/**
 * Writes the unit (after making sure the token file exists and is the owner's alone) and prints the
 * commands that start it. It does not start the service itself: enabling a service is the
 * operator's call, and the commands differ between a desktop session and a server (linger).
 */
export function installService(
  options: ServiceOptions,
  ctx: ServiceContext = { launcher: LAUNCHER, path: process.env.PATH ?? "/usr/bin:/bin", home: homedir(), env: process.env },
  out: (text: string) => void = (text) => process.stdout.write(text),
): number {
  const text = options.kind === "launchd" ? launchdPlist(options, ctx) : systemdUnit(options, ctx);
  if (options.print) {
    out(text);
    return EXIT_CODES.ok;
  }
  if (!existsSync(options.tokenFile) && ctx.env.CREWPLANE_RUNNER_TOKEN) {
    writeTokenFile(options.tokenFile, ctx.env.CREWPLANE_RUNNER_TOKEN);
    out(`wrote the token from CREWPLANE_RUNNER_TOKEN to ${options.tokenFile} (mode 600)\n`);
  }
  const check = checkTokenFile(options.tokenFile);
  if (!check.ok) {
    const hint = existsSync(options.tokenFile)
      ? ""
      : " (or run install-service with the token in CREWPLANE_RUNNER_TOKEN: it writes the file)";
    throw new UsageError(`${check.problem}; fix: ${check.fix}${hint}`);
  }
  const dir = options.dir ?? defaultServiceDir(options.kind, ctx.home, ctx.env);
  mkdirSync(dir, { recursive: true });
  const file = join(dir, options.kind === "launchd" ? `${LAUNCHD_LABEL}.plist` : SYSTEMD_UNIT);
  writeFileSync(file, text, { mode: 0o644 });
  out(`wrote ${file}\n\n`);
  const doctor = `${ctx.launcher} doctor --url ${options.url} --token-file ${options.tokenFile}`;
  if (options.kind === "launchd") {
    out(`Check the setup, then start it (and again after each change: bootout first):
  ${doctor}
  launchctl bootout gui/$(id -u)/${LAUNCHD_LABEL} 2>/dev/null; launchctl bootstrap gui/$(id -u) ${file}
  tail -f ${join(ctx.home, "Library", "Logs", "crewplane-runner.log")}
`);
  } else {
    out(`Check the setup, then start it:
  ${doctor}
  systemctl --user daemon-reload && systemctl --user enable --now ${SYSTEMD_UNIT}
  journalctl --user -u ${SYSTEMD_UNIT} -f
On a server, keep it running while you are logged out: loginctl enable-linger "$USER"
`);
  }
  return EXIT_CODES.ok;
}
