/**
 * `npm run deploy` (scripts/deploy.mjs), run for real as a child process against the stand-in
 * wrangler (test/fixtures/fake-wrangler/wrangler.mjs), on a copy of wrangler.toml and the migrations.
 */
import { spawn } from "node:child_process";
import { webcrypto } from "node:crypto";
import { copyFileSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { repoRoot, tempDir } from "./helpers/paths.ts";

const deployScript = join(repoRoot, "scripts/deploy.mjs");
const fakeWrangler = join(repoRoot, "test/fixtures/fake-wrangler/wrangler.mjs");
const migrationFiles = readdirSync(join(repoRoot, "migrations"))
  .filter((f) => f.endsWith(".sql"))
  .sort();
const ZERO_ID = "00000000-0000-0000-0000-000000000000";
const QUEUES = [
  "crewplane-dispatch",
  "crewplane-node-pushes",
  "crewplane-approval-deliveries",
  "crewplane-dispatch-dlq",
  "crewplane-node-pushes-dlq",
  "crewplane-approval-deliveries-dlq",
];
/** The event archive and the employees' attachments (wrangler.toml's production R2 buckets). */
const BUCKETS = ["crewplane-event-archive", "crewplane-attachments"];
const BUCKET = BUCKETS[0]!;
/** Calls that change the account (or would, if wrangler were real). */
const MUTATING = /^(d1 create|d1 migrations apply|queues create|r2 bucket create|secret put|deploy)\b/;

const cleanups: Array<() => void> = [];
afterEach(() => {
  for (const cleanup of cleanups.splice(0)) cleanup();
});

interface Account {
  loggedIn?: boolean;
  accounts?: Array<{ id: string; name: string }>;
  d1?: Array<{ uuid: string; name: string; applied: string[] }>;
  queues?: string[];
  buckets?: string[];
  workers?: Record<string, { secrets: Record<string, string>; versions: string[] }>;
  nameTaken?: string[];
  failMigration?: string;
  fail?: Array<{ command: string; error: string }>;
  calls?: Array<{ argv: string[]; stdinBytes?: number }>;
}

/** A project directory: wrangler.toml and migrations/ copied from the repository, and an account. */
function project(account: Account = {}) {
  const { dir, cleanup } = tempDir("crewplane-deploy-");
  cleanups.push(cleanup);
  copyFileSync(join(repoRoot, "wrangler.toml"), join(dir, "wrangler.toml"));
  mkdirSync(join(dir, "migrations"));
  for (const f of migrationFiles) copyFileSync(join(repoRoot, "migrations", f), join(dir, "migrations", f));
  writeFileSync(join(dir, "state.json"), JSON.stringify(account));
  return {
    dir,
    config: join(dir, "wrangler.toml"),
    account: (): Required<Account> => JSON.parse(readFileSync(join(dir, "state.json"), "utf8")),
    setAccount(change: (a: Required<Account>) => void) {
      const a = JSON.parse(readFileSync(join(dir, "state.json"), "utf8"));
      change(a);
      writeFileSync(join(dir, "state.json"), JSON.stringify(a));
    },
    /** The calls made so far, as "d1 create crewplane" (the --env/--config every call carries dropped). */
    calls(): string[] {
      return this.account().calls.map((c) => {
        const args = [...c.argv];
        for (const flag of ["--env", "--config"]) {
          const at = args.indexOf(flag);
          if (at >= 0) args.splice(at, 2);
        }
        return args.join(" ");
      });
    },
  };
}

type Project = ReturnType<typeof project>;

/** The secrets a caller might have in its own environment must not leak into the runs. */
const SECRET_NAMES = [
  "ADMIN_TOKEN",
  "AUDIT_SIGNING_KEY",
  "EVOLUTION_KEY",
  "SLACK_WEBHOOK_URL",
  "SLACK_SIGNING_SECRET",
  "APPROVAL_WEBHOOK_SECRET",
  "GITHUB_APP_ID",
  "GITHUB_APP_PRIVATE_KEY",
  "GITHUB_APP_INSTALLATION_ID",
];

async function deploy(p: Project, args: string[] = ["--yes"], env: NodeJS.ProcessEnv = {}) {
  const base = { ...process.env };
  for (const name of [...SECRET_NAMES, "CLOUDFLARE_ACCOUNT_ID", "CLOUDFLARE_API_TOKEN"]) delete base[name];
  const child = spawn(process.execPath, [deployScript, "--config", p.config, ...args], {
    cwd: p.dir,
    env: { ...base, WRANGLER: fakeWrangler, FAKE_WRANGLER_STATE: join(p.dir, "state.json"), ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (c) => (stdout += c));
  child.stderr.on("data", (c) => (stderr += c));
  const code = await new Promise<number | null>((resolve) => child.on("close", resolve));
  return { code, stdout, stderr };
}

/** Everything the first deploy leaves behind, as an account a later test can start from. */
function deployedAccount(): Account {
  return {
    d1: [{ uuid: "5a1e0000-0000-4000-8000-000000000001", name: "crewplane", applied: [...migrationFiles] }],
    queues: [...QUEUES],
    buckets: [...BUCKETS],
    workers: {
      "crewplane-production": {
        secrets: { ADMIN_TOKEN: "cpadmin_existing", AUDIT_SIGNING_KEY: "{}", EVOLUTION_KEY: "k" },
        versions: ["v1"],
      },
    },
  };
}

function withDatabaseId(p: Project, id: string) {
  const text = readFileSync(p.config, "utf8");
  const at = text.indexOf("[[env.production.d1_databases]]");
  writeFileSync(p.config, text.slice(0, at) + text.slice(at).replace(`database_id = "${ZERO_ID}"`, `database_id = "${id}"`));
}

const productionDbId = (text: string) => /\[\[env\.production\.d1_databases\]\][^[]*database_id = "([^"]+)"/.exec(text)?.[1];

describe("npm run deploy, first deploy", () => {
  it("creates the database, queues, dead-letter queues and buckets, writes the id, migrates, sets the secrets, then deploys; a re-run changes nothing", async () => {
    const p = project();
    const before = readFileSync(p.config, "utf8");
    const { code, stdout, stderr } = await deploy(p);
    expect(stderr).toBe("");
    expect(code).toBe(0);

    const calls = p.calls();
    expect(calls.filter((c) => MUTATING.test(c))).toEqual([
      "d1 create crewplane",
      ...QUEUES.map((q) => `queues create ${q}`),
      ...BUCKETS.map((b) => `r2 bucket create ${b}`),
      "d1 migrations apply DB --remote",
      "secret put ADMIN_TOKEN",
      "secret put AUDIT_SIGNING_KEY",
      "secret put EVOLUTION_KEY",
      "deploy",
    ]);
    // The login is checked before anything else.
    expect(calls[0]).toBe("whoami --json");

    const account = p.account();
    const [db] = account.d1;
    expect(db!.applied).toEqual(migrationFiles);
    // Only the production environment's id changes: local development keeps its placeholder.
    const after = readFileSync(p.config, "utf8");
    expect(productionDbId(after)).toBe(db!.uuid);
    expect(after).toBe(
      before.replace(new RegExp(`(\\[\\[env\\.production\\.d1_databases\\]\\][^[]*database_id = ")${ZERO_ID}`), `$1${db!.uuid}`),
    );
    expect(after.split(ZERO_ID)).toHaveLength(2);

    const worker = account.workers["crewplane-production"]!;
    expect(worker.versions).toHaveLength(1);
    // The admin token is saved beside the config, owner-only, and never printed.
    const tokenFile = join(p.dir, ".crewplane/production-admin-token");
    expect(readFileSync(tokenFile, "utf8").trim()).toBe(worker.secrets.ADMIN_TOKEN);
    expect(statSync(tokenFile).mode & 0o777).toBe(0o600);
    expect(worker.secrets.ADMIN_TOKEN).toMatch(/^cpadmin_[0-9a-f]{48}$/);
    expect(stdout).not.toContain(worker.secrets.ADMIN_TOKEN!);
    expect(stdout).toContain(tokenFile);
    // The audit key is what src/audit/keys.ts loads: an Ed25519 private JWK whose halves belong together.
    const jwk = JSON.parse(worker.secrets.AUDIT_SIGNING_KEY!);
    expect(Object.keys(jwk).sort()).toEqual(["crv", "d", "kty", "x"]);
    const priv = await webcrypto.subtle.importKey("jwk", jwk, { name: "Ed25519" }, false, ["sign"]);
    const pub = await webcrypto.subtle.importKey("raw", Buffer.from(jwk.x, "base64url"), { name: "Ed25519" }, false, ["verify"]);
    const probe = new TextEncoder().encode("probe");
    expect(
      await webcrypto.subtle.verify({ name: "Ed25519" }, pub, await webcrypto.subtle.sign({ name: "Ed25519" }, priv, probe), probe),
    ).toBe(true);
    expect(Buffer.from(worker.secrets.EVOLUTION_KEY!, "base64")).toHaveLength(32);
    expect(stdout).toContain("https://crewplane-production.example.workers.dev");

    // The second run: nothing created, written, applied or set; the code is deployed again.
    const first = p.calls().length;
    const again = await deploy(p);
    expect(again.code).toBe(0);
    expect(again.stdout).toContain("Nothing to create, write, migrate or set");
    expect(
      p
        .calls()
        .slice(first)
        .filter((c) => MUTATING.test(c)),
    ).toEqual(["deploy"]);
    expect(readFileSync(p.config, "utf8")).toBe(after);
    expect(p.account().workers["crewplane-production"]!.secrets).toEqual(worker.secrets);
  }, 120_000);

  it("sets an optional secret given in the environment, and leaves the others unset", async () => {
    const p = project();
    const { code, stdout } = await deploy(p, ["--yes"], { SLACK_WEBHOOK_URL: "https://hooks.slack.example/T/B/x" });
    expect(code).toBe(0);
    expect(p.calls().filter((c) => c.startsWith("secret put"))).toContain("secret put SLACK_WEBHOOK_URL");
    expect(p.account().workers["crewplane-production"]!.secrets.SLACK_WEBHOOK_URL).toBe("https://hooks.slack.example/T/B/x");
    expect(stdout).toMatch(/optional secrets left unset: SLACK_SIGNING_SECRET, /);
  }, 120_000);
});

describe("npm run deploy, again", () => {
  it("creates, writes, migrates and sets nothing, says so, and deploys the current code", async () => {
    const p = project(deployedAccount());
    withDatabaseId(p, "5a1e0000-0000-4000-8000-000000000001");
    const before = readFileSync(p.config, "utf8");
    const { code, stdout } = await deploy(p);
    expect(code).toBe(0);
    expect(stdout).toContain("Nothing to create, write, migrate or set");
    expect(p.calls().filter((c) => MUTATING.test(c))).toEqual(["deploy"]);
    expect(p.calls()).toContain("d1 migrations list DB --remote");
    expect(readFileSync(p.config, "utf8")).toBe(before);
    // Secrets already set are never overwritten.
    expect(p.account().workers["crewplane-production"]!.secrets.ADMIN_TOKEN).toBe("cpadmin_existing");
  }, 120_000);

  it("applies only the new migrations of an upgrade, before the code", async () => {
    const account = deployedAccount();
    account.d1![0]!.applied = migrationFiles.slice(0, -2);
    const p = project(account);
    withDatabaseId(p, "5a1e0000-0000-4000-8000-000000000001");
    const { code, stdout } = await deploy(p);
    expect(code).toBe(0);
    expect(stdout).toContain(`apply 2 D1 migration(s) to crewplane: ${migrationFiles.slice(-2).join(", ")}`);
    expect(p.calls().filter((c) => MUTATING.test(c))).toEqual(["d1 migrations apply DB --remote", "deploy"]);
    expect(p.account().d1[0]!.applied).toEqual(migrationFiles);
  }, 120_000);
});

describe("npm run deploy -- --dry-run", () => {
  it("prints the whole plan for a fresh account and makes no change at all", async () => {
    const p = project();
    const before = readFileSync(p.config, "utf8");
    const { code, stdout } = await deploy(p, ["--dry-run"]);
    expect(code).toBe(0);
    expect(p.calls().filter((c) => MUTATING.test(c))).toEqual([]);
    expect(readFileSync(p.config, "utf8")).toBe(before);
    for (const line of [
      "create D1 database crewplane (binding DB)",
      ...QUEUES.map((q) => `create queue ${q}`),
      ...BUCKETS.map((b) => `create R2 bucket ${b}`),
      `apply ${migrationFiles.length} D1 migration(s)`,
      "set secret ADMIN_TOKEN",
      "deploy the Worker crewplane-production",
      "Dry run: nothing was changed.",
    ]) {
      expect(stdout).toContain(line);
    }
    expect(p.account().d1).toEqual([]);
  }, 60_000);
});

describe("npm run deploy, failures", () => {
  it("stops before creating anything when wrangler is not logged in, and says how to log in", async () => {
    const p = project({ loggedIn: false });
    const { code, stderr } = await deploy(p);
    expect(code).toBe(1);
    expect(p.calls()).toEqual(["whoami --json"]);
    expect(stderr).toContain("not logged in");
    expect(stderr).toContain("npx wrangler login");
    expect(stderr).toContain("CLOUDFLARE_API_TOKEN");
  }, 60_000);

  it("stops when the login reaches several accounts and none is chosen; --account-id chooses", async () => {
    const accounts = [
      { id: "a".repeat(32), name: "Personal" },
      { id: "b".repeat(32), name: "Company" },
    ];
    const p = project({ accounts });
    const refused = await deploy(p);
    expect(refused.code).toBe(1);
    expect(p.calls()).toEqual(["whoami --json"]);
    expect(refused.stderr).toContain("--account-id");
    expect(refused.stderr).toContain(`Company (${"b".repeat(32)})`);
    const chosen = await deploy(p, ["--yes", "--account-id", "b".repeat(32)]);
    expect(chosen.code).toBe(0);
  }, 120_000);

  it("adopts a database, queue and bucket whose names are taken in the account instead of failing", async () => {
    // They exist, but the listings miss them (created meanwhile by hand, or by a run that died):
    // the create fails with the real "already exists" errors and the deploy uses what is there.
    const existing = "7a4e0000-0000-4000-8000-000000000007";
    const p = project({
      d1: [{ uuid: existing, name: "crewplane", applied: migrationFiles.slice(0, 3) }],
      queues: ["crewplane-dispatch"],
      buckets: [BUCKET],
      nameTaken: ["d1:crewplane", "queue:crewplane-dispatch", `bucket:${BUCKET}`],
    });
    const { code, stdout, stderr } = await deploy(p);
    expect(stderr).toBe("");
    expect(code).toBe(0);
    expect(p.calls()).toEqual(
      expect.arrayContaining(["d1 create crewplane", "queues create crewplane-dispatch", `r2 bucket create ${BUCKET}`]),
    );
    expect(stdout).toContain(`D1 database crewplane already exists (${existing}): using it`);
    expect(stdout).toContain("queue crewplane-dispatch already exists: using it");
    expect(stdout).toContain(`R2 bucket ${BUCKET} already exists: using it`);
    const account = p.account();
    expect(account.d1.map((d) => d.uuid)).toEqual([existing]);
    expect(account.queues.filter((q) => q === "crewplane-dispatch")).toHaveLength(1);
    expect(productionDbId(readFileSync(p.config, "utf8"))).toBe(existing);
    // The adopted database had three migrations: it gets the rest, checked with the database itself.
    expect(account.d1[0]!.applied).toEqual(migrationFiles);
    expect(p.calls()).toContain("d1 migrations list DB --remote");
  }, 120_000);

  it("uses resources that already exist without trying to create them", async () => {
    const existing = "7a4e0000-0000-4000-8000-000000000008";
    const p = project({ d1: [{ uuid: existing, name: "crewplane", applied: [] }], queues: [...QUEUES], buckets: [...BUCKETS] });
    const { code } = await deploy(p);
    expect(code).toBe(0);
    expect(p.calls().filter((c) => /create/.test(c))).toEqual([]);
    expect(productionDbId(readFileSync(p.config, "utf8"))).toBe(existing);
  }, 120_000);

  it("stops before the deploy when a migration fails, says what to do, and a re-run after the fix finishes", async () => {
    const broken = migrationFiles[3]!;
    const p = project({ failMigration: broken });
    const { code, stderr } = await deploy(p);
    expect(code).toBe(1);
    const calls = p.calls();
    expect(calls).toContain("d1 migrations apply DB --remote");
    expect(calls.some((c) => c === "deploy" || c.startsWith("secret put"))).toBe(false);
    expect(stderr).toContain(`Migration ${broken} failed`);
    expect(stderr).toContain("nothing was deployed");
    expect(stderr).toContain("npx wrangler d1 migrations list DB --remote --env production");
    // The ones before it stay applied; the database id was already written, so the re-run continues.
    expect(p.account().d1[0]!.applied).toEqual(migrationFiles.slice(0, 3));

    p.setAccount((a) => delete (a as Account).failMigration);
    const done = p.calls().length;
    const again = await deploy(p);
    expect(again.code).toBe(0);
    expect(
      p
        .calls()
        .slice(done)
        .filter((c) => MUTATING.test(c)),
    ).toEqual([
      "d1 migrations apply DB --remote",
      "secret put ADMIN_TOKEN",
      "secret put AUDIT_SIGNING_KEY",
      "secret put EVOLUTION_KEY",
      "deploy",
    ]);
    expect(p.account().d1[0]!.applied).toEqual(migrationFiles);
  }, 120_000);

  it("stops with the fix when a create fails for another reason (R2 not enabled), before any deploy", async () => {
    const p = project({
      fail: [{ command: "r2 bucket create", error: "Please enable R2 through the Cloudflare Dashboard. [code: 10042]" }],
    });
    const { code, stderr } = await deploy(p);
    expect(code).toBe(1);
    expect(stderr).toContain("Please enable R2 through the Cloudflare Dashboard. [code: 10042]");
    expect(stderr).toContain("enable R2 for the account");
    expect(p.calls().some((c) => c === "deploy" || c.startsWith("d1 migrations apply"))).toBe(false);
  }, 120_000);

  it("refuses a database id that is not in the account, changing nothing", async () => {
    const p = project({ d1: [{ uuid: "7a4e0000-0000-4000-8000-00000000000a", name: "crewplane", applied: [] }] });
    withDatabaseId(p, "dead0000-0000-4000-8000-000000000000");
    const { code, stderr } = await deploy(p);
    expect(code).toBe(1);
    expect(stderr).toContain("which is not in this account");
    expect(stderr).toContain("7a4e0000-0000-4000-8000-00000000000a");
    expect(p.calls().filter((c) => MUTATING.test(c))).toEqual([]);
  }, 60_000);
});
