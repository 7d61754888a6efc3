import { AppError } from "../lib/errors";

/**
 * The commit attribution block of seed 004 ("コミット帰属"), as pure functions:
 *
 *     feat(auth): implement OAuth2 flow
 *
 *     Contributed by: node_a0c28b601d3a6d49
 *     Project: human-welfare-v1
 *     Task: task_clxyz123
 *     Council-Session: delib_abc789
 *
 *     Co-authored-by: EvoMap-Agent-a0c28 <node_a0c28b601d3a6d49@nodes.noreply.crewplane.dev>
 *
 * The seed's co-author name is `EvoMap-Agent-` + the first five hex digits of the node id; its
 * e-mail address did not survive in the seed, so nodes get a fixed no-reply form: the full node id
 * at `NODE_EMAIL_DOMAIN`. It is stable (same node, same address), unique per node (the whole id is
 * in it) and delivers nowhere. GitHub links a co-author to an account only when the address
 * belongs to one, so nodes show as plain co-authors.
 *
 * Everything interpolated into the block is sanitised: no newline or control character in a label
 * can start a line of its own, so nobody can forge an extra trailer through a project name.
 */

export const NODE_EMAIL_DOMAIN = "nodes.noreply.crewplane.dev";
export const COAUTHOR_NAME_PREFIX = "EvoMap-Agent-";

export interface Attribution {
  node_id: string;
  /** The project's name or slug as it should read in the history (`human-welfare-v1`). */
  project: string;
  task_id: string;
  council_session_id: string;
}

/** A node id is an identifier that goes into an e-mail address: letters, digits, `_`, `.`, `-`. */
const NODE_ID = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;
const MAX_LABEL = 200;

// Controls (C0, C1), line/paragraph separators, bidi embeddings/overrides/isolates and the BOM:
// each could end a line, or make a line render as something else than what git stores.
const UNSAFE = /[\p{Cc}\u2028\u2029\u202A-\u202E\u2066-\u2069\uFEFF]+/gu;

/**
 * One line of text for a trailer value: unsafe characters and whitespace runs become one space,
 * lone surrogates become U+FFFD, the ends are trimmed, and the result is capped at 200 characters.
 */
export function sanitizeLabel(value: string, field: string): string {
  const clean = value.toWellFormed().replace(UNSAFE, " ").replace(/\s+/gu, " ").trim();
  const capped = Array.from(clean).slice(0, MAX_LABEL).join("").trimEnd();
  if (!capped)
    throw new AppError("validation_failed", `attribution ${field} is empty`, { errors: [{ path: field, message: "must not be empty" }] });
  return capped;
}

function checkNodeId(nodeId: string): string {
  if (!NODE_ID.test(nodeId)) {
    throw new AppError("validation_failed", "attribution node_id is not a node id", {
      errors: [{ path: "node_id", message: "must be 1-64 letters, digits, '_', '.' or '-', starting with a letter or digit" }],
    });
  }
  return nodeId;
}

/** `EvoMap-Agent-a0c28 <node_a0c28b601d3a6d49@nodes.noreply.crewplane.dev>` for `node_a0c28b601d3a6d49`. */
export function nodeCoauthor(nodeId: string): string {
  const id = checkNodeId(nodeId);
  const short = id.replace(/^node_/, "").slice(0, 5);
  return `${COAUTHOR_NAME_PREFIX}${short} <${id}@${NODE_EMAIL_DOMAIN}>`;
}

/**
 * The attribution block without a trailing newline: four labelled lines, a blank line, and the
 * `Co-authored-by:` trailer (git reads trailers from the last paragraph only, which is why the
 * seed's layout puts the co-author on its own).
 */
export function attributionTrailer(a: Attribution): string {
  return [
    `Contributed by: ${checkNodeId(a.node_id)}`,
    `Project: ${sanitizeLabel(a.project, "project")}`,
    `Task: ${sanitizeLabel(a.task_id, "task_id")}`,
    `Council-Session: ${sanitizeLabel(a.council_session_id, "council_session_id")}`,
    "",
    `Co-authored-by: ${nodeCoauthor(a.node_id)}`,
  ].join("\n");
}

// A line of the contributor's own text that reads like one of the attribution lines or a
// co-author/sign-off trailer. It is quoted ("> ") so the only such lines are the ones we append.
const RESERVED_LINE = /^\s*(contributed[ -]by|project|task|council-session|co-authored-by|signed-off-by)\s*:/i;
// Inside a message newlines and tabs are legitimate; every other unsafe character goes.
const UNSAFE_IN_MESSAGE = /[\u0000-\u0008\u000B\u000C\u000E-\u001F\u007F-\u009F\u202A-\u202E\u2066-\u2069\uFEFF]/gu;

/** The contributor's message made safe to precede the block (see `attributedMessage`). */
export function cleanCommitMessage(message: string): string {
  const lines = message
    .toWellFormed()
    .replace(/\r\n?|[\u2028\u2029]/g, "\n")
    .replace(UNSAFE_IN_MESSAGE, "")
    .split("\n")
    .map((line) => line.trimEnd())
    .map((line) => (RESERVED_LINE.test(line) ? `> ${line}` : line));
  // Runs of blank lines collapse to one, as `git commit`'s default cleanup does.
  const text = lines
    .join("\n")
    .replace(/\n{3,}/g, "\n\n")
    .trim();
  if (!text)
    throw new AppError("validation_failed", "commit message is empty", { errors: [{ path: "message", message: "must not be empty" }] });
  return text;
}

/**
 * The full commit message: the contributor's message (cleaned), a blank line, the attribution block
 * and a final newline, so the block is always the end of the message.
 */
export function attributedMessage(message: string, a: Attribution): string {
  return `${cleanCommitMessage(message)}\n\n${attributionTrailer(a)}\n`;
}
