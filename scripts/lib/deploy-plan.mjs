// The pure half of `npm run deploy` (scripts/deploy.mjs): what wrangler.toml asks for, what the
// account already has, and the steps between the two. No I/O here: the script inspects the account
// with wrangler and hands the answers in. Tested in test/runner/deploy-plan.test.ts.
import { parse } from "smol-toml";

/** The placeholder `database_id` wrangler.toml ships with: "no database yet". */
export const ZERO_ID = "00000000-0000-0000-0000-000000000000";

/**
 * The Worker's secrets (src/env.ts). `generated` ones are made when missing (a human never needs to
 * pick them); `optional` ones are set only when the operator supplies them. `file`: asked for as a
 * path, since the value spans lines.
 */
export const SECRETS = [
  { name: "ADMIN_TOKEN", kind: "generated", about: "the bootstrap admin token" },
  { name: "AUDIT_SIGNING_KEY", kind: "generated", about: "the audit chain's Ed25519 checkpoint key (private JWK)" },
  { name: "EVOLUTION_KEY", kind: "generated", about: "AES-256-GCM key of SOUL rollback diffs (32 bytes, base64)" },
  { name: "SLACK_WEBHOOK_URL", kind: "optional", about: "Slack approval channel: incoming webhook URL" },
  { name: "SLACK_SIGNING_SECRET", kind: "optional", about: "Slack approval channel: signing secret" },
  { name: "APPROVAL_WEBHOOK_SECRET", kind: "optional", about: "signs the generic approval webhook" },
  { name: "GITHUB_APP_ID", kind: "optional", about: "GitHub App of official projects: app id" },
  { name: "GITHUB_APP_PRIVATE_KEY", kind: "optional", about: "GitHub App of official projects: private key (PEM)", file: true },
  { name: "GITHUB_APP_INSTALLATION_ID", kind: "optional", about: "GitHub App of official projects: installation id" },
];

/** A failure the operator can act on: `fix` says what to do. */
export class DeployError extends Error {
  constructor(message, fix) {
    super(message);
    this.name = "DeployError";
    this.fix = fix;
  }
}

const ENV_NAME = /^[A-Za-z0-9_-]+$/;

/**
 * What `[env.<envName>]` of wrangler.toml declares. Wrangler environments do not inherit bindings,
 * so everything is read from the environment's own tables; the top level (local development) is
 * never looked at, and never written.
 */
export function readTarget(configText, envName) {
  if (!ENV_NAME.test(envName)) throw new DeployError(`invalid environment name "${envName}"`, "use letters, digits, - and _");
  const config = parse(configText);
  const env = config.env?.[envName];
  if (!env) {
    const known = Object.keys(config.env ?? {});
    throw new DeployError(
      `wrangler.toml has no [env.${envName}]`,
      known.length
        ? `use --env ${known.join(" or --env ")}, or add [env.${envName}] with its own bindings`
        : `add [env.${envName}] with its own bindings`,
    );
  }
  // Wrangler's legacy environments (the default) name the Worker "<name>-<env>" unless the env names it.
  const workerName = env.name ?? `${config.name}-${envName}`;
  const d1 = (env.d1_databases ?? []).map((db) => ({
    binding: db.binding,
    name: db.database_name,
    id: db.database_id && db.database_id !== ZERO_ID ? db.database_id : undefined,
    migrationsDir: db.migrations_dir ?? "migrations",
  }));
  const queues = unique([
    ...(env.queues?.producers ?? []).map((p) => p.queue),
    ...(env.queues?.consumers ?? []).flatMap((c) => [c.queue, c.dead_letter_queue]),
  ]);
  const buckets = unique((env.r2_buckets ?? []).map((b) => b.bucket_name));
  return { envName, workerName, accountId: env.account_id ?? config.account_id, d1, queues, buckets };
}

function unique(names) {
  return [...new Set(names.filter(Boolean))];
}

/**
 * Writes `id` as the `database_id` of the `[[env.<envName>.d1_databases]]` entry with this binding,
 * by editing that one line: comments, order and the top-level (local) bindings stay byte-identical,
 * which a parse-and-stringify round trip would not keep.
 */
