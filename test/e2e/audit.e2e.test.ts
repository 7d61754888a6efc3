import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { canonicalJson as workerCanonical } from "../../src/jobs/canonical";
import { checkpointBytes, entryHash as workerEntryHash, GENESIS_HASH } from "../../src/audit/chain";
import { canonicalJson as verifierCanonical } from "../../audit-verifier/src/canonical.mjs";
import { checkpointMessage, entryHash as verifierEntryHash, verifyExport } from "../../audit-verifier/src/verify.mjs";
import { ADMIN_TOKEN, ROOT, startWorker } from "./stack";

// Two test keys (Ed25519 private JWKs): A signs first, B after the rotation.
const KEY_A =
  '{"crv":"Ed25519","d":"Ttp-5I1ycC88FPU8UaLLKXxvpgohS0oJlDPjzlPEhE4","x":"aqc1o5cqNyln50UDBmIOCU7HcHDHLVvOjNDCyyl7NE8","kty":"OKP"}';
const KEY_B =
  '{"crv":"Ed25519","d":"aTTkM72CmiKr8lZQWtYLsgBoQLlp6-kt3s2AfeqrBdY","x":"vyvkzen0JmxuON-ZYLdbg83Fc0frmMMzFAKSRVc1Ut4","kty":"OKP"}';
const CLI = join(ROOT, "node_modules/.bin/crewplane-audit");
const MARKER = `hidden-${Date.now().toString(36)}`;

type Line = Record<string, any>;
interface Stmt {
  bind(...values: unknown[]): Stmt;
  run(): Promise<unknown>;
  first<T>(): Promise<T | null>;
}
interface Db {
  prepare(query: string): Stmt;
  batch(statements: Stmt[]): Promise<unknown>;
}
const parseLines = (text: string): Line[] =>
  text
    .trim()
    .split("\n")
    .map((l) => JSON.parse(l));
const toText = (lines: Line[]) => lines.map((l) => JSON.stringify(l)).join("\n") + "\n";

function cli(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(CLI, args, { cwd: ROOT }, (err, stdout, stderr) => {
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr });
    });
  });
}

