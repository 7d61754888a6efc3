/** @jsxImportSource hono/jsx */
import type { ApprovalView } from "../../approvals/view";
import { Csrf, Data, Empty, FieldErrors, ProblemNote, Time, type FormProblem } from "../components/common";
import type { Viewer } from "../layout";
import { ConsolePage, Countdown } from "./console-shell";
import { Diff } from "./console-learning";

/**
 * The four ends an approval can have, told apart by word, symbol and shape (never colour alone),
 * with what each means: only `approved` lets the action happen.
 */
export const OUTCOMES: Record<string, { symbol: string; label: string; meaning: string }> = {
  approved: { symbol: "✔", label: "Approved", meaning: "a person approved it; the action may run once" },
  denied: { symbol: "✘", label: "Denied", meaning: "a person denied it" },
  expired: { symbol: "◷", label: "Expired", meaning: "nobody decided before its deadline: a denial" },
  no_channel: { symbol: "∅", label: "No channel", meaning: "nobody could be asked when it was requested: a denial" },
  pending: { symbol: "…", label: "Pending", meaning: "waiting for a person" },
};

export function Outcome(props: { status: string }) {
  const o = OUTCOMES[props.status] ?? { symbol: "?", label: props.status, meaning: "" };
  return (
    <span class={`outcome o-${props.status}`} data-outcome={props.status} title={o.meaning}>
      <span aria-hidden="true">{o.symbol}</span> {o.label}
    </span>
  );
}

export type DecideAbility = "yes" | "role" | "bootstrap";

function DecideForm(props: { a: ApprovalView; viewer: Viewer; problem?: FormProblem | null; note?: string }) {
  const id = props.a.approval_id;
  const noteErrors = props.problem?.fields.note;
  return (
    <form
      class="decide"
      method="post"
      action={`/console/approvals/${id}/decide`}
      hx-post={`/console/approvals/${id}/decide`}
      hx-target={`#approval-${id}`}
      hx-select={`#approval-${id}`}
      hx-swap="outerHTML"
    >
      <Csrf token={props.viewer.csrf} />
      <ProblemNote problem={props.problem} />
      <label for={`note-${id}`}>Note (optional)</label>
      <textarea
        id={`note-${id}`}
        name="note"
        rows={2}
        maxlength={1000}
        aria-invalid={noteErrors ? "true" : undefined}
        aria-describedby={noteErrors ? `note-${id}-errors` : undefined}
      >
        {props.note ?? ""}
      </textarea>
      <FieldErrors id={`note-${id}-errors`} errors={noteErrors} />
      <div class="buttons">
        <button type="submit" name="decision" value="approve" class="approve">
          Approve
        </button>
        <button type="submit" name="decision" value="deny" class="deny">
          Deny
        </button>
      </div>
    </form>
  );
}

/** What a SOUL approval would change, readable before deciding: the sizes and the diff it is bound to. */
function SoulChange(props: { a: ApprovalView }) {
  const a = props.a;
  if (a.action_kind !== "soul_change" && a.action_kind !== "soul_consolidation") return null;
  const p = a.params;
  const diff = typeof p.diff === "string" ? p.diff : null;
  const before = typeof p.bytes_before === "number" ? p.bytes_before : null;
  const after = typeof p.bytes_after === "number" ? p.bytes_after : null;
  return (
    <section class="soul-change" aria-label="The SOUL change">
      <p>
        {a.action_kind === "soul_consolidation"
          ? "Replaces the whole SOUL.md with a shorter rewrite (consolidation under the size cap)"
          : "Appends to SOUL.md"}
        {typeof p.base_version === "number" ? <> · from version {p.base_version}</> : null}
        {before !== null && after !== null ? (
          <>
            {" "}
            · <span data-bytes-before={before}>{before.toLocaleString("en")}</span> →{" "}
            <span data-bytes-after={after}>{after.toLocaleString("en")}</span> bytes
          </>
        ) : null}
      </p>
      {diff ? (
        <details open={a.status === "pending"}>
          <summary>The diff</summary>
          <Diff text={diff} />
        </details>
      ) : null}
    </section>
  );
}

