/** @jsxImportSource hono/jsx */
import type { sessionDetail } from "../../council/views";
import { Badge, Data, Empty, Num, Pct, Time, Unknown } from "./common";

export type SessionDetail = Awaited<ReturnType<typeof sessionDetail>>;

const FINAL_PHASES = new Set(["approved", "rejected", "revise", "tabled", "abandoned", "vetoed"]);
export const isFinal = (phase: string) => FINAL_PHASES.has(phase);

function VetoState(props: { veto: NonNullable<SessionDetail["veto"]> }) {
  const v = props.veto;
  return (
    <section class="veto" aria-label="Veto">
      <h4>Veto</h4>
      <p>
        <Badge status={v.status} kind="veto" /> by <code>{v.by}</code> at <Time at={v.at} />
      </p>
      <p>Reason: {v.reason}</p>
      <p>
        {v.status === "pending_ratification" ? "Must be ratified by a second admin by " : "Ratification deadline was "}
        <Time at={v.ratify_by} />
        {v.status === "pending_ratification" ? <span data-countdown={v.ratify_by}></span> : null}
      </p>
      {v.ratified_by ? (
        <p>
          Ratified by <code>{v.ratified_by}</code> at <Time at={v.ratified_at} />
        </p>
      ) : null}
      {v.lapsed_at ? (
        <p>
          Lapsed at <Time at={v.lapsed_at} />: the decision and its effects were restored.
        </p>
      ) : null}
    </section>
  );
}

