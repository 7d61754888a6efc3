/** @jsxImportSource hono/jsx */
import type { Child } from "hono/jsx";
import { Layout, type Viewer } from "../layout";

/** The console listens to its own stream (the operator feed, authenticated by the session cookie). */
export const CONSOLE_STREAM = "/console/events/stream";

export function ConsolePage(props: { title: string; path: string; viewer: Viewer; children?: Child }) {
  return (
    <Layout title={props.title} area="console" path={props.path} viewer={props.viewer} stream={CONSOLE_STREAM}>
      {props.children}
    </Layout>
  );
}

/** "in 23 min" / "2 h ago": the server's rendering of a countdown the client script keeps current. */
export function relative(atIso: string, now: Date): string {
  const ms = Date.parse(atIso) - now.getTime();
  const abs = Math.abs(ms);
  const text =
    abs < 60_000
      ? `${Math.round(abs / 1000)} s`
      : abs < 3_600_000
        ? `${Math.round(abs / 60_000)} min`
        : abs < 172_800_000
          ? `${Math.round(abs / 3_600_000)} h`
          : `${Math.round(abs / 86_400_000)} days`;
  return ms >= 0 ? `in ${text}` : `${text} ago`;
}

export function Countdown(props: { at: string; now: Date }) {
  return (
    <span class="countdown" data-countdown={props.at}>
      {relative(props.at, props.now)}
    </span>
  );
}
