// Reading wrangler 4's output, for scripts/deploy.mjs. Pure functions of a finished command's
// { code, stdout, stderr }. The formats are those of the pinned wrangler (4.164.0,
// node_modules/wrangler/wrangler-dist/cli.js); each one and where it comes from is listed in the
// header of the stand-in that imitates them, test/fixtures/fake-wrangler/wrangler.mjs.
import { stripVTControlCharacters } from "node:util";

const clean = (text) => stripVTControlCharacters(text ?? "");

/** The first JSON value in a command's stdout (wrangler may print a warning line before it). */
function firstJson(stdout, open) {
  const text = clean(stdout);
  const at = text.indexOf(open);
  if (at < 0) return undefined;
  try {
    return JSON.parse(text.slice(at));
  } catch {
    return undefined;
  }
}

/** `wrangler whoami --json`: `{"loggedIn":false}` (exit 1) or `{loggedIn:true, email, accounts:[{id,name}], …}`. */
export function parseWhoami(result) {
  const json = firstJson(result.stdout, "{");
  if (!json || typeof json.loggedIn !== "boolean") return { loggedIn: false, unreadable: true };
  return { loggedIn: json.loggedIn, email: json.email, authType: json.authType, accounts: json.accounts ?? [] };
}

/** `wrangler d1 list --json`: every database of the account, `[{uuid, name, …}]`. */
export function parseD1List(result) {
  const json = firstJson(result.stdout, "[");
  if (!Array.isArray(json)) throw new Error("unreadable output of `wrangler d1 list --json`");
  return json.map((db) => ({ uuid: db.uuid, name: db.name }));
}

/**
 * `wrangler queues info <name>`: `Queue Name: <name>` lines on success; a missing queue is the
 * UserError `Queue "<name>" does not exist. To create it, run: …` (exit 1). true / false / undefined
 * (some other failure: the caller reports it).
 */
export function queueExists(result, name) {
  const out = clean(result.stdout);
  if (result.code === 0) return new RegExp(`^Queue Name: ${escape(name)}\\s*$`, "m").test(out);
  if (clean(result.stderr + out).includes(`Queue "${name}" does not exist`)) return false;
  return undefined;
}

/** `wrangler r2 bucket list`: blocks of `name:  <bucket>` / `creation_date:  <iso>` lines. */
export function parseR2List(result) {
  return new Set([...clean(result.stdout).matchAll(/^name:\s+(\S+)\s*$/gm)].map((m) => m[1]));
}

/**
 * `wrangler secret list` (JSON is its default format): `[{"name": …, "type": "secret_text"}]`.
 * null when the Worker does not exist yet (`Worker "<name>" … not found.`, exit 1).
 */
export function parseSecretList(result) {
  if (result.code !== 0) {
    if (/Worker ".+?"( \(env: .+?\))? not found/.test(clean(result.stderr + result.stdout))) return null;
    throw new Error("`wrangler secret list` failed");
  }
  const json = firstJson(result.stdout, "[");
  if (!Array.isArray(json)) throw new Error("unreadable output of `wrangler secret list`");
  return new Set(json.map((s) => s.name));
}

/** `wrangler d1 migrations list`: `✅ No migrations to apply!`, or a table of the pending files' names. */
export function parsePendingMigrations(result) {
  const out = clean(result.stdout);
  if (out.includes("No migrations to apply")) return [];
  const names = [...out.matchAll(/│\s*(\S+\.sql)\s*│/g)].map((m) => m[1]);
  if (names.length === 0) throw new Error("unreadable output of `wrangler d1 migrations list`");
  return names;
}

/** `wrangler d1 create`: the config snippet it prints carries `database_id = "<uuid>"` (TOML config). */
export function parseD1Create(result) {
  return /database_id\s*=\s*"([0-9a-f-]{36})"/.exec(clean(result.stdout))?.[1];
}

/** `wrangler deploy`: the workers.dev URL under "Deployed <name> triggers" and `Current Version ID: <id>`. */
export function parseDeploy(result) {
  const out = clean(result.stdout);
  return {
    url: /^\s*(https:\/\/\S+\.workers\.dev)\s*$/m.exec(out)?.[1],
    versionId: /Current Version ID:\s*(\S+)/.exec(out)?.[1],
  };
}

/**
 * What went wrong, in wrangler's words: the `✘ [ERROR]` text and its notes, without the banner,
 * the log-file line and the "open an issue" footer.
 */
export function errorText(result) {
  const stderr = clean(result.stderr);
  // Errors go to stderr; stdout (tables, progress) only when stderr has nothing to say.
  const text = stderr.includes("[ERROR]") ? stderr : clean(`${result.stderr}\n${result.stdout}`);
  const at = text.indexOf("✘ [ERROR]");
  const body = (at >= 0 ? text.slice(at) : text).replaceAll("✘ [ERROR]", "");
  return body
    .split("\n")
    .filter((l) => !/Logs were written to|If you think this is a bug|github\.com\/cloudflare\/workers-sdk\/issues/.test(l))
    .filter((l) => !/⛅️ wrangler|^─+$/.test(l.trim()))
    .map((l) => l.trim())
    .filter(Boolean)
    .join("\n");
}

/** A create that failed because the name is already in use in this account (D1 7502, R2 10004, Queues 11009). */
export function isNameTaken(text) {
  return /already exists|already taken|\[code: (7502|10004|11009)\]/i.test(text);
}

/** A fix for the failures an operator meets first, keyed by what wrangler says. */
export function knownFix(text) {
  if (/code: 10042|enable R2/i.test(text)) return "enable R2 for the account in the Cloudflare dashboard (R2 Object Storage), then re-run";
  if (/maximum number of D1 databases|code: 7406/i.test(text))
    return "delete an unused D1 database (npx wrangler d1 list) or raise the limit, then re-run";
  if (/code: 10000|Authentication error/i.test(text)) {
    return "the login lacks a permission: run `npx wrangler login` again, or give the API token Workers Scripts, D1, Queues and R2 edit rights";
  }
  if (/latest version of your Worker isn't currently deployed|code: 1021[45]/i.test(text)) {
    return "a gradual deployment is in progress: finish it (npx wrangler versions deploy), then re-run";
  }
  if (/More than one account/i.test(text)) return "set CLOUDFLARE_ACCOUNT_ID=<account id> (or pass --account-id), then re-run";
  if (/CLOUDFLARE_API_TOKEN|not authenticated|wrangler login/i.test(text))
    return "run `npx wrangler login` (or set CLOUDFLARE_API_TOKEN), then re-run";
  return undefined;
}

function escape(text) {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}
