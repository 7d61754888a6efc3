/**
 * Pairs a CLI's "tool started" and "tool finished" events by call id, in order of first appearance.
 * A call that never finished stays `incomplete`: the stream showed the attempt, not its result.
 */
import type { NativeToolEvent } from "./types.ts";

type Start = Omit<NativeToolEvent, "status" | "callId">;
type End = Partial<Omit<NativeToolEvent, "callId">> & { status: NativeToolEvent["status"] };

export interface ToolLedger {
  start(callId: string | undefined, event: Start): void;
  /** Ends the call `callId`; an end without a start is recorded on its own. */
  end(callId: string | undefined, event: End & Partial<Start>): void;
  events(): NativeToolEvent[];
}

export function createToolLedger(): ToolLedger {
  const list: NativeToolEvent[] = [];
  const open = new Map<string, NativeToolEvent>();
  return {
    start(callId, event) {
      const entry: NativeToolEvent = { ...event, ...(callId ? { callId } : {}), status: "incomplete" };
      list.push(entry);
      if (callId) open.set(callId, entry);
    },
    end(callId, event) {
      const entry = callId ? open.get(callId) : undefined;
      if (!entry) {
        if (event.tool === undefined) return; // A result for a call we never saw and cannot name.
        list.push({ ...event, tool: event.tool, ...(callId ? { callId } : {}) } as NativeToolEvent);
        return;
      }
      Object.assign(entry, stripUndefined(event));
      open.delete(callId!);
    },
    events() {
      return list.map((e) => ({ ...e }));
    },
  };
}

function stripUndefined<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>;
}
