// `crewplane-audit`: argument parsing and printing only; the checks are in verify.mjs.
import { generateKeyPairSync, createHash } from "node:crypto";
import { createReadStream, readFileSync } from "node:fs";
import { createInterface } from "node:readline";
import { parseArgs } from "node:util";
import { parseKeys, verifyExport } from "./verify.mjs";

export const EXIT = { ok: 0, failed: 1, usage: 2 };

const USAGE = `usage:
  crewplane-audit verify <export.ndjson | -> [--keys <keys.json>] [--json]
      Checks every link, every signature and the continuity of seq of an export from
      GET /v1/audit/export or GET /v1/public/audit/export, offline. --keys pins the keys
      (GET /.well-known/crewplane-audit-keys saved earlier or obtained from the operator);
      without it the keys the export itself carries are used.
      Exit status: 0 all holds, 1 it does not (the first seq that breaks and why), 2 usage or I/O error.
  crewplane-audit keygen
      Prints a new Ed25519 private JWK for AUDIT_SIGNING_KEY (pipe it to \`wrangler secret put\`).`;

class UsageError extends Error {}

export async function main(argv, out = process.stdout, err = process.stderr) {
  try {
    const [command, ...rest] = argv;
    if (command === "verify") return await verifyCommand(rest, out);
    if (command === "keygen") return keygen(out, err);
    if (command === "--help" || command === "-h" || command === "help") {
      out.write(`${USAGE}\n`);
      return EXIT.ok;
    }
    throw new UsageError(command ? `unknown command ${JSON.stringify(command)}` : "no command");
  } catch (e) {
    err.write(`crewplane-audit: ${e.message}\n${e instanceof UsageError ? `${USAGE}\n` : ""}`);
    return EXIT.usage;
  }
}

async function verifyCommand(args, out) {
  let parsed;
  try {
    parsed = parseArgs({ args, allowPositionals: true, options: { keys: { type: "string" }, json: { type: "boolean", default: false } } });
  } catch (e) {
    throw new UsageError(e.message);
  }
  const { values, positionals } = parsed;
  if (positionals.length !== 1) throw new UsageError("verify takes exactly one export file (or - for stdin)");
  const file = positionals[0];
  let pinnedKeys = null;
  if (values.keys) {
    let doc;
    try {
      doc = JSON.parse(readFileSync(values.keys, "utf8"));
    } catch (e) {
      throw new Error(`cannot read keys ${values.keys}: ${e.message}`);
    }
    pinnedKeys = parseKeys(doc);
  }
  const input = file === "-" ? process.stdin : createReadStream(file, { encoding: "utf8" });
  const opened = new Promise((resolve, reject) => {
    if (file === "-") resolve();
    input.once("open", resolve);
    input.once("error", (e) => reject(new Error(`cannot read ${file}: ${e.message}`)));
  });
  await opened;
  const lines = createInterface({ input, crlfDelay: Infinity });
  const started = process.hrtime.bigint();
  const result = await verifyExport(lines, { pinnedKeys });
  lines.close();
  if (file !== "-") input.destroy();
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  if (values.json) out.write(`${JSON.stringify({ ...result, seconds })}\n`);
  else out.write(report(file, result, values.keys, seconds));
  return result.ok ? EXIT.ok : EXIT.failed;
}

export function report(file, r, keysFile, seconds) {
  const to = r.declared_to_seq ?? r.last_seq;
  const range =
    r.first_seq === null
      ? "no entries"
      : to === null || to < r.first_seq
        ? `from seq ${r.first_seq}, no entries`
        : `seq ${r.first_seq}..${to}`;
  const keys = r.keys === "pinned" ? `keys pinned from ${keysFile}` : "keys from the export itself (pin them with --keys)";
  const lines = [`crewplane-audit: ${file}: ${r.scope ?? "unknown"} export, ${range}; ${keys}`];
  if (r.anchored_at_genesis === false) lines.push(`note: the export starts at seq ${r.first_seq}; its first prev_hash is taken as given`);
  if (r.ok) {
    lines.push(
      `verified: ${r.events} events${r.redacted ? ` and ${r.redacted} redacted entries (linked, content not shown)` : ""}, ${r.checkpoints} checkpoints; every link holds and seq ${r.first_seq ?? "-"}..${r.last_seq ?? "-"} is signed (head ${r.head_hash ?? "-"})`,
    );
    lines.push(`OK (${seconds.toFixed(2)} s)`);
  } else {
    const f = r.failure;
    lines.push(`FAILED${f.seq !== null ? ` at seq ${f.seq}` : ""}: ${f.reason}: ${f.detail}`);
    lines.push(
      `before it: ${plural(r.verified_entries, "entry", "entries")} under ${plural(r.checkpoints, "verified checkpoint")}${r.signed_through !== null ? ` (signed through seq ${r.signed_through})` : ""}; read ${plural(r.events, "event")}${r.redacted ? `, ${r.redacted} redacted` : ""}`,
    );
  }
  return `${lines.join("\n")}\n`;
}

const plural = (n, one, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;

function keygen(out, err) {
  const { privateKey } = generateKeyPairSync("ed25519");
  const jwk = privateKey.export({ format: "jwk" });
  const kid = createHash("sha256").update(Buffer.from(jwk.x, "base64url")).digest("hex").slice(0, 16);
  out.write(`${JSON.stringify({ kty: "OKP", crv: "Ed25519", d: jwk.d, x: jwk.x })}\n`);
  err.write(`crewplane-audit: new key ${kid} (keep the output secret: AUDIT_SIGNING_KEY)\n`);
  return EXIT.ok;
}
