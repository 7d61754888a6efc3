import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { writeDirectDialog } from "../../../src/council/direct-dialog";
import { loadSession, sessionUpdate } from "../../../src/council/session-store";
import { getDb } from "../../../src/db/client";
import { dialog, sessionOpener } from "../../factories/council-http";
import { registerNode } from "../../factories/nodes";

// The seats a direct dialog checks (council_seats, migration 0026) are derived from the session's
// state by triggers; a dialog must see exactly the seats the state holds at that moment.

const db = () => getDb(env.DB);
const seats = (sid: string) =>
  env.DB.prepare(`SELECT node_id, role, source FROM council_seats WHERE session_id = ? ORDER BY node_id`)
    .bind(sid)
    .all<{ node_id: string; role: string; source: string }>()
    .then((r) => r.results);
const trailLength = (sid: string) =>
  env.DB.prepare(`SELECT COUNT(*) AS n FROM council_dialogs WHERE session_id = ?`)
    .bind(sid)
    .first<{ n: number }>()
    .then((r) => r!.n);

describe("council seats", () => {
  it("checks the seat the state holds now: a replaced member is refused, its replacement posts with the role the state gives it", async () => {
    const { sid, seated } = await sessionOpener("seats")();
    const outsider = await registerNode({ name: "replacement" });
    const post = (nodeId: string) =>
      writeDirectDialog(db(), {
        session_id: sid,
        poster: { node_id: nodeId },
        body: { dialog_type: "develop", content: "From my seat." },
        now: new Date(),
        debounce_ms: 10_000,
      });
    const loaded = (await loadSession(db(), sid))!;
    const active = (state: typeof loaded.state) =>
      state.members
        .filter((m) => !m.replaced_by)
        .map((m) => ({ node_id: m.node_id, role: m.role, source: m.source }))
        .sort((a, b) => a.node_id.localeCompare(b.node_id));
    expect(await seats(sid)).toEqual(active(loaded.state));
    // Every active member posts with the role the state lists for it (a devil's advocate included).
    for (const m of loaded.state.members) expect((await post(m.node_id))?.dialog.role).toBe(m.role);
    expect(await post(outsider.node_id)).toBeNull();
    // The object replaces seated[1] by the outsider (as a diverge replacement round does) and saves.
    const current = (await loadSession(db(), sid))!;
    const at = new Date().toISOString();
    const replaced = current.state.members.find((m) => m.node_id === seated[1]!.node_id)!;
    const state = structuredClone(current.state);
    state.members = state.members.map((m) =>
      m.node_id === replaced.node_id ? { ...m, replaced_by: outsider.node_id, replaced_at: at } : m,
    );
    state.members.push({
      node_id: outsider.node_id,
      role: replaced.role,
      source: "replacement",
      joined_at: at,
      replaces: replaced.node_id,
    });
    state.dialog_count = await trailLength(sid);
    await db().batch([sessionUpdate(db(), state, current.version, state.dialog_count, new Date())]);
    expect(await seats(sid)).toEqual(active(state));
    expect(await post(seated[1]!.node_id)).toBeNull();
    expect((await post(outsider.node_id))?.dialog.role).toBe(replaced.role);
    // Through HTTP the refusal is the object's exact one.
    const refused = await dialog(seated[1]!, sid, { dialog_type: "develop", content: "Still here?" });
    expect([refused.status, refused.body.code]).toEqual([403, "not_eligible"]);
  });
});
