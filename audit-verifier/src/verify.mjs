// Verifies a crewplane audit export (NDJSON) offline: every entry's hash, every link, the
// continuity of seq, and every checkpoint's Ed25519 signature under a known key. Streaming: memory
// stays a couple of lines whatever the size of the export.
import { createHash, createPublicKey, verify as verifySignature } from "node:crypto";
import { canonicalJson } from "./canonical.mjs";

export const GENESIS_HASH = "0".repeat(64);
export const EXPORT_FORMAT = "crewplane-audit-export/1";
export const CHECKPOINT_VERSION = "crewplane-audit-checkpoint/1";

/** Reasons, stable tokens: the first thing that does not hold. */
export const REASONS = [
  "changed",
  "missing",
  "reordered",
  "unsigned_tail",
  "unknown_key",
  "key_out_of_range",
  "bad_signature",
  "truncated",
  "malformed",
];

/** SHA-256 hex of an entry: the canonical JSON of exactly its hashed fields. */
export function entryHash(e) {
  const hashed = {
    created_at: e.created_at,
    id: e.id,
    payload: e.payload,
    prev_hash: e.prev_hash,
    seq: e.seq,
    subject: e.subject,
    type: e.type,
  };
  if (e.ref !== undefined) hashed.ref = e.ref;
  return createHash("sha256").update(canonicalJson(hashed), "utf8").digest("hex");
}

/** The bytes a checkpoint's signature covers. */
export function checkpointMessage(cp) {
  return Buffer.from(canonicalJson({ at: cp.at, hash: cp.hash, kid: cp.kid, seq: cp.seq, v: CHECKPOINT_VERSION }), "utf8");
}

/** Keys as `GET /.well-known/crewplane-audit-keys` serves them (`{keys:[…]}` or the bare list). */
export function parseKeys(doc) {
  const list = Array.isArray(doc) ? doc : doc?.keys;
  if (!Array.isArray(list)) throw new Error("keys: expected {keys:[…]} or a list of keys");
  const keys = new Map();
  for (const k of list) {
    if (typeof k?.kid !== "string" || typeof k?.public_key_jwk?.x !== "string")
      throw new Error("keys: every key needs kid and public_key_jwk.x");
    const publicKey = createPublicKey({ key: { kty: "OKP", crv: "Ed25519", x: k.public_key_jwk.x }, format: "jwk" });
    keys.set(k.kid, {
      kid: k.kid,
      publicKey,
      from_seq: k.from_seq ?? 1,
      to_seq: k.to_seq ?? null,
      not_before: k.not_before ?? null,
      not_after: k.not_after ?? null,
    });
  }
  return keys;
}

const short = (h) => (typeof h === "string" ? `${h.slice(0, 12)}…` : String(h));
const isSeq = (n) => Number.isSafeInteger(n) && n >= 1;

class Failure extends Error {
  constructor(seq, reason, detail) {
    super(detail);
    this.seq = seq;
    this.reason = reason;
  }
}

/**
 * Verifies the lines of an export (any iterable or async iterable of strings, one JSON object each).
 * `pinnedKeys`: a parsed key map (parseKeys) to trust instead of the keys the export carries.
 * Returns a result; never throws for a bad export.
 */
