#!/usr/bin/env node
// `npm run deploy`: crewplane on a Cloudflare account in one command, and again with nothing to do.
// Checks the wrangler login, creates what [env.<env>] of wrangler.toml names and the account lacks
// (D1 database, queues and their dead-letter queues, R2 bucket), writes the D1 id into that
// environment, applies the D1 migrations remotely, sets the secrets that are missing (generated or
// supplied; one already set is never touched), then deploys. It stops at the first failure and says
// what to do; a failed migration stops it before the deploy. The plan is pure
// (scripts/lib/deploy-plan.mjs); this file only talks to wrangler, the terminal and the config file.
import { spawn } from "node:child_process";
import { generateKeyPairSync, randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, statSync, writeFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { DeployError, describeStep, planDeploy, readTarget, SECRETS, setD1DatabaseId } from "./lib/deploy-plan.mjs";
import {
  errorText,
  isNameTaken,
  knownFix,
  parseD1Create,
  parseD1List,
  parseDeploy,
  parsePendingMigrations,
  parseR2List,
  parseSecretList,
  parseWhoami,
  queueExists,
} from "./lib/wrangler-output.mjs";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");

const USAGE = `Usage: npm run deploy -- [options]

Creates what wrangler.toml's [env.<env>] needs in your Cloudflare account, applies the D1
migrations, sets missing secrets and deploys. Safe to run again: it creates, writes and sets only
what is missing, then deploys the current code.

Options:
  --dry-run            print the plan and change nothing
  --env <name>         the wrangler environment (default: production)
  --yes                never prompt: generate the generated secrets, take optional ones from the
                       environment (SLACK_WEBHOOK_URL=… npm run deploy -- --yes)
  --config <path>      the wrangler config (default: wrangler.toml of the repository)
  --account-id <id>    the Cloudflare account, when the login reaches more than one
  -h, --help           show this help

Environment: WRANGLER (the wrangler binary; default node_modules/.bin/wrangler),
CLOUDFLARE_ACCOUNT_ID, CLOUDFLARE_API_TOKEN (CI), and any secret by its name.
`;

function say(line = "") {
  process.stdout.write(`${line}\n`);
}

function parseOptions(argv) {
  try {
    const { values } = parseArgs({
      args: argv,
      options: {
        "dry-run": { type: "boolean", default: false },
        env: { type: "string", default: "production" },
        yes: { type: "boolean", default: false },
        config: { type: "string" },
        "account-id": { type: "string" },
        help: { type: "boolean", short: "h", default: false },
      },
      strict: true,
      allowPositionals: false,
    });
    return {
      dryRun: values["dry-run"],
      env: values.env,
      yes: values.yes,
      config: resolve(values.config ?? join(root, "wrangler.toml")),
      accountId: values["account-id"],
      help: values.help,
    };
  } catch (err) {
    throw new DeployError(err.message, "see npm run deploy -- --help");
  }
}

/** Runs wrangler with the config and environment on every call, capturing its output. */
function wranglerRunner({ bin, config, env, accountId }) {
  const childEnv = { ...process.env, ...(accountId ? { CLOUDFLARE_ACCOUNT_ID: accountId } : {}) };
  return async function run(args, { input } = {}) {
    const argv = [...args, "--env", env, "--config", config];
    return await new Promise((resolvePromise, reject) => {
      const child = spawn(bin, argv, {
        cwd: dirname(config),
        env: childEnv,
        stdio: [input === undefined ? "ignore" : "pipe", "pipe", "pipe"],
      });
      let stdout = "";
      let stderr = "";
      child.stdout.on("data", (c) => (stdout += c));
      child.stderr.on("data", (c) => (stderr += c));
      child.on("error", (err) =>
        reject(
          err.code === "ENOENT" || err.code === "EACCES"
            ? new DeployError(
                `wrangler could not be started (${bin}: ${err.code})`,
                "run `npm install`, or point WRANGLER at a wrangler binary",
              )
            : err,
        ),
      );
      child.on("close", (code) => resolvePromise({ code, stdout, stderr, args }));
      if (input !== undefined) child.stdin.end(input);
    });
  };
}

/** A wrangler call that must succeed; its failure becomes a DeployError in wrangler's words. */
async function must(run, args, what) {
  const result = await run(args);
  if (result.code !== 0) throw failure(result, what);
  return result;
}

function failure(result, what, fix) {
  const text = errorText(result);
  return new DeployError(
    `${what} failed (wrangler ${result.args.join(" ")}):\n    ${text.split("\n").join("\n    ")}`,
    fix ?? knownFix(text) ?? "fix what wrangler reports above, then re-run npm run deploy: it picks up where it stopped",
  );
}

function generateSecret(name) {
  switch (name) {
    case "ADMIN_TOKEN":
      // The same shape as the local stack's token (scripts/start.mjs).
      return `cpadmin_${randomBytes(24).toString("hex")}`;
    case "AUDIT_SIGNING_KEY": {
      // What src/audit/keys.ts loads: an Ed25519 private JWK carrying its public half.
      const { d, x } = generateKeyPairSync("ed25519").privateKey.export({ format: "jwk" });
      return JSON.stringify({ kty: "OKP", crv: "Ed25519", d, x });
    }
    case "EVOLUTION_KEY":
      // src/evolution/soul-crypto.ts: 32 raw bytes in standard base64.
      return randomBytes(32).toString("base64");
    default:
      throw new Error(`no generator for ${name}`);
  }
}

/** A secret supplied through the environment: `<NAME>`, or `<NAME>_FILE` for a value kept in a file. */
function secretFromEnv(secret) {
  const value = process.env[secret.name];
  if (value) return value;
  const file = process.env[`${secret.name}_FILE`];
  if (file) return readFileSync(file, "utf8");
  return undefined;
}

/** One line from the terminal; without echo for secrets. Ctrl-C cancels the whole run. */
function ask(question, { echo = true } = {}) {
  return new Promise((resolvePromise, reject) => {
    const stdin = process.stdin;
    process.stdout.write(question);
    stdin.setRawMode(true);
    stdin.setEncoding("utf8");
    stdin.resume();
    let value = "";
    const finish = () => {
      stdin.off("data", onData);
      stdin.setRawMode(false);
      stdin.pause();
      process.stdout.write("\n");
    };
    function onData(chunk) {
      for (const ch of chunk) {
        if (ch === "\r" || ch === "\n") return (finish(), resolvePromise(value.trim()));
        if (ch === "\u0003") return (finish(), reject(new DeployError("cancelled", "nothing was changed after the last step shown")));
        if (ch === "\u007f" || ch === "\b") value = value.slice(0, -1);
        else {
          value += ch;
          if (echo) process.stdout.write(ch);
        }
      }
    }
    stdin.on("data", onData);
  });
}

/**
 * The values of the missing secrets: from the environment, or typed at the prompt for those in
 * `asked` when there is a terminal. A generated secret typed in is used as typed; one left empty is
 * generated later, an optional one left empty stays unset.
 */
async function gatherSecrets(missing, { interactive, asked }) {
  const values = new Map();
  for (const secret of missing) {
    const fromEnv = secretFromEnv(secret);
    if (fromEnv !== undefined) {
      values.set(secret.name, { value: fromEnv, source: "from the environment" });
      continue;
    }
    if (!interactive || !asked.has(secret.name)) continue;
    const hint = secret.kind === "generated" ? "Enter to generate one" : "Enter to skip";
    const typed = secret.file
      ? await ask(`${secret.name}: ${secret.about}. Path to the file (${hint}): `)
      : await ask(`${secret.name}: ${secret.about}. Value (hidden; ${hint}): `, { echo: false });
    if (!typed) continue;
    values.set(secret.name, { value: secret.file ? readFileSync(resolve(typed), "utf8") : typed, source: "typed" });
  }
  return values;
}

function localMigrations(config, db) {
  const dir = resolve(dirname(config), db.migrationsDir);
  if (!existsSync(dir)) throw new DeployError(`migrations directory ${dir} does not exist`, "check migrations_dir in wrangler.toml");
  return readdirSync(dir)
    .filter((f) => f.endsWith(".sql"))
    .sort();
}

/** Writes the config through a temporary file, so an interrupted write never leaves half a wrangler.toml. */
function writeConfig(config, text) {
  const tmp = `${config}.deploy-${process.pid}.tmp`;
  writeFileSync(tmp, text, { mode: statSync(config).mode & 0o777 });
  renameSync(tmp, config);
}

/** The generated admin token is written beside the config, never printed (CI logs keep what they print). */
function saveAdminToken(config, env, token) {
  const dir = join(dirname(config), ".crewplane");
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const file = join(dir, `${env}-admin-token`);
  writeFileSync(file, `${token}\n`, { mode: 0o600 });
  return file;
}

async function main(argv) {
  const opts = parseOptions(argv);
  if (opts.help) return (say(USAGE), 0);
  const bin = process.env.WRANGLER || join(root, "node_modules", ".bin", "wrangler");
  if (!process.env.WRANGLER && Number(process.versions.node.split(".")[0]) < 22) {
    throw new DeployError(
      `wrangler needs Node 22; this is Node ${process.versions.node}`,
      "run it as `npm run deploy`, which uses the project's Node 22",
    );
  }
  if (!existsSync(opts.config)) throw new DeployError(`no wrangler config at ${opts.config}`, "pass --config <path>");
  const configText = readFileSync(opts.config, "utf8");
  const target = readTarget(configText, opts.env);
  const accountId = opts.accountId ?? process.env.CLOUDFLARE_ACCOUNT_ID ?? target.accountId;
  const run = wranglerRunner({ bin, config: opts.config, env: opts.env, accountId });
  const interactive = !opts.yes && !opts.dryRun && Boolean(process.stdin.isTTY && process.stdout.isTTY);
  const fromCwd = relative(process.cwd(), opts.config);
  const configLabel = fromCwd && !fromCwd.startsWith("..") ? fromCwd : opts.config;
  say(
    `crewplane deploy: environment "${opts.env}", Worker "${target.workerName}", config ${configLabel}${opts.dryRun ? " (dry run)" : ""}`,
  );

  // 1. Who we are. Nothing else runs unless wrangler is logged in and knows which account to use.
  const who = parseWhoami(await run(["whoami", "--json"]));
  if (!who.loggedIn) {
    throw new DeployError(
      "wrangler is not logged in to Cloudflare; nothing was created",
      "run `npx wrangler login` (on a server or in CI: set CLOUDFLARE_API_TOKEN to an API token with Workers Scripts, D1, Queues and R2 edit rights), then re-run npm run deploy",
    );
  }
  if (!accountId && who.accounts.length > 1) {
    throw new DeployError(
      "this login reaches more than one Cloudflare account, and none is chosen; nothing was created",
      `choose one: npm run deploy -- --account-id <id> (or CLOUDFLARE_ACCOUNT_ID=<id>). Accounts: ${who.accounts.map((a) => `${a.name} (${a.id})`).join(", ")}`,
    );
  }
  const account = who.accounts.find((a) => a.id === accountId) ?? (who.accounts.length === 1 ? who.accounts[0] : undefined);
  say(
    `Logged in${who.email ? ` as ${who.email}` : ""}${account ? `, account ${account.name} (${account.id})` : accountId ? `, account ${accountId}` : ""}`,
  );

  // 2. What the account has. Only reads.
  const d1 = parseD1List(await must(run, ["d1", "list", "--json"], "listing D1 databases"));
  const queues = new Set();
  for (const name of target.queues) {
    const result = await run(["queues", "info", name]);
    const exists = queueExists(result, name);
    if (exists === undefined) throw failure(result, `looking up queue ${name}`);
    if (exists) queues.add(name);
  }
  const buckets = parseR2List(await must(run, ["r2", "bucket", "list"], "listing R2 buckets"));
  const secretsResult = await run(["secret", "list"]);
  let secretsSet;
  try {
    secretsSet = parseSecretList(secretsResult);
  } catch {
    throw failure(secretsResult, "listing the Worker's secrets");
  }
  const pendingMigrations = {};
  for (const db of target.d1) {
    // Asks the database itself, so only for one that wrangler.toml already points at.
    if (!db.id || !d1.some((d) => d.uuid === db.id)) continue;
    const result = await must(run, ["d1", "migrations", "list", db.binding, "--remote"], `checking the migrations of ${db.name}`);
    pendingMigrations[db.binding] = parsePendingMigrations(result);
  }

  // 3. The plan, and the secret values it needs, asked for before anything changes.
  const migrationsByDb = Object.fromEntries(target.d1.map((db) => [db.binding, localMigrations(opts.config, db)]));
  const planWith = (provided) =>
    planDeploy({ target, account: { d1, queues, buckets }, secretsSet, localMigrations: migrationsByDb, pendingMigrations, provided });
  const { problems } = planWith(new Set());
  if (problems.length > 0) {
    for (const problem of problems.slice(1)) say(`✗ ${problem.message}\n  What to do: ${problem.fix}`);
    throw problems[0];
  }
  // Optional secrets are asked for on the first deploy only; later they come from the environment.
  const firstDeploy = !secretsSet?.has("ADMIN_TOKEN");
  const missingSecrets = SECRETS.filter((s) => !secretsSet?.has(s.name));
  const asked = missingSecrets.filter((s) => s.kind === "generated" || firstDeploy);
  if (interactive && asked.some((s) => secretFromEnv(s) === undefined)) {
    say("\nSecrets the Worker does not have yet (Enter generates a generated one, skips an optional one):");
  }
  const supplied = opts.dryRun
    ? new Map(missingSecrets.flatMap((s) => (secretFromEnv(s) === undefined ? [] : [[s.name, { source: "from the environment" }]])))
    : await gatherSecrets(missingSecrets, { interactive, asked: new Set(asked.map((s) => s.name)) });
  const plan = planWith(new Set(supplied.keys()));
  say("");
  say(plan.changesAccount ? "Plan:" : "Nothing to create, write, migrate or set: the account already matches wrangler.toml.");
  for (const step of plan.steps) {
    const from = step.action === "put-secret" ? ` (${supplied.get(step.secret.name)?.source ?? "generated"})` : "";
    say(`  + ${describeStep(step, target)}${from}`);
  }
  if (plan.skippedSecrets.length > 0) {
    say(`  - optional secrets left unset: ${plan.skippedSecrets.map((s) => s.name).join(", ")}`);
    say(`    (pass one in the environment on a later run, or: npx wrangler secret put <NAME> --env ${opts.env})`);
  }
  if (!plan.changesAccount) say("  (the deploy uploads the current code as a new version; with unchanged code it serves the same)");
  if (opts.dryRun) {
    say("\nDry run: nothing was changed.");
    return 0;
  }
  if (interactive && !/^(y|yes|)$/i.test(await ask("\nGo ahead? [Y/n] "))) {
    say("Stopped; nothing was changed.");
    return 1;
  }
  say("");

  // 4. Do it, in the plan's order; each step is safe to repeat, so a re-run continues a broken one.
  let text = configText;
  const writeId = (db, id) => {
    text = setD1DatabaseId(text, opts.env, db.binding, id);
    writeConfig(opts.config, text);
    db.id = id;
    say(`✓ wrote database_id ${id} for ${db.binding} into [env.${opts.env}] of ${configLabel}`);
  };
  let adminTokenFile;
  let url;
  for (const step of plan.steps) {
    switch (step.action) {
      case "create-d1": {
        const result = await run(["d1", "create", step.db.name]);
        let id = result.code === 0 ? parseD1Create(result) : undefined;
        if (result.code === 0 && !id) id = await findD1(run, step.db.name);
        if (result.code === 0 && !id) {
          throw new DeployError(
            `created D1 database ${step.db.name} but could not read its id`,
            "re-run npm run deploy: it finds the database by name and uses it",
          );
        }
        if (result.code !== 0) {
          // Taken: it exists after all (made by hand, or by a run that died before writing its id).
          id = await findD1(run, step.db.name);
          if (!id) throw failure(result, `creating D1 database ${step.db.name}`);
          say(`• D1 database ${step.db.name} already exists (${id}): using it`);
          // Not new after all: which migrations it has had is for the database to say.
          for (const later of plan.steps) if (later.action === "apply-migrations" && later.db === step.db) later.pending = null;
        } else say(`✓ created D1 database ${step.db.name} (${id})`);
        writeId(step.db, id);
        break;
      }
      case "adopt-d1":
        writeId(step.db, step.id);
        break;
      case "create-queue": {
        const result = await run(["queues", "create", step.name]);
        if (result.code === 0) say(`✓ created queue ${step.name}`);
        else if (queueExists(await run(["queues", "info", step.name]), step.name) || isNameTaken(errorText(result))) {
          say(`• queue ${step.name} already exists: using it`);
        } else throw failure(result, `creating queue ${step.name}`);
        break;
      }
      case "create-bucket": {
        const result = await run(["r2", "bucket", "create", step.name]);
        if (result.code === 0) say(`✓ created R2 bucket ${step.name}`);
        else if (parseR2List(await run(["r2", "bucket", "list"])).has(step.name) || isNameTaken(errorText(result))) {
          say(`• R2 bucket ${step.name} already exists: using it`);
        } else throw failure(result, `creating R2 bucket ${step.name}`);
        break;
      }
      case "apply-migrations":
        await applyMigrations(run, step, opts.env);
        break;
      case "put-secret": {
        const given = supplied.get(step.secret.name);
        const value = given?.value ?? generateSecret(step.secret.name);
        // Saved before it is set: a run that dies after the put must not lose the only copy.
        if (step.secret.name === "ADMIN_TOKEN" && !given) adminTokenFile = saveAdminToken(opts.config, opts.env, value);
        const result = await run(["secret", "put", step.secret.name], { input: value });
        if (result.code !== 0) throw failure(result, `setting secret ${step.secret.name}`);
        say(`✓ set secret ${step.secret.name}${given ? "" : " (generated)"}`);
        break;
      }
      case "deploy": {
        const result = await run(["deploy"]);
        if (result.code !== 0) {
          throw failure(
            result,
            "deploying the Worker",
            `${knownFix(errorText(result)) ?? "fix what wrangler reports above"}; the previous version (if any) keeps serving. Re-run npm run deploy`,
          );
        }
        ({ url } = parseDeploy(result));
        say(`✓ deployed ${target.workerName}${url ? ` at ${url}` : ""}`);
        break;
      }
    }
  }

  say("\nDone.");
  if (adminTokenFile) say(`The generated ADMIN_TOKEN is in ${adminTokenFile} (mode 600): keep it somewhere safe, then delete the file.`);
  const base = url ?? "<Worker URL>";
  say(`Check it: curl ${base}/v1/health`);
  say(`Runners: create a token with POST ${base}/v1/admin/runners, then on each host see docs/runner.md ("As a service").`);
  return 0;
}

async function findD1(run, name) {
  const listed = await run(["d1", "list", "--json"]);
  if (listed.code !== 0) return undefined;
  return parseD1List(listed).find((d) => d.name === name)?.uuid;
}

async function applyMigrations(run, step, env) {
  const { db } = step;
  let pending = step.pending;
  if (pending === null) {
    pending = parsePendingMigrations(
      await must(run, ["d1", "migrations", "list", db.binding, "--remote"], `checking the migrations of ${db.name}`),
    );
  }
  if (pending.length === 0) return say(`• ${db.name}: no migrations pending`);
  const result = await run(["d1", "migrations", "apply", db.binding, "--remote"]);
  if (result.code !== 0) {
    throw failure(
      result,
      `applying the D1 migrations to ${db.name}`,
      "nothing was deployed: the Worker still runs its previous version (or does not exist yet). D1 rolled back the migration that failed; " +
        "the ones before it stay applied. Fix that migration (or the data it trips over), see what is still pending with " +
        `\`npx wrangler d1 migrations list ${db.binding} --remote --env ${env}\`, then re-run npm run deploy`,
    );
  }
  say(`✓ applied ${pending.length} migration(s) to ${db.name}`);
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err) => {
    if (err instanceof DeployError) {
      process.stderr.write(`✗ ${err.message}\n  What to do: ${err.fix}\n`);
    } else {
      process.stderr.write(`✗ ${err?.stack ?? err}\n`);
    }
    process.exit(1);
  },
);