export function ApprovalCard(props: {
  a: ApprovalView;
  viewer: Viewer;
  now: Date;
  decide: DecideAbility;
  problem?: FormProblem | null;
  note?: string;
}) {
  const a = props.a;
  return (
    <article
      class={`card approval o-${a.status}`}
      id={`approval-${a.approval_id}`}
      data-status={a.status}
      aria-labelledby={`ah-${a.approval_id}`}
    >
      <h3 id={`ah-${a.approval_id}`}>
        {a.action_kind.replaceAll("_", " ")} · <code>{a.subject}</code>
      </h3>
      <p>
        <Outcome status={a.status} /> · requested by <code>{a.requested_by}</code> <Time at={a.requested_at} />
        {a.status === "pending" ? (
          <>
            {" "}
            · expires <Time at={a.expires_at} /> (<Countdown at={a.expires_at} now={props.now} />)
          </>
        ) : null}
      </p>
      {"decided_by" in a && a.decided_by ? (
        <p>
          Decided by <code>{a.decided_by}</code> via {String(a.decided_via ?? "")}
          {"decided_at" in a && a.decided_at ? (
            <>
              {" "}
              at <Time at={a.decided_at} />
            </>
          ) : null}
          {"note" in a && a.note ? <> · note: {a.note}</> : null}
        </p>
      ) : null}
      {"consumed_at" in a && a.consumed_at ? (
        <p>
          Carried out at <Time at={a.consumed_at} /> by <code>{String(a.consumed_by ?? "")}</code>
        </p>
      ) : null}
      <SoulChange a={a} />
      <details open={a.status === "pending"}>
        <summary>Evidence</summary>
        <Data value={a.evidence} />
      </details>
      <details>
        <summary>The action it is bound to</summary>
        <Data value={a.params} />
        <p>
          Action hash <code class="hash">{a.action_hash}</code>
        </p>
      </details>
      {a.status === "pending" && props.decide === "yes" ? (
        <DecideForm a={a} viewer={props.viewer} problem={props.problem} note={props.note} />
      ) : null}
      {a.status !== "pending" && props.problem ? <ProblemNote problem={props.problem} /> : null}
      {a.status === "pending" && props.decide === "bootstrap" ? (
        <p class="note">The bootstrap ADMIN_TOKEN cannot decide approvals: log in with a named manager or admin operator's token.</p>
      ) : null}
      {a.status === "pending" && props.decide === "role" ? <p class="note">Deciding needs the manager role.</p> : null}
    </article>
  );
}

export function ApprovalsPage(props: {
  viewer: Viewer;
  now: Date;
  pending: ApprovalView[];
  decided: ApprovalView[];
  decide: DecideAbility;
  /** A refused decide, shown on its card. */
  problem?: { approvalId: string; problem: FormProblem; note?: string } | null;
}) {
  const cardProps = (a: ApprovalView) => ({
    a,
    viewer: props.viewer,
    now: props.now,
    decide: props.decide,
    ...(props.problem?.approvalId === a.approval_id ? { problem: props.problem.problem, note: props.problem.note } : {}),
  });
  return (
    <ConsolePage title="Approvals" path="/console/approvals" viewer={props.viewer}>
      <p>
        Only a person decides. Each approval ends one of four ways: <Outcome status="approved" />, <Outcome status="denied" />,{" "}
        <Outcome status="expired" /> (nobody decided in time: a denial) or <Outcome status="no_channel" /> (nobody could be asked: a
        denial).
      </p>
      <section id="approvals-pending" data-live="approval." aria-labelledby="pending-h">
        <h2 id="pending-h">Pending ({props.pending.length})</h2>
        {props.pending.length === 0 ? (
          <Empty>Nothing is waiting for a decision.</Empty>
        ) : (
          props.pending.map((a) => <ApprovalCard {...cardProps(a)} />)
        )}
      </section>
      <section id="approvals-decided" data-live="approval." aria-labelledby="decided-h">
        <h2 id="decided-h">Recently ended</h2>
        {props.decided.length === 0 ? (
          <Empty>No approval has ended yet.</Empty>
        ) : (
          props.decided.map((a) => <ApprovalCard {...cardProps(a)} />)
        )}
      </section>
    </ConsolePage>
  );
}
