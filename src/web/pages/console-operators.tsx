/** @jsxImportSource hono/jsx */
import type { operatorView } from "../../workers/http/admin/operators";
import { Badge, Csrf, Empty, FieldErrors, ProblemNote, Time, type FormProblem } from "../components/common";
import type { Viewer } from "../layout";
import { ConsolePage } from "./console-shell";

type OperatorRow = ReturnType<typeof operatorView>;

/** A token just minted: shown on this one answer, never again. */
export interface CreatedOperator {
  operator_id: string;
  name: string;
  role: string;
  token: string;
}

export interface OperatorDraft {
  name?: string;
  role?: string;
}

const ROLES = [
  ["viewer", "Viewer: reads every page"],
  ["manager", "Manager: also gives work, decides approvals, cancels goals"],
  ["admin", "Admin: also runners, operators and config"],
] as const;

/** `GET /v1/admin/operators` as an admin's page: who holds a token, the form that mints one, a revoke per token. */
export function OperatorsPage(props: {
  viewer: Viewer;
  /** The signed-in operator's id: its own token is not offered for revoking. */
  selfId: string;
  operators: OperatorRow[];
  created?: CreatedOperator | null;
  problem?: FormProblem | null;
  draft?: OperatorDraft;
  /** A refused revoke, shown on its operator's row. */
  revokeProblem?: { operatorId: string; problem: FormProblem } | null;
}) {
  const p = props.problem;
  const d = props.draft ?? {};
  const nameErrors = p?.fields.name;
  const roleErrors = p?.fields.role;
  return (
    <ConsolePage title="Operators" path="/console/operators" viewer={props.viewer}>
      {props.created ? <NewOperatorToken created={props.created} /> : null}
      <form method="post" action="/console/operators" id="operator-create" class="card">
        <h2>New operator token</h2>
        <Csrf token={props.viewer.csrf} />
        <ProblemNote problem={p} />
        <label for="operator-name">Name</label>
        <input
          id="operator-name"
          name="name"
          required
          maxlength={100}
          value={d.name ?? ""}
          placeholder="mia"
          aria-invalid={nameErrors ? "true" : undefined}
          aria-describedby={nameErrors ? "operator-name-hint operator-name-errors" : "operator-name-hint"}
        />
        <p class="meta" id="operator-name-hint">
          The person who will sign in with it: decisions and actions are recorded under this name. The token is shown once, on the next
          page.
        </p>
        <FieldErrors id="operator-name-errors" errors={nameErrors} />
        <label for="operator-role">Role</label>
        <select
          id="operator-role"
          name="role"
          required
          aria-invalid={roleErrors ? "true" : undefined}
          aria-describedby={roleErrors ? "operator-role-errors" : undefined}
        >
          {ROLES.map(([value, text]) => (
            <option value={value} selected={(d.role ?? "viewer") === value}>
              {text}
            </option>
          ))}
        </select>
        <FieldErrors id="operator-role-errors" errors={roleErrors} />
        <button type="submit">Create the token</button>
      </form>
      <section id="operators" data-live="operator." aria-label="Operators">
        {props.operators.length === 0 ? (
          <Empty>No operator token yet (the form above makes one).</Empty>
        ) : (
          <div class="table-wrap" tabindex={0} role="group" aria-label="Table (scrolls sideways)">
            <table>
              <thead>
                <tr>
                  <th scope="col">Operator</th>
                  <th scope="col">Role</th>
                  <th scope="col">Created</th>
                  <th scope="col">Revoked</th>
                  <th scope="col">Action</th>
                </tr>
              </thead>
              <tbody>
                {props.operators.map((o) => (
                  <tr id={`operator-${o.operator_id}`} data-operator={o.operator_id}>
                    <td>
                      {o.name}
                      <br />
                      <code>{o.operator_id}</code>
                    </td>
                    <td>{o.role ? <Badge status={o.role} kind="role" /> : null}</td>
                    <td>
                      <Time at={o.created_at} />
                    </td>
                    <td>{o.revoked_at ? <Time at={o.revoked_at} /> : "live"}</td>
                    <td>
                      {props.revokeProblem?.operatorId === o.operator_id ? <ProblemNote problem={props.revokeProblem.problem} /> : null}
                      <RevokeCell operator={o} selfId={props.selfId} csrf={props.viewer.csrf} />
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
      </section>
    </ConsolePage>
  );
}

function RevokeCell(props: { operator: OperatorRow; selfId: string; csrf: string }) {
  const o = props.operator;
  if (o.revoked_at) return <span class="none">revoked</span>;
  if (o.operator_id === props.selfId) return <span class="meta">you (signed in with it)</span>;
  return (
    <form
      method="post"
      action={`/console/operators/${o.operator_id}/revoke`}
      class="inline"
      data-confirm={`Revoke ${o.name}'s token? Its sessions and API calls stop at once.`}
    >
      <Csrf token={props.csrf} />
      <button type="submit">Revoke</button>
    </form>
  );
}

function NewOperatorToken(props: { created: CreatedOperator }) {
  const c = props.created;
  return (
    <section id="operator-created" class="card" role="status" aria-labelledby="operator-created-h">
      <h2 id="operator-created-h">
        Operator token for {c.name} ({c.role})
      </h2>
      <p>
        Copy it now: it is shown only on this page. The operator is <code>{c.operator_id}</code>. Hand it to {c.name} over a private
        channel; they sign in with it at <a href="/console/login">/console/login</a> or call the API with{" "}
        <code>Authorization: Bearer …</code>.
      </p>
      <pre>
        <code id="operator-token">{c.token}</code>
      </pre>
    </section>
  );
}