export function setD1DatabaseId(configText, envName, binding, id) {
  const lines = configText.split("\n");
  const header = `[[env.${envName}.d1_databases]]`;
  const isHeader = (line) => /^\s*\[/.test(line);
  for (let i = 0; i < lines.length; i += 1) {
    if (lines[i].replace(/\s+/g, "") !== header) continue;
    let end = i + 1;
    while (end < lines.length && !isHeader(lines[end])) end += 1;
    const block = lines.slice(i + 1, end);
    const bindingLine = block.find((l) => /^\s*binding\s*=/.test(l));
    if (!bindingLine || parse(bindingLine).binding !== binding) continue;
    const idAt = block.findIndex((l) => /^\s*database_id\s*=/.test(l));
    if (idAt >= 0) {
      lines[i + 1 + idAt] = lines[i + 1 + idAt].replace(/=\s*("[^"]*"|'[^']*')/, `= "${id}"`);
    } else {
      const nameAt = block.findIndex((l) => /^\s*database_name\s*=/.test(l));
      lines.splice(i + 1 + (nameAt >= 0 ? nameAt + 1 : 0), 0, `database_id = "${id}"`);
    }
    const updated = lines.join("\n");
    const check = readTarget(updated, envName).d1.find((db) => db.binding === binding);
    if (check?.id !== id) throw new Error(`could not write database_id for ${binding} into [env.${envName}]`);
    return updated;
  }
  throw new DeployError(`wrangler.toml has no [[env.${envName}.d1_databases]] with binding "${binding}"`, "add it (see docs/deploy.md)");
}

/**
 * The steps from what the account has to what wrangler.toml asks for, in the order they must run:
 * resources, their ids into wrangler.toml, migrations (before any code that needs them), secrets
 * (before the code, so no version ever runs without them), then the deploy. Nothing is ever
 * deleted or overwritten: an existing resource is adopted, a secret already set is left alone.
 *
 * account: { d1: [{uuid, name}], queues: Set<name>, buckets: Set<name> }
 * secretsSet: Set<name>, or null when the Worker does not exist yet
 * pendingMigrations: name → string[] (from `d1 migrations list`) for databases already in use;
 *   a database the plan creates has every local migration pending; one it adopts is checked later
 * localMigrations: binding → the migration files in its migrations_dir
 * provided: Set<name> of optional secrets the operator supplied
 */
export function planDeploy({ target, account, secretsSet, localMigrations, pendingMigrations = {}, provided = new Set() }) {
  const problems = [];
  const steps = [];
  for (const db of target.d1) {
    const byId = db.id && account.d1.find((d) => d.uuid === db.id);
    const byName = account.d1.find((d) => d.name === db.name);
    if (db.id && byId) {
      const pending = pendingMigrations[db.binding];
      if (pending === undefined || pending.length > 0) steps.push({ action: "apply-migrations", db, pending: pending ?? null });
      continue;
    }
    if (db.id) {
      problems.push(
        new DeployError(
          `[env.${target.envName}] names D1 database id ${db.id} (binding ${db.binding}), which is not in this account`,
          byName
            ? `the account's "${db.name}" has id ${byName.uuid}: if that is the one, set database_id to it (or to ${ZERO_ID} to adopt it) and re-run`
            : `it was deleted, or you are logged in to another account (npx wrangler whoami); to start over with a new, empty database set database_id back to ${ZERO_ID} and re-run`,
        ),
      );
      continue;
    }
    if (byName) {
      steps.push({ action: "adopt-d1", db, id: byName.uuid });
      steps.push({ action: "apply-migrations", db, pending: null });
    } else {
      steps.push({ action: "create-d1", db });
      steps.push({ action: "apply-migrations", db, pending: localMigrations[db.binding] ?? [] });
    }
  }
  for (const name of target.queues) if (!account.queues.has(name)) steps.push({ action: "create-queue", name });
  for (const name of target.buckets) if (!account.buckets.has(name)) steps.push({ action: "create-bucket", name });
  const set = secretsSet ?? new Set();
  const skipped = [];
  for (const secret of SECRETS) {
    if (set.has(secret.name)) continue;
    if (secret.kind === "generated" || provided.has(secret.name)) steps.push({ action: "put-secret", secret });
    else skipped.push(secret);
  }
  steps.push({ action: "deploy" });
  // Resources first, then migrations, secrets and the deploy, whatever order the loops found them in.
  const order = ["create-d1", "adopt-d1", "create-queue", "create-bucket", "apply-migrations", "put-secret", "deploy"];
  steps.sort((a, b) => order.indexOf(a.action) - order.indexOf(b.action));
  return { steps, problems, skippedSecrets: skipped, changesAccount: steps.some((s) => s.action !== "deploy") };
}

/** One line per step, for the printed plan. */
export function describeStep(step, target) {
  switch (step.action) {
    case "create-d1":
      return `create D1 database ${step.db.name} (binding ${step.db.binding}) and write its id into [env.${target.envName}]`;
    case "adopt-d1":
      return `use the existing D1 database ${step.db.name} (${step.id}): write its id into [env.${target.envName}]`;
    case "create-queue":
      return `create queue ${step.name}`;
    case "create-bucket":
      return `create R2 bucket ${step.name}`;
    case "apply-migrations":
      if (step.pending === null) return `apply the D1 migrations ${step.db.name} has not had yet (checked once its id is written)`;
      return `apply ${step.pending.length} D1 migration(s) to ${step.db.name}: ${summarize(step.pending)}`;
    case "put-secret":
      return `set secret ${step.secret.name}`;
    case "deploy":
      return `deploy the Worker ${target.workerName} (wrangler deploy --env ${target.envName})`;
    default:
      throw new Error(`unknown step ${step.action}`);
  }
}

function summarize(names) {
  return names.length <= 3 ? names.join(", ") : `${names[0]} … ${names[names.length - 1]}`;
}