/** A council session's whole public trail (seed 004: every council record is publicly observable). */
export function SessionTrail(props: { s: SessionDetail; headingLevel?: 2 | 3 }) {
  const s = props.s;
  const H = props.headingLevel === 3 ? "h4" : "h3";
  const decision = s.decision;
  return (
    <div class="session" data-phase={s.phase}>
      <p class="meta">
        Phase <Badge status={s.phase} kind="phase" /> since <Time at={s.phase_started_at} /> · {s.kind} proposal by{" "}
        <code>{s.proposer_id}</code> · opened <Time at={s.created_at} />
        {s.project_id ? (
          <>
            {" "}
            · project <a href={`/projects/${s.project_id}`}>{s.project_id}</a>
          </>
        ) : null}
      </p>
      <details>
        <summary>Proposal text</summary>
        <p class="prose">{s.proposal.body}</p>
        {s.proposal_hash ? (
          <p>
            Ballot hash <code class="hash">{s.proposal_hash}</code>
          </p>
        ) : null}
      </details>

      <H>Members</H>
      <div class="table-wrap" tabindex={0} role="group" aria-label="Table (scrolls sideways)">
        <table>
          <thead>
            <tr>
              <th scope="col">Node</th>
              <th scope="col">Role</th>
              <th scope="col">Seated by</th>
              <th scope="col">Responded</th>
              <th scope="col">Replaced by</th>
            </tr>
          </thead>
          <tbody>
            {s.members.map((m) => (
              <tr>
                <td>
                  <code>{m.node_id}</code>
                </td>
                <td>{m.role.replaceAll("_", " ")}</td>
                <td>{"source" in m ? String(m.source ?? "") : "proposer"}</td>
                <td>{"responded_at" in m && m.responded_at ? <Time at={m.responded_at} /> : m.role === "proposer" ? "" : "not yet"}</td>
                <td>{"replaced_by" in m && m.replaced_by ? <code>{m.replaced_by}</code> : ""}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      {s.skipped_members.length ? (
        <p>
          Not seated:{" "}
          {s.skipped_members.map((m) => (
            <span class="chip">
              <code>{m.node_id}</code> ({m.reason.replaceAll("_", " ")})
            </span>
          ))}
        </p>
      ) : null}

      <H>Dialog ({s.dialogs.length})</H>
      {s.dialogs.length === 0 ? (
        <Empty>No dialog yet.</Empty>
      ) : (
        <ol class="dialogs">
          {s.dialogs.map((d) => (
            <li id={`dialog-${d.id}`} data-dialog-type={d.dialog_type}>
              <p class="meta">
                #{d.seq} <code>{d.node_id}</code> ({d.role.replaceAll("_", " ")}) · <strong>{d.dialog_type}</strong> in {d.phase} ·{" "}
                <Time at={d.created_at} />
                {d.reply_to ? <> · replying to {d.reply_to}</> : null}
              </p>
              {d.content ? <p class="prose">{d.content}</p> : null}
              {d.amendment_type ? (
                <p>
                  Amendment: {d.amendment_type} <q>{d.amendment_target ?? ""}</q>
                  {d.amendment_content ? (
                    <>
                      {" "}
                      → <q>{d.amendment_content}</q>
                    </>
                  ) : null}
                </p>
              ) : null}
            </li>
          ))}
        </ol>
      )}

      {s.amendments.length ? (
        <>
          <H>Amendments</H>
          <Data value={s.amendments} />
        </>
      ) : null}

      <H>Votes</H>
      {s.votes.length === 0 ? (
        <Empty>No votes yet.</Empty>
      ) : (
        <div class="table-wrap" tabindex={0} role="group" aria-label="Table (scrolls sideways)">
          <table class="votes">
            <thead>
              <tr>
                <th scope="col">Node</th>
                <th scope="col">Ballot</th>
                <th scope="col">Vote</th>
                <th scope="col">Weight</th>
                <th scope="col">Confidence</th>
                <th scope="col">Conditions</th>
                <th scope="col">Reasoning</th>
              </tr>
            </thead>
            <tbody>
              {s.votes.map((v) => (
                <tr>
                  <td>
                    <code>{v.node_id}</code>
                  </td>
                  <td>{v.kind}</td>
                  <td>
                    <Badge status={v.vote} kind="vote" />
                  </td>
                  <td>
                    <Num value={v.weight} />
                  </td>
                  <td>
                    <Num value={v.confidence} />
                  </td>
                  <td>{(v.conditions as string[] | null)?.join("; ") ?? ""}</td>
                  <td>{v.reasoning ?? ""}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <p class="tally" data-tally-total={String(s.tally.total)}>
        Tally (weights): approve <Num value={s.tally.approve} />, reject <Num value={s.tally.reject} />, revise{" "}
        <Num value={s.tally.revise} /> of <Num value={s.tally.total} /> · <span data-votes={String(s.votes.length)}>{s.votes.length}</span>{" "}
        vote{s.votes.length === 1 ? "" : "s"}
      </p>
      {s.electorate.length ? (
        <details>
          <summary>Electorate frozen when voting opened ({s.electorate.length})</summary>
          <Data value={s.electorate} />
        </details>
      ) : null}

      <H>Decision</H>
      {decision ? (
        <div class="decision">
          <p>
            <Badge status={decision.outcome} kind="outcome" /> with confidence{" "}
            {decision.confidence === null ? <Unknown /> : <Pct value={decision.confidence} />} · decided <Time at={decision.decided_at} />
            {decision.tallied_outcome !== decision.outcome ? (
              <> (the ballots said {decision.tallied_outcome}; the ethics review changed it)</>
            ) : null}
          </p>
          <p>
            Synthesis source: <strong data-synthesis-source={decision.synthesis_source}>{decision.synthesis_source}</strong>
            {decision.synthesis_note ? <> ({decision.synthesis_note.replaceAll("_", " ")})</> : null}
          </p>
          <p class="prose">{decision.consensus}</p>
          {decision.conditions.length ? <p>Conditions: {decision.conditions.join("; ")}</p> : null}
        </div>
      ) : (
        <Empty>
          {isFinal(s.phase)
            ? `Ended without a decision${s.end_reason ? ` (${s.end_reason.replaceAll("_", " ")})` : ""}.`
            : "Not decided yet."}
        </Empty>
      )}
      {s.veto ? <VetoState veto={s.veto} /> : null}
      <details>
        <summary>Deadlines</summary>
        <Data value={s.deadlines} />
      </details>
    </div>
  );
}
