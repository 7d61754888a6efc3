import type { Db } from "../db/client";
import { liveSubjectSql } from "../lib/credentials";
import { newId } from "../lib/ids";
import { DIRECT_DIALOG_TYPES, phasesTaking } from "./machine-dialog";
import type { DialogBody } from "./machine-types";
import { COUNCIL_RULES, type CouncilRules } from "./rules";
import type { DialogRecord, DialogType } from "./session";

/**
 * The hot path of `POST /v1/council/sessions/:id/dialog` for plain contributions (assess,
 * challenge, agree, develop): one D1 statement written by the Worker, without a round trip through
 * the session's Durable Object. The INSERT checks in SQL, at write time, what the machine's
 * `applyDialog` checks for such a dialog:
 * - the session's phase takes the type (`wrong_phase`),
 * - the poster is the proposer or an active member in the state (`not_eligible`; community voters
 *   speak only in voting, which takes no direct dialog), read from `council_seats`, which triggers
 *   keep equal to the state's active members in the statement that writes the state (migration 0026),
 * - the node has posted fewer than `maxDialogsPerNode` dialogs here (`rate_limited`),
 * - the node exists and is not suspended by an admin (the caller then answers `403 node_suspended`),
 * - `reply_to` names a dialog of this session that is not an amendment (a reply to an amendment
 *   changes its support, which the object records at once, so it goes there).
 * D1 runs statements one at a time, so the checks and the insert are atomic against the object's
 * saves: a dialog racing a phase change is written in the old phase (and the save, guarded on the
 * dialogs it saw, runs again with it) or finds the new phase and is not written at all.
 *
 * The poster is a node the caller authenticated, or a presented token: then the statement also
 * authenticates (the token's id, the SHA-256 of its secret, a live node credential: the rule of
 * `authenticate` in lib/auth.ts), so the whole post is one D1 round trip.
 *
 * When the insert writes nothing the caller hands the dialog to the object, which answers with the
 * exact refusal (or takes it, if the state moved in between). Nothing is refused here.
 *
 * The same statement (through its trigger) does what the machine's effects for such a dialog would: the node's last dialog
 * time, and, for a term member's first response in the session, the term's response counter (the
 * member's `responded_at` itself is folded into the state at the next check, and the public view
 * folds it in at once). It also pulls the session's `next_check_at` forward
 * to the debounced progress check; `nudge` says whether it moved (the first dialog since the last
 * check), so the caller brings the object's alarm forward too. Should that nudge be lost, the minute
 * tick finds the session by `next_check_at` and the check folds the dialog in all the same.
 */
export function takesDirect(body: DialogBody): body is DialogBody & { dialog_type: (typeof DIRECT_DIALOG_TYPES)[number] } {
  return (DIRECT_DIALOG_TYPES as readonly DialogType[]).includes(body.dialog_type);
}

/** Who posts: a node the caller authenticated, or a presented node token checked by the statement itself. */
export type Poster = { node_id: string } | { credential_id: string; secret_hash: string };

export interface DirectDialog {
  dialog: DialogRecord;
  /** The progress check (clock ms) this dialog asked for, when it is the first since the last check. */
  nudge: number | null;
}

/** What the statement returns: what SQL decided (the rest of the row is what was bound). */
interface InsertedRow {
  seq: number;
  node_id: string;
  role: DialogRecord["role"];
  phase: DialogRecord["phase"];
  /** The check this dialog moved the session's next check to, '' when that was due sooner. */
  check_due_at: string;
}

export async function writeDirectDialog(
  db: Db,
  input: { session_id: string; poster: Poster; body: DialogBody; now: Date; debounce_ms: number },
  rules: Pick<CouncilRules, "maxDialogsPerNode"> = COUNCIL_RULES,
): Promise<DirectDialog | null> {
  const { body, poster } = input;
  const id = newId("dlg");
  const at = input.now.toISOString();
  const dueMs = input.now.getTime() + input.debounce_ms;
  const due = new Date(dueMs).toISOString();
  const byNode = "node_id" in poster;
  // Numbered parameters (see directSql).
  const params = [
    id,
    input.session_id,
    body.dialog_type,
    body.content ?? null,
    body.reply_to ?? null,
    at,
    rules.maxDialogsPerNode,
    byNode ? poster.node_id : null,
    byNode ? null : poster.credential_id,
    byNode ? null : poster.secret_hash,
    due,
  ];
  const row = await db.$client
    .prepare(directSql(body.dialog_type))
    .bind(...params)
    .first<InsertedRow>();
  if (!row) return null;
  return {
    dialog: {
      id,
      seq: row.seq,
      node_id: row.node_id,
      role: row.role,
      phase: row.phase,
      dialog_type: body.dialog_type,
      content: body.content ?? null,
      reply_to: body.reply_to ?? null,
      amendment_type: null,
      amendment_target: null,
      amendment_content: null,
      created_at: at,
    },
    nudge: row.check_due_at === "" ? null : dueMs,
  };
}