describe("the audit trail, end to end", () => {
  let stack: Awaited<ReturnType<typeof startWorker>>;
  let dir: string;
  // The product's D1 binding from Node (its types are the Workers runtime's, not in this project).
  const db = async () => (await stack.server.getWorker().getEnv()).DB as Db;

  async function exportText(path = "/v1/audit/export", token: string | null = ADMIN_TOKEN) {
    const res = await fetch(`${stack.base}${path}`, { headers: token ? { authorization: `Bearer ${token}` } : {} });
    expect(res.status).toBe(200);
    return res.text();
  }

  async function exportFile(name: string, path?: string, token?: string | null) {
    const file = join(dir, name);
    writeFileSync(file, await exportText(path, token));
    return file;
  }

  async function status() {
    return (await stack.api("/v1/audit/status")).body;
  }

  /** Until every event is sealed and (with `signed`) the head is covered by a checkpoint. */
  async function settle(signed = true, timeoutMs = 40_000) {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const s = await status();
      if (s.unsealed === 0 && (!signed || s.unsigned === 0)) return s;
      if (Date.now() > deadline) throw new Error(`audit not settled: ${JSON.stringify(s)}`);
      await new Promise((r) => setTimeout(r, 200));
    }
  }

  async function writers(count: number, perWriter: number, tag: string) {
    await Promise.all(
      Array.from({ length: count }, async (_, w) => {
        for (let i = 0; i < perWriter; i++) {
          const res =
            w % 2 === 0
              ? await stack.api("/v1/nodes", { body: { name: `${tag}-node-${w}-${i}`, model_tier: 3 } })
              : await stack.api("/v1/admin/operators", { body: { name: `${MARKER}-${tag}-${w}-${i}`, role: "viewer" } });
          expect(res.status).toBe(201);
        }
      }),
    );
  }

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "crewplane-audit-"));
    stack = await startWorker({ secrets: { AUDIT_SIGNING_KEY: KEY_A } });
  });

  afterAll(async () => {
    await stack?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("turns 50 concurrent writers into one linear chain that the offline verifier accepts", async () => {
    await writers(50, 2, "w");
    const s = await settle();
    expect(s.signing).toBe("ok");
    const file = await exportFile("all.ndjson");
    const lines = parseLines(readFileSync(file, "utf8"));
    const events = lines.filter((l) => l.kind === "event");
    expect(events.length).toBe(s.head.seq);
    expect(events.map((e) => e.seq)).toEqual(Array.from({ length: events.length }, (_, i) => i + 1));
    expect(new Set(events.map((e) => e.prev_hash)).size).toBe(events.length);
    expect(events.filter((e) => e.type === "operator.created" && e.payload.name.startsWith(`${MARKER}-w-`))).toHaveLength(50);
    const run = await cli("verify", file);
    expect(run.stderr).toBe("");
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(new RegExp(`verified: ${events.length} events, \\d+ checkpoints`));
    expect(run.stdout).toMatch(/\nOK/);
    // Pinned keys, as published at /.well-known/crewplane-audit-keys.
    const keys = (await (await fetch(`${stack.base}/.well-known/crewplane-audit-keys`)).json()) as { keys: Line[] };
    writeFileSync(join(dir, "keys-a.json"), JSON.stringify(keys));
    const pinned = await cli("verify", file, "--keys", join(dir, "keys-a.json"));
    expect(pinned.code).toBe(0);
    expect(pinned.stdout).toContain("keys pinned from");
  });

  it("accepts consecutive segments and refuses a file cut off before its end line", async () => {
    const text = readFileSync(join(dir, "all.ndjson"), "utf8");
    const lines = parseLines(text);
    const header = lines[0]!;
    const body = lines.slice(1, -1);
    const cut = body.findIndex((l) => l.kind === "event" && l.seq === 40);
    const first = body.slice(0, cut + 1);
    const second = body.slice(cut + 1);
    const split = [
      { ...header, to_seq: 40 },
      ...first,
      { kind: "end", last_seq: 40, next_from_seq: 41 },
      { ...header, from_seq: 41 },
      ...second,
      lines.at(-1)!,
    ];
    expect((await verifyExport(toText(split).trim().split("\n"))).ok).toBe(true);
    const truncated = await verifyExport(toText(lines.slice(0, -1)).trim().split("\n"));
    expect(truncated).toMatchObject({ ok: false, failure: { reason: "truncated" } });
  });

  it("verifies the public export with non-public events redacted, leaking none of their fields", async () => {
    const text = await exportText("/v1/public/audit/export", null);
    expect(text).not.toContain(MARKER);
    expect(text).not.toContain("operator.created");
    const lines = parseLines(text);
    const redacted = lines.filter((l) => l.kind === "redacted");
    expect(redacted.length).toBeGreaterThanOrEqual(50);
    for (const r of redacted) expect(Object.keys(r).sort()).toEqual(["hash", "kind", "prev_hash", "seq"]);
    expect(lines.filter((l) => l.kind === "event").every((e) => e.type.startsWith("node.registered"))).toBe(true);
    const file = join(dir, "public.ndjson");
    writeFileSync(file, text);
    const run = await cli("verify", file);
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/verified: \d+ events and \d+ redacted entries/);
  });

  it("names the seq of an event one of whose stored bytes changed", async () => {
    const d = await db();
    const lines = parseLines(await exportText());
    const target = lines.find((l) => l.kind === "event" && l.type === "operator.created")!;
    const row = await d.prepare(`SELECT payload FROM events WHERE id = ?`).bind(target.id).first<{ payload: string }>();
    const changed = row!.payload.replace(MARKER, `${MARKER.slice(0, -1)}_`);
    expect(changed).not.toBe(row!.payload);
    await d.prepare(`UPDATE events SET payload = ? WHERE id = ?`).bind(changed, target.id).run();
    try {
      const run = await cli("verify", await exportFile("changed.ndjson"));
      expect(run.code).toBe(1);
      expect(run.stdout).toContain(`FAILED at seq ${target.seq}: changed:`);
    } finally {
      await d.prepare(`UPDATE events SET payload = ? WHERE id = ?`).bind(row!.payload, target.id).run();
    }
  });

  it("reports a deleted row as the gap it leaves", async () => {
    const d = await db();
    const target = parseLines(await exportText()).find((l) => l.kind === "event" && l.seq === 10)!;
    const row = await d.prepare(`SELECT * FROM events WHERE id = ?`).bind(target.id).first<Record<string, unknown>>();
    await d.prepare(`DELETE FROM events WHERE id = ?`).bind(target.id).run();
    try {
      const run = await cli("verify", await exportFile("deleted.ndjson"));
      expect(run.code).toBe(1);
      expect(run.stdout).toContain("FAILED at seq 10: missing: seq 10 is missing: seq 11 follows seq 9");
    } finally {
      await d
        .prepare(`INSERT INTO events (id, type, subject, payload, created_at, dedupe_key) VALUES (?, ?, ?, ?, ?, ?)`)
        .bind(row!.id, row!.type, row!.subject, row!.payload, row!.created_at, row!.dedupe_key)
        .run();
    }
    expect((await cli("verify", await exportFile("restored.ndjson"))).code).toBe(0);
  });

  it("reports two swapped rows as a reorder, in the database and in the file", async () => {
    const d = await db();
    // Whoever holds the database can drop the append-only trigger; the chain still gives it away.
    await d.prepare(`DROP TRIGGER audit_chain_no_update`).run();
    const swap = (a: number, b: number) =>
      d.batch([
        d.prepare(`UPDATE audit_chain SET seq = -1 WHERE seq = ?`).bind(a),
        d.prepare(`UPDATE audit_chain SET seq = ? WHERE seq = ?`).bind(a, b),
        d.prepare(`UPDATE audit_chain SET seq = ? WHERE seq = -1`).bind(b),
      ]);
    await swap(20, 23);
    try {
      const run = await cli("verify", await exportFile("swapped.ndjson"));
      expect(run.code).toBe(1);
      expect(run.stdout).toContain("FAILED at seq 20: reordered:");
    } finally {
      await swap(20, 23);
    }
    // Two lines of a good export swapped in the file.
    const lines = parseLines(await exportText());
    const i = lines.findIndex((l) => l.kind === "event" && l.seq === 30);
    const j = lines.findIndex((l) => l.kind === "event" && l.seq === 31);
    [lines[i], lines[j]] = [lines[j]!, lines[i]!];
    const file = join(dir, "swapped-lines.ndjson");
    writeFileSync(file, toText(lines));
    const run = await cli("verify", file);
    expect(run.code).toBe(1);
    expect(run.stdout).toContain("FAILED at seq 30: reordered:");
  });

  it("refuses the last checkpoint when its signature is truncated", async () => {
    const d = await db();
    await d.prepare(`DROP TRIGGER audit_checkpoints_no_update`).run();
    const last = await d.prepare(`SELECT seq, sig FROM audit_checkpoints ORDER BY seq DESC LIMIT 1`).first<{ seq: number; sig: string }>();
    await d.prepare(`UPDATE audit_checkpoints SET sig = ? WHERE seq = ?`).bind(last!.sig.slice(0, 60), last!.seq).run();
    try {
      const run = await cli("verify", await exportFile("truncated-sig.ndjson", `/v1/audit/export?to_seq=${last!.seq}`));
      expect(run.code).toBe(1);
      expect(run.stdout).toContain(
        `FAILED at seq ${last!.seq}: bad_signature: checkpoint ${last!.seq}: the signature is 45 bytes, not 64 bytes`,
      );
    } finally {
      await d.prepare(`UPDATE audit_checkpoints SET sig = ? WHERE seq = ?`).bind(last!.sig, last!.seq).run();
    }
  });

  it("reports a tail after the last checkpoint as unsigned, not as verified", async () => {
    // One event signed now: the next checkpoint is then 10 s away.
    await writers(1, 1, "pre-tail");
    const before = await settle();
    // Right after a checkpoint, the next one is 10 s away: new events are sealed but unsigned.
    await writers(4, 1, "tail");
    const s = await settle(false);
    const lines = parseLines(await exportText(`/v1/audit/export?to_seq=${s.head.seq}`));
    const header = lines[0]!;
    expect(header.head_seq).toBeGreaterThan(before.head.seq);
    if (header.last_checkpoint_seq >= header.to_seq)
      throw new Error("the tail was signed before the export: too slow a machine for this test");
    const file = join(dir, "tail.ndjson");
    writeFileSync(file, toText(lines));
    const run = await cli("verify", file);
    expect(run.code).toBe(1);
    const from = header.last_checkpoint_seq + 1;
    expect(run.stdout).toContain(
      `FAILED at seq ${from}: unsigned_tail: ${header.to_seq - from + 1} entries (seq ${from}..${header.to_seq}) come after the last checkpoint`,
    );
    expect(run.stdout).toContain("not verified");
    expect(run.stdout).toContain(`before it: ${header.last_checkpoint_seq} entries under`);
  });

  it("verifies across a key rotation, old checkpoints under the old key", async () => {
    await settle();
    const keysA = readFileSync(join(dir, "keys-a.json"), "utf8");
    const kidA = JSON.parse(keysA).keys[0].kid;
    await stack.server.update((o) => ({
      ...o,
      workers: [
        { configPath: "./wrangler.toml", vars: { ENVIRONMENT: "development" }, secrets: { ADMIN_TOKEN, AUDIT_SIGNING_KEY: KEY_B } },
      ],
    }));
    await writers(6, 1, "rotated");
    const s = await settle();
    expect(s.kid).not.toBe(kidA);
    const keys = ((await (await fetch(`${stack.base}/.well-known/crewplane-audit-keys`)).json()) as { keys: Line[] }).keys;
    expect(keys).toHaveLength(2);
    expect(keys[0]).toMatchObject({ kid: kidA, to_seq: keys[1].from_seq - 1, not_after: keys[1].not_before });
    expect(keys[1]).toMatchObject({ kid: s.kid, to_seq: null, not_after: null });
    writeFileSync(join(dir, "keys-ab.json"), JSON.stringify({ keys }));
    const file = await exportFile("rotated.ndjson");
    const lines = parseLines(readFileSync(file, "utf8"));
    const kids = new Set(lines.filter((l) => l.kind === "checkpoint").map((l) => l.kid));
    expect(kids).toEqual(new Set([kidA, s.kid]));
    expect((await cli("verify", file)).code).toBe(0);
    expect((await cli("verify", file, "--keys", join(dir, "keys-ab.json"))).code).toBe(0);
    // Pinned to the old key alone, the first checkpoint of the new one is refused.
    const old = await cli("verify", file, "--keys", join(dir, "keys-a.json"));
    expect(old.code).toBe(1);
    expect(old.stdout).toContain(`FAILED at seq ${keys[1].from_seq}: unknown_key:`);
  });
});

