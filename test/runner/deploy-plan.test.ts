/**
 * The pure half of `npm run deploy` (scripts/lib/deploy-plan.mjs): reading [env.production], the
 * one-line id write, and the plan from what the account has.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { planDeploy, readTarget, SECRETS, setD1DatabaseId, ZERO_ID } from "../../scripts/lib/deploy-plan.mjs";
import { repoRoot } from "./helpers/paths.ts";

const config = readFileSync(join(repoRoot, "wrangler.toml"), "utf8");
const target = () => readTarget(config, "production");
const empty = { d1: [], queues: new Set<string>(), buckets: new Set<string>() };
const migrations = { DB: ["0000_a.sql", "0001_b.sql"] };

describe("readTarget", () => {
  it("reads the production bindings of wrangler.toml: the database, six queues and the two buckets", () => {
    expect(target()).toMatchObject({
      workerName: "crewplane-production",
      d1: [{ binding: "DB", name: "crewplane", id: undefined, migrationsDir: "migrations" }],
      buckets: ["crewplane-event-archive", "crewplane-attachments"],
    });
    expect(target().queues.sort()).toEqual(
      ["dispatch", "dispatch-dlq", "node-pushes", "node-pushes-dlq", "approval-deliveries", "approval-deliveries-dlq"]
        .map((q) => `crewplane-${q}`)
        .sort(),
    );
  });

  it("names the environments there are when asked for one that is not", () => {
    expect(() => readTarget(config, "staging")).toThrow(/no \[env\.staging\]/);
  });
});

describe("setD1DatabaseId", () => {
  it("changes the one line of the production database and nothing else", () => {
    const id = "11111111-2222-4333-8444-555555555555";
    const updated = setD1DatabaseId(config, "production", "DB", id);
    const changed = updated.split("\n").filter((line, i) => line !== config.split("\n")[i]);
    expect(changed).toEqual([`database_id = "${id}"`]);
    expect(readTarget(updated, "production").d1[0]!.id).toBe(id);
    // Local development (the top level) keeps its placeholder.
    expect(updated.indexOf(ZERO_ID)).toBe(config.indexOf(ZERO_ID));
  });

  it("adds the line when the entry has none", () => {
    const text = 'name = "w"\n\n[[env.prod.d1_databases]]\nbinding = "DB"\ndatabase_name = "w" # ours\nmigrations_dir = "m"\n';
    const updated = setD1DatabaseId(text, "prod", "DB", "11111111-2222-4333-8444-555555555555");
    expect(updated).toContain('database_name = "w" # ours\ndatabase_id = "11111111-2222-4333-8444-555555555555"\nmigrations_dir');
  });
});

describe("planDeploy", () => {
  it("on an empty account creates everything, migrates before the secrets, and deploys last", () => {
    const plan = planDeploy({ target: target(), account: empty, secretsSet: null, localMigrations: migrations });
    expect(plan.problems).toEqual([]);
    expect(plan.steps.map((s) => s.action)).toEqual([
      "create-d1",
      ...Array(6).fill("create-queue"),
      "create-bucket",
      "create-bucket",
      "apply-migrations",
      "put-secret",
      "put-secret",
      "put-secret",
      "deploy",
    ]);
    expect(plan.steps.find((s) => s.action === "apply-migrations")).toMatchObject({ pending: migrations.DB });
    expect(plan.skippedSecrets.map((s) => s.name)).toEqual(SECRETS.filter((s) => s.kind === "optional").map((s) => s.name));
  });

  it("on a matching account only deploys, and reports no change", () => {
    const withId = setD1DatabaseId(config, "production", "DB", "11111111-2222-4333-8444-555555555555");
    const t = readTarget(withId, "production");
    const plan = planDeploy({
      target: t,
      account: {
        d1: [{ uuid: "11111111-2222-4333-8444-555555555555", name: "crewplane" }],
        queues: new Set(t.queues),
        buckets: new Set(t.buckets),
      },
      secretsSet: new Set(SECRETS.map((s) => s.name)),
      localMigrations: migrations,
      pendingMigrations: { DB: [] },
    });
    expect(plan.steps).toEqual([{ action: "deploy" }]);
    expect(plan.changesAccount).toBe(false);
  });

  it("adopts a database of the same name, and leaves its migrations for the database to tell", () => {
    const plan = planDeploy({
      target: target(),
      account: { ...empty, d1: [{ uuid: "ab", name: "crewplane" }] },
      secretsSet: new Set(),
      localMigrations: migrations,
    });
    expect(plan.steps.slice(0, 1)).toEqual([expect.objectContaining({ action: "adopt-d1", id: "ab" })]);
    expect(plan.steps.find((s) => s.action === "apply-migrations")).toMatchObject({ pending: null });
  });

  it("refuses an id the account does not have instead of creating a second, empty database", () => {
    const t = readTarget(setD1DatabaseId(config, "production", "DB", "11111111-2222-4333-8444-555555555555"), "production");
    const plan = planDeploy({
      target: t,
      account: { ...empty, d1: [{ uuid: "ab", name: "crewplane" }] },
      secretsSet: null,
      localMigrations: migrations,
    });
    expect(plan.problems).toHaveLength(1);
    expect(plan.problems[0]!.fix).toContain('"crewplane" has id ab');
    expect(plan.steps.some((s) => s.action === "create-d1")).toBe(false);
  });

  it("never sets a secret that is set, and sets an optional one only when supplied", () => {
    const plan = planDeploy({
      target: target(),
      account: empty,
      secretsSet: new Set(["ADMIN_TOKEN"]),
      localMigrations: migrations,
      provided: new Set(["GITHUB_APP_ID"]),
    });
    const puts = plan.steps.flatMap((s) => (s.action === "put-secret" ? [s.secret.name] : []));
    expect(puts).toEqual(["AUDIT_SIGNING_KEY", "EVOLUTION_KEY", "GITHUB_APP_ID"]);
  });
});
