import { exports } from "cloudflare:workers";
import { ADMIN_TOKEN } from "./index";

export interface SseFrame {
  event?: string;
  id?: string;
  data?: string;
  retry?: string;
}

/**
 * Opens an event stream through the real Worker and reads frames until `enough` says so (or the
 * time runs out), then cancels the stream: the server's loop sees the cancel and stops.
 */
export async function readStream(
  path: string,
  enough: (frames: SseFrame[]) => boolean,
  opts: { token?: string | null; headers?: Record<string, string>; timeoutMs?: number; onReady?: () => Promise<unknown> } = {},
): Promise<{ status: number; contentType: string | null; frames: SseFrame[]; body?: unknown }> {
  const headers: Record<string, string> = { ...(opts.headers ?? {}) };
  const token = opts.token === undefined ? ADMIN_TOKEN : opts.token;
  if (token) headers.authorization = `Bearer ${token}`;
  const res = await exports.default.fetch(`http://crewplane.test${path}`, { headers });
  const contentType = res.headers.get("content-type");
  if (!contentType?.startsWith("text/event-stream")) return { status: res.status, contentType, frames: [], body: await res.json() };
  const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
  const frames: SseFrame[] = [];
  let buffer = "";
  const deadline = Date.now() + (opts.timeoutMs ?? 15_000);
  try {
    while (!enough(frames) && Date.now() < deadline) {
      const chunk = await Promise.race([
        reader.read(),
        new Promise<{ done: true; value: undefined }>((r) => setTimeout(() => r({ done: true, value: undefined }), deadline - Date.now())),
      ]);
      if (chunk.done) break;
      buffer += chunk.value;
      let end: number;
      while ((end = buffer.indexOf("\n\n")) !== -1) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        if (block.startsWith(":")) continue; // a comment (keepalive)
        const frame: SseFrame = {};
        for (const line of block.split("\n")) {
          const at = line.indexOf(": ");
          const [key, value] = at === -1 ? [line, ""] : [line.slice(0, at), line.slice(at + 2)];
          if (key === "data") frame.data = frame.data === undefined ? value : `${frame.data}\n${value}`;
          else if (key === "event" || key === "id" || key === "retry") frame[key] = value;
        }
        frames.push(frame);
        // The stream has fixed where it starts: what happens now is what it must show.
        if (frame.event === "ready" && opts.onReady) await opts.onReady();
      }
    }
  } finally {
    await reader.cancel().catch(() => undefined);
  }
  return { status: res.status, contentType, frames };
}

/** The frames that carry events (not the opening `ready`). */
export const eventFrames = (frames: SseFrame[]) => frames.filter((f) => f.id !== undefined);