/**
 * The statement for one dialog type, built once per isolate: plain text with numbered parameters
 * bound straight to D1 (building it through drizzle's `sql` on every post cost about a quarter of a
 * millisecond of CPU, a fair share of this path). Parameters: ?1 dialog id, ?2 session id, ?3 type,
 * ?4 content, ?5 reply_to, ?6 now, ?7 per-node cap, ?8 poster node id (or NULL), ?9 credential id,
 * ?10 secret hash (when ?8 is NULL), ?11 the progress check due.
 *
 * One statement, not a batch: the follow-up writes (the node's last dialog time, a term member's
 * first response, the session's next check) are the trigger `council_dialogs_direct_effects`
 * (migrations 0021, 0022), which `check_due_at` fires. Each further statement in a D1 batch cost about 5%
 * of this path's throughput (issue 26 item 5). Whether the dialog moves the session's next check is
 * decided from the session row the checks already read, and stored as `check_due_at` ('' when it
 * does not): the trigger writes the session only then, and RETURNING tells the caller whether to
 * nudge, with no second read of the session. Reading the seat from the state's JSON (`json_each`
 * over `$.members`) parsed the whole state on every post; `council_seats` (migration 0026) replaced
 * it (issue 41).
 *
 * No joins: the session row and the poster are a materialized CTE, and the seat, the count and `seq`
 * are scalar subqueries of it. SQLite compiles a statement again on every run when its planner looked
 * at a bound value, which it does for a join (or an ORDER BY) with a parameter directly in its terms.
 * As joins, the statement and its trigger were compiled anew on every post: about 0.45 ms of the
 * 1.4 ms more CPU a dialog cost than the bench's floor (bench/README.md, "Issue 41, fifth session";
 * docs/architecture.md, "Hot-path SQL").
 */
function directSql(type: DialogType): string {
  let cached = SQL_BY_TYPE.get(type);
  if (cached) return cached;
  const phases = phasesTaking(type)
    .map((p) => `'${p}'`)
    .join(", ");
  // The poster: given, or the subject of the presented token when it is a live node credential
  // (authentication in the same statement as the write: no read before it). Collapsed to one line:
  // the text travels to D1 with every post.
  const poster = `COALESCE(?8, ${liveSubjectSql("node", "?9", "?10", "?6")})`;
  // The session row and the poster are a materialized CTE, read once: flattened, the poster's two
  // lookups were repeated for every place the outer query names it.
  cached = `WITH y AS MATERIALIZED (
      SELECT s.id, s.phase, s.proposer_id,
        (SELECT n.id FROM nodes n WHERE n.id = ${poster} AND n.suspended_at IS NULL) AS node_id,
        CASE WHEN s.next_check_at IS NULL OR s.next_check_at > ?11 THEN ?11 ELSE '' END AS due
      FROM council_sessions s
      WHERE s.id = ?2 AND s.phase IN (${phases}))
    INSERT INTO council_dialogs (id, session_id, seq, node_id, role, phase, dialog_type, content, reply_to, created_at, check_due_at)
    SELECT ?1, x.id, (SELECT COALESCE(MAX(d.seq), 0) + 1 FROM council_dialogs d WHERE d.session_id = x.id),
      x.node_id, x.role, x.phase, ?3, ?4, ?5, ?6, x.due
    FROM (
      SELECT y.id, y.phase, y.node_id, y.due,
        CASE WHEN y.proposer_id = y.node_id THEN 'proposer'
          ELSE (SELECT t.role FROM council_seats t WHERE t.session_id = y.id AND t.node_id = y.node_id) END AS role
      FROM y
    ) x
    WHERE x.node_id IS NOT NULL AND x.role IS NOT NULL
      AND (SELECT COUNT(*) FROM council_dialogs d WHERE d.session_id = x.id AND d.node_id = x.node_id) < ?7
      AND (?5 IS NULL OR EXISTS (
        SELECT 1 FROM council_dialogs r WHERE r.id = ?5 AND r.session_id = x.id AND r.dialog_type <> 'amend'))
    RETURNING seq, node_id, role, phase, check_due_at`.replace(/\s+/g, " ");
  SQL_BY_TYPE.set(type, cached);
  return cached;
}

const SQL_BY_TYPE = new Map<DialogType, string>();