export async function verifyExport(lines, { pinnedKeys = null } = {}) {
  const it = lines[Symbol.asyncIterator] ? lines[Symbol.asyncIterator]() : lines[Symbol.iterator]();
  let lineNo = 0;
  let peeked = null;
  const read = async () => {
    if (peeked) {
      const p = peeked;
      peeked = null;
      return p;
    }
    for (;;) {
      const r = await it.next();
      if (r.done) return null;
      lineNo++;
      if (r.value.trim() === "") continue;
      return { no: lineNo, text: r.value };
    }
  };
  const peek = async () => (peeked ??= await read());
  const parse = (l) => {
    try {
      const o = JSON.parse(l.text);
      if (o && typeof o === "object" && !Array.isArray(o)) return o;
    } catch {
      // reported below
    }
    return null;
  };

  const s = {
    scope: null,
    keysSource: pinnedKeys ? "pinned" : "export",
    keys: pinnedKeys,
    firstSeq: null,
    declaredTo: null,
    expect: null,
    prevHash: null,
    prevId: null,
    lastSeq: null,
    lastHash: null,
    signedThrough: null,
    events: 0,
    redacted: 0,
    checkpoints: 0,
    covered: 0,
    sinceCheckpoint: 0,
    awaiting: "header",
    nextFromSeq: null,
    anchored: false,
  };

  const result = (failure) => ({
    ok: !failure,
    scope: s.scope,
    keys: s.keysSource,
    first_seq: s.firstSeq,
    /** The range the export's header(s) declare; last_seq is how far the entries read went. */
    declared_to_seq: s.declaredTo,
    last_seq: s.lastSeq,
    head_hash: s.lastHash,
    signed_through: s.signedThrough,
    events: s.events,
    redacted: s.redacted,
    checkpoints: s.checkpoints,
    /** Entries covered by a checkpoint that verified. */
    verified_entries: s.covered,
    anchored_at_genesis: s.firstSeq === null ? null : !s.anchored,
    ...(failure ? { failure } : {}),
  });

  try {
    for (let line = await read(); line; line = await read()) {
      const o = parse(line);
      if (!o) throw new Failure(s.expect, "malformed", `line ${line.no} is not a JSON object`);
      if (s.awaiting === "eof") throw new Failure(s.expect, "malformed", `line ${line.no}: content after the end line`);
      if (s.awaiting === "header" && o.kind !== "header")
        throw new Failure(s.expect, s.scope ? "truncated" : "malformed", `line ${line.no}: expected a header line, found ${o.kind}`);
      switch (o.kind) {
        case "header":
          header(o, line);
          break;
        case "event":
        case "redacted":
          await entry(o, line);
          break;
        case "checkpoint":
          checkpoint(o, line);
          break;
        case "end":
          end(o, line);
          break;
        default:
          throw new Failure(s.expect, "malformed", `line ${line.no}: unknown kind ${JSON.stringify(o.kind)}`);
      }
    }
    if (s.awaiting === "header" && !s.scope) throw new Failure(null, "malformed", "empty file: no header line");
    if (s.awaiting !== "eof") {
      const where = s.lastSeq === null ? "before any entry" : `after seq ${s.lastSeq}`;
      throw new Failure(s.expect, "truncated", `the export is cut off ${where}: its end line is missing`);
    }
    if (s.lastSeq !== null && (s.signedThrough === null || s.signedThrough < s.lastSeq)) {
      const from = (s.signedThrough ?? s.firstSeq - 1) + 1;
      throw new Failure(
        from,
        "unsigned_tail",
        `${s.lastSeq - from + 1} entries (seq ${from}..${s.lastSeq}) come after the last checkpoint${s.signedThrough === null ? " (there is none)" : ` (seq ${s.signedThrough})`}: they link, but nothing signs them, so they are not verified`,
      );
    }
    return result(null);
  } catch (err) {
    if (!(err instanceof Failure)) throw err;
    const failure = { seq: err.seq ?? null, reason: err.reason, detail: err.message };
    // A gap may be a reorder: the missing seq may still come later in the file.
    if (err.reason === "missing" && err.lookFor !== undefined) {
      for (let line = await read(); line; line = await read()) {
        const o = parse(line);
        if (o && (o.kind === "event" || o.kind === "redacted") && o.seq === err.lookFor) {
          failure.reason = "reordered";
          failure.detail = `seq ${err.lookFor} is out of place: it comes at line ${line.no}, after seq ${err.foundInstead}`;
          break;
        }
      }
    }
    return result(failure);
  }

  function header(o, line) {
    if (o.format !== EXPORT_FORMAT)
      throw new Failure(null, "malformed", `line ${line.no}: not a ${EXPORT_FORMAT} header (format ${JSON.stringify(o.format)})`);
    if (!isSeq(o.from_seq)) throw new Failure(null, "malformed", `line ${line.no}: header without a from_seq`);
    if (s.awaiting !== "header") throw new Failure(s.expect, "malformed", `line ${line.no}: a header in the middle of a segment`);
    if (s.scope === null) {
      s.scope = o.scope;
      s.firstSeq = o.from_seq;
      s.expect = o.from_seq;
      if (o.from_seq === 1) s.prevHash = GENESIS_HASH;
      if (!s.keys) {
        try {
          s.keys = parseKeys(o.keys ?? []);
        } catch (e) {
          throw new Failure(null, "malformed", `line ${line.no}: ${e.message}`);
        }
      }
    } else if (o.from_seq !== s.nextFromSeq || o.scope !== s.scope) {
      throw new Failure(
        s.nextFromSeq,
        "missing",
        `line ${line.no}: the next segment starts at seq ${o.from_seq} (${o.scope}), not at seq ${s.nextFromSeq} (${s.scope})`,
      );
    }
    s.declaredTo = Number.isSafeInteger(o.to_seq) ? o.to_seq : null;
    s.awaiting = "entries";
  }

  async function entry(o, line) {
    if (!isSeq(o.seq)) throw new Failure(s.expect, "malformed", `line ${line.no}: an entry without a seq`);
    if (o.seq !== s.expect) {
      if (o.seq < s.expect) throw new Failure(o.seq, "reordered", `seq ${o.seq} comes after seq ${s.lastSeq} (line ${line.no})`);
      const next = await peek();
      const n = next && parse(next);
      if (n && n.seq === s.expect) throw new Failure(s.expect, "reordered", `seq ${s.expect} comes after seq ${o.seq} (line ${next.no})`);
      const f = new Failure(
        s.expect,
        "missing",
        o.seq === s.expect + 1
          ? `seq ${s.expect} is missing: seq ${o.seq} follows seq ${s.lastSeq}`
          : `seqs ${s.expect}..${o.seq - 1} are missing: seq ${o.seq} follows seq ${s.lastSeq}`,
      );
      f.lookFor = s.expect;
      f.foundInstead = o.seq;
      throw f;
    }
    if (typeof o.hash !== "string" || typeof o.prev_hash !== "string")
      throw new Failure(o.seq, "malformed", `line ${line.no}: seq ${o.seq} without hash or prev_hash`);
    if (o.kind === "event") {
      // Seal order is commit order (the event id): an id that goes down is an entry out of place.
      if (s.prevId !== null && !(o.id > s.prevId))
        throw new Failure(
          o.seq,
          "reordered",
          `seq ${o.seq} holds event ${o.id}, which was committed before event ${s.prevId} at seq ${o.seq - 1}`,
        );
      const next = await peek();
      const n = next && parse(next);
      if (n && n.kind === "event" && n.seq === o.seq + 1 && Number.isSafeInteger(n.id) && n.id < o.id)
        throw new Failure(o.seq, "reordered", `seq ${o.seq} holds event ${o.id}, committed after event ${n.id} at seq ${n.seq}`);
    }
    if (s.prevHash === null) {
      // A segment starting after seq 1: its first prev_hash is taken as given; the checkpoints pin what follows.
      s.prevHash = o.prev_hash;
      s.anchored = true;
    }
    if (o.prev_hash !== s.prevHash) {
      throw new Failure(
        o.seq - 1,
        "changed",
        `seq ${o.seq} links to prev_hash ${short(o.prev_hash)}, but seq ${o.seq - 1} has hash ${short(s.prevHash)}: seq ${o.seq - 1} was replaced (or seq ${o.seq}'s link was changed)`,
      );
    }
    if (o.kind === "event") {
      const computed = entryHash(o);
      if (computed !== o.hash)
        throw new Failure(
          o.seq,
          "changed",
          `seq ${o.seq} (event ${o.id}): its content hashes to ${short(computed)}, not to its recorded hash ${short(o.hash)}`,
        );
      s.events++;
      s.prevId = o.id;
    } else {
      s.redacted++;
    }
    s.prevHash = o.hash;
    s.lastHash = o.hash;
    s.lastSeq = o.seq;
    s.expect = o.seq + 1;
    s.sinceCheckpoint++;
  }

  function checkpoint(o, line) {
    if (!isSeq(o.seq)) throw new Failure(s.expect, "malformed", `line ${line.no}: a checkpoint without a seq`);
    if (s.lastSeq === null || o.seq > s.lastSeq) {
      const from = s.expect;
      const f = new Failure(
        from,
        "missing",
        `checkpoint ${o.seq} (line ${line.no}) signs seq ${o.seq}, but the entries ${from === o.seq ? `seq ${o.seq} is` : `seqs ${from}..${o.seq} are`} not in the export`,
      );
      f.lookFor = from;
      f.foundInstead = `the checkpoint of seq ${o.seq}`;
      throw f;
    }
    if (o.seq < s.lastSeq) throw new Failure(o.seq + 1, "reordered", `checkpoint ${o.seq} (line ${line.no}) comes after seq ${s.lastSeq}`);
    const since = (s.signedThrough ?? s.firstSeq - 1) + 1;
    if (o.hash !== s.lastHash)
      throw new Failure(
        since,
        "changed",
        `checkpoint ${o.seq} signed hash ${short(o.hash)}, but the chain here has ${short(s.lastHash)}: an entry in seq ${since}..${o.seq} was changed and the chain after it rehashed`,
      );
    const key = s.keys.get(o.kid);
    if (!key)
      throw new Failure(
        o.seq,
        "unknown_key",
        `checkpoint ${o.seq} is signed by key ${JSON.stringify(o.kid)}, which is not among the ${s.keysSource === "pinned" ? "pinned keys" : "export's keys"}`,
      );
    if (
      o.seq < key.from_seq ||
      (key.to_seq !== null && o.seq > key.to_seq) ||
      (key.not_before && o.at < key.not_before) ||
      (key.not_after && o.at > key.not_after)
    )
      throw new Failure(
        o.seq,
        "key_out_of_range",
        `checkpoint ${o.seq} at ${o.at} is signed by key ${o.kid}, valid for seq ${key.from_seq}..${key.to_seq ?? "∞"} from ${key.not_before ?? "-"} to ${key.not_after ?? "now"}`,
      );
    const sig = typeof o.sig === "string" && /^[A-Za-z0-9_-]*$/.test(o.sig) ? Buffer.from(o.sig, "base64url") : null;
    if (!sig || sig.length !== 64)
      throw new Failure(
        o.seq,
        "bad_signature",
        `checkpoint ${o.seq}: the signature is ${sig ? `${sig.length} bytes` : "not base64url"}, not 64 bytes`,
      );
    if (typeof o.at !== "string" || !verifySignature(null, checkpointMessage(o), key.publicKey, sig))
      throw new Failure(o.seq, "bad_signature", `checkpoint ${o.seq}: the signature does not verify under key ${o.kid}`);
    s.signedThrough = o.seq;
    s.checkpoints++;
    s.covered += s.sinceCheckpoint;
    s.sinceCheckpoint = 0;
  }

  function end(o, line) {
    if (o.last_seq !== s.lastSeq) {
      throw new Failure(
        s.expect,
        "missing",
        `line ${line.no}: the end line says the segment ends at seq ${o.last_seq}, the entries end at seq ${s.lastSeq}`,
      );
    }
    if (o.next_from_seq === null || o.next_from_seq === undefined) {
      s.awaiting = "eof";
    } else {
      s.awaiting = "header";
      s.nextFromSeq = o.next_from_seq;
    }
  }
}
