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
  // The goal loop's progress lines (a team round's estimate) between the turns, in time order.
  const notices = c.notices ?? [];
  type Item =
    { at: string; turn: (typeof c.turns)[number]; notice?: undefined } | { at: string; notice: (typeof notices)[number]; turn?: undefined };
  const timeline: Item[] = [
    ...c.turns.map((turn) => ({ at: turn.at, turn })),
    ...notices.map((notice) => ({ at: notice.at, notice })),
  ].sort((a, b) => (a.at < b.at ? -1 : a.at > b.at ? 1 : 0));
  return (
    <ConsolePage title={`Conversation with ${c.employee_id}`} path="/console/employees" viewer={props.viewer}>
      <p>
        <a href={`/console/employees/${c.employee_id}`}>{c.employee_id}</a> › <code>{c.conversation_id}</code> · user{" "}
        <code>{c.user_id}</code> · <Badge status={c.status} /> · started <Time at={c.created_at} />
      </p>
      <section id="chat" data-live="conversation. team." aria-label="Messages">
        {c.turns.length === 0 && notices.length === 0 ? (
          <Empty>No message yet.</Empty>
        ) : (
          <ol class="chat" aria-live="polite">
            {timeline.map((item) =>
              item.notice ? (
                <li class="notice" data-kind={item.notice.kind}>
                  <p class="meta">
                    progress of <a href={`/console/tasks/${item.notice.task_id}`}>{item.notice.task_id}</a> · <Time at={item.notice.at} />
                  </p>
                  <p class="prose">{item.notice.content}</p>
                </li>
              ) : (
                <li class={`turn turn-${item.turn.role} t-${item.turn.status}`} data-role={item.turn.role}>
                  <p class="meta">
                    {item.turn.role === "user" ? c.user_id : c.employee_id} · <Time at={item.turn.at} />
                    {item.turn.status === "failed" ? (
                      <> · the reply failed{item.turn.error ? `: ${JSON.stringify(item.turn.error)}` : ""}</>
                    ) : null}
                  </p>
                  <p class="prose">{item.turn.content}</p>
                </li>
              ),
            )}
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
