/** @jsxImportSource hono/jsx */
import type { conversationView } from "../../conversations/store";
import { Badge, Csrf, Data, Empty, FieldErrors, ProblemNote, Time, type FormProblem } from "../components/common";
import type { Viewer } from "../layout";
import { ConsolePage } from "./console-shell";

type Conversation = ReturnType<typeof conversationView>;

/** A chat with an employee: the turns, the reply as it arrives (`conversation.replied`), and after close the outcome. */
export function ConversationPage(props: {
  viewer: Viewer;
  conversation: Conversation;
  canWrite: boolean;
  problem?: FormProblem | null;
  draft?: string;
}) {
  const c = props.conversation;
  const contentErrors = props.problem?.fields.content;
  const open = c.status === "open";
  return (
    <ConsolePage title={`Conversation with ${c.employee_id}`} path="/console/employees" viewer={props.viewer}>
      <p>
        <a href={`/console/employees/${c.employee_id}`}>{c.employee_id}</a> › <code>{c.conversation_id}</code> · user{" "}
        <code>{c.user_id}</code> · <Badge status={c.status} /> · started <Time at={c.created_at} />
      </p>
      <section id="chat" data-live="conversation." aria-label="Messages">
        {c.turns.length === 0 ? (
          <Empty>No message yet.</Empty>
        ) : (
          <ol class="chat" aria-live="polite">
            {c.turns.map((t) => (
              <li class={`turn turn-${t.role} t-${t.status}`} data-role={t.role}>
                <p class="meta">
                  {t.role === "user" ? c.user_id : c.employee_id} · <Time at={t.at} />
                  {t.status === "failed" ? <> · the reply failed{t.error ? `: ${JSON.stringify(t.error)}` : ""}</> : null}
                </p>
                <p class="prose">{t.content}</p>
              </li>
            ))}
          </ol>
        )}
        {c.reply_pending ? (
          <p class="pending" data-reply-pending="true">
            {c.employee_id} is replying…
          </p>
        ) : null}
        {"prediction" in c && c.prediction ? (
          <>
            <h2>What the prediction engine made of it</h2>
            <Data value={{ prediction: c.prediction, error: c.error, action: c.action }} />
          </>
        ) : null}
      </section>
      {open && props.canWrite ? (
        <section aria-labelledby="send-h">
          <h2 id="send-h">Send a message</h2>
          <form method="post" action={`/console/conversations/${c.conversation_id}/messages`}>
            <Csrf token={props.viewer.csrf} />
            <ProblemNote problem={props.problem} />
            <label for="content">Message</label>
            <textarea
              id="content"
              name="content"
              rows={3}
              required
              aria-invalid={contentErrors ? "true" : undefined}
              aria-describedby={contentErrors ? "content-errors" : undefined}
            >
              {props.draft ?? ""}
            </textarea>
            <FieldErrors id="content-errors" errors={contentErrors} />
            <button type="submit">Send</button>
          </form>
          <form method="post" action={`/console/conversations/${c.conversation_id}/close`}>
            <Csrf token={props.viewer.csrf} />
            <button type="submit">Close the conversation</button>
          </form>
        </section>
      ) : open ? (
        <p class="note">Sending messages needs the manager role.</p>
      ) : null}
    </ConsolePage>
  );
}