describe("the verifier package", () => {
  it("hashes and signs exactly the bytes the Worker does", async () => {
    const corpus: unknown[] = [
      null,
      0,
      -0,
      1e21,
      0.1 + 0.2,
      "é\u2028\ud800 lone",
      '\u0000\t"quote"',
      [],
      {},
      { b: 1, a: [{ d: null, c: undefined }], é: 2, Z: 3, _: { "10": 1, "9": 2 } },
    ];
    for (const v of corpus) expect(verifierCanonical(v)).toBe(workerCanonical(v));
    const entry = {
      seq: 3,
      prev_hash: GENESIS_HASH,
      id: 9,
      type: "t",
      subject: null,
      payload: corpus[9],
      created_at: "2026-12-01T00:00:00.000Z",
      ref: { role_turn: { task_id: "t", seq: 1, hash: "h" } },
    };
    expect(verifierEntryHash(entry)).toBe(await workerEntryHash(entry));
    const { ref: _ref, ...noRef } = entry;
    expect(verifierEntryHash(noRef)).toBe(await workerEntryHash(noRef));
    const cp = { seq: 3, hash: "ab", at: "2026-12-01T00:00:00.000Z", kid: "k" };
    expect(new Uint8Array(checkpointMessage(cp))).toEqual(checkpointBytes(cp));
  });

  it("exits 2 on usage errors and unreadable files", async () => {
    expect((await cli()).code).toBe(2);
    expect((await cli("verify")).code).toBe(2);
    const missing = await cli("verify", join(tmpdir(), "no-such-export.ndjson"));
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain("cannot read");
    const key = await cli("keygen");
    expect(key.code).toBe(0);
    expect(JSON.parse(key.stdout)).toMatchObject({ kty: "OKP", crv: "Ed25519", d: expect.any(String), x: expect.any(String) });
  });
});
