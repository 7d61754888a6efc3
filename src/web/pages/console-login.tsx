/** @jsxImportSource hono/jsx */
import { FieldErrors, ProblemNote, type FormProblem } from "../components/common";
import { Layout } from "../layout";

/** The login form: an operator token is exchanged for a session cookie (the token itself is never kept). */
export function LoginPage(props: { next: string; problem?: FormProblem | null; ended?: boolean }) {
  const tokenErrors = props.problem?.fields.token;
  return (
    <Layout title="Operator console" area="console" path="/console/login">
      {props.ended ? (
        <p class="note" role="status">
          You are logged out.
        </p>
      ) : null}
      <form method="post" action="/console/login" class="login">
        <ProblemNote problem={props.problem} />
        <input type="hidden" name="next" value={props.next} />
        <label for="token">Operator token</label>
        <input
          id="token"
          name="token"
          type="password"
          autocomplete="off"
          required
          aria-invalid={tokenErrors ? "true" : undefined}
          aria-describedby={tokenErrors ? "token-errors token-help" : "token-help"}
        />
        <p id="token-help" class="help">
          A viewer, manager or admin token (<code>POST /v1/admin/operators</code> makes one). It opens a session for 12 hours, kept in a
          cookie no script can read; log out, or revoke the operator, to end it.
        </p>
        <FieldErrors id="token-errors" errors={tokenErrors} />
        <button type="submit">Log in</button>
      </form>
      <p>
        <a href="/council">The public pages</a> need no login.
      </p>
    </Layout>
  );
}
