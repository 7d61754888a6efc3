/**
 * The runner token kept in a file (`--token-file`), the way a service reads it: the file must be the
 * owner's alone (mode 600 or stricter), so other users of the host can read it neither there nor,
 * as with `--token`, on a command line.
 */
import { mkdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { homedir } from "node:os";
import { dirname, join } from "node:path";
import { UsageError } from "./errors.ts";

/** `${XDG_CONFIG_HOME:-~/.config}/crewplane/runner-token`, where install-service keeps it by default. */
export function defaultTokenFile(env: NodeJS.ProcessEnv = process.env): string {
  return join(env.XDG_CONFIG_HOME || join(homedir(), ".config"), "crewplane", "runner-token");
}

export type TokenFileCheck = { ok: true; token: string; mode: number } | { ok: false; problem: string; fix: string };

/** Reads and checks a token file; never throws. */
export function checkTokenFile(path: string): TokenFileCheck {
  let mode: number;
  try {
    const stat = statSync(path);
    if (!stat.isFile())
      return { ok: false, problem: `token file ${path} is not a regular file`, fix: `point --token-file at the file holding the token` };
    mode = stat.mode & 0o777;
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    return code === "ENOENT"
      ? {
          ok: false,
          problem: `token file ${path} does not exist`,
          fix: `write the runner token into it: (umask 077; printf '%s\\n' "$TOKEN" > ${path})`,
        }
      : { ok: false, problem: `token file ${path} cannot be read (${code})`, fix: `make it readable by this user: chown "$USER" ${path}` };
  }
  // Windows has no such mode bits; everywhere else group or world access is refused.
  if (process.platform !== "win32" && (mode & 0o077) !== 0) {
    return {
      ok: false,
      problem: `token file ${path} is accessible to other users (mode ${mode.toString(8).padStart(3, "0")})`,
      fix: `chmod 600 ${path}`,
    };
  }
  let token: string;
  try {
    token = readFileSync(path, "utf8").trim();
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    return {
      ok: false,
      problem: `token file ${path} cannot be read (${code})`,
      fix: `make it readable by this user: chown "$USER" ${path}`,
    };
  }
  if (!token)
    return {
      ok: false,
      problem: `token file ${path} is empty`,
      fix: `write the runner token into it (POST /v1/admin/runners creates one)`,
    };
  if (/\s/.test(token))
    return { ok: false, problem: `token file ${path} holds more than one word`, fix: "keep only the token in it, on one line" };
  return { ok: true, token, mode };
}

/** The token, or a UsageError naming the fix (exit 2: restarting the runner cannot help). */
export function readTokenFile(path: string): string {
  const check = checkTokenFile(path);
  if (!check.ok) throw new UsageError(`${check.problem}; fix: ${check.fix}`);
  return check.token;
}

/** Creates the file (and its directory, 700) holding `token`, mode 600; never replaces an existing one. */
export function writeTokenFile(path: string, token: string): void {
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  writeFileSync(path, `${token}\n`, { mode: 0o600, flag: "wx" });
}
