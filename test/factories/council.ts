import { advance } from "../../src/council/machine";
import type { Advanced, DialogBody, MachineConfig, MachineContext, MachineInput, Refusal } from "../../src/council/machine-types";
import { seededRandom } from "../../src/council/random";
import { COUNCIL_RULES, MINUTE } from "../../src/council/rules";
import type { Candidate } from "../../src/council/selection";
import type { DialogRecord, SessionState, VoteRecord } from "../../src/council/session";

export const T0 = Date.parse("2026-12-01T12:00:00.000Z");
export const nodeId = (i: number) => `node_${i.toString(16).padStart(16, "0")}`;

export const MACHINE_CONFIG: MachineConfig = {
  progress_debounce_ms: 10_000,
  synthesis: "model",
  synthesis_runtime: "claude",
  synthesis_timeout_ms: 15 * MINUTE,
  ethics_model: "off",
  ethics_runtime: "claude",
  ethics_timeout_ms: 15 * MINUTE,
  ethics_denied_terms: ["ransomware"],
  veto_ratify_hours: 72,
};

/** A session as openSession would create it: proposer node 0, members nodes 1..n, member 1 the devil's advocate. */
export function sessionState(over: Partial<SessionState> & { memberCount?: number } = {}): SessionState {
  const { memberCount = 5, ...rest } = over;
  const at = new Date(T0).toISOString();
  return {
    session_id: "delib_0000000000000001",
    proposal_id: "prop_0000000000000001",
    term_id: "term_0000000000000001",
    proposer_id: nodeId(0),
    kind: "general",
    proposal: { title: "Publish council records weekly", body: "Every week the council publishes a digest of all sessions." },
    phase: "seconding",
    phase_started_at: at,
    created_at: at,
    members: Array.from({ length: memberCount }, (_, i) => ({
      node_id: nodeId(i + 1),
      role: i === 0 ? ("devils_advocate" as const) : ("member" as const),
      source: "term" as const,
      joined_at: at,
    })),
    replacement_rounds: 0,
    amendments: [],
    deadlines: { seconding: new Date(T0 + 30 * MINUTE).toISOString(), no_response: new Date(T0 + 60 * MINUTE).toISOString() },
    dialog_count: 0,
    dialogs_by_node: {},
    ...rest,
  };
}

/** Drives the pure machine the way the CouncilSession object does, keeping the trail it would store. */
export class Driver {
  state: SessionState;
  dialogs: DialogRecord[] = [];
  votes: VoteRecord[] = [];
  effects: Advanced["effects"] = [];
  nowMs: number;
  config: MachineConfig;
  private ids = 0;

  constructor(state: SessionState, opts: { nowMs?: number; config?: Partial<MachineConfig> } = {}) {
    this.state = state;
    this.nowMs = opts.nowMs ?? T0;
    this.config = { ...MACHINE_CONFIG, ...opts.config };
  }

  ctx(): MachineContext {
    return {
      now: new Date(this.nowMs),
      rules: COUNCIL_RULES,
      config: this.config,
      random: seededRandom(42),
      newId: (p) => `${p}_${(++this.ids).toString(16).padStart(16, "0")}`,
    };
  }

  at(minutes: number) {
    this.nowMs = T0 + minutes * MINUTE;
    return this;
  }

  apply(input: MachineInput): Advanced | Refusal {
    const out = advance(this.state, input, this.ctx());
    if (out.ok) {
      this.state = out.state;
      this.effects = out.effects;
      for (const e of out.effects) {
        if (e.kind === "record_dialog") this.dialogs.push(e.dialog);
        if (e.kind === "record_vote") this.votes.push(e.vote);
      }
    }
    return out;
  }

  post(node: number, body: DialogBody, opts: { voter?: { kind: "member" | "community"; weight: number } | null } = {}) {
    const id = nodeId(node);
    const inElectorate = this.state.electorate?.members.find((m) => m.node_id === id);
    const voter = opts.voter !== undefined ? opts.voter : inElectorate ? { kind: "member" as const, weight: inElectorate.weight } : null;
    return this.apply({
      kind: "dialog",
      node_id: id,
      body,
      voter,
      already_voted: this.votes.some((v) => v.node_id === id),
      reply_to_exists: body.reply_to === undefined || this.dialogs.some((d) => d.id === body.reply_to),
    });
  }

  check(pool?: Candidate[]) {
    return this.apply({ kind: "check", pool, votes: this.votes, dialogs: this.dialogs });
  }

  vote(node: number, vote: "approve" | "reject" | "revise", confidence = 0.8, extra: Partial<DialogBody> = {}) {
    return this.post(node, { dialog_type: "vote", vote, confidence, proposal_hash: this.state.proposal_hash, ...extra });
  }

  jobEnded(status: "completed" | "failed" | "dead", result?: Record<string, unknown>, jobId?: string) {
    const pending = this.state.synthesis?.status === "pending" ? this.state.synthesis.job_id : this.state.ethics?.model.job_id;
    const job_id = jobId ?? pending ?? "job_none";
    return this.apply({ kind: "job_ended", job_id, status, result, votes: this.votes, dialogs: this.dialogs });
  }

  effectsOf<K extends Advanced["effects"][number]["kind"]>(kind: K) {
    return this.effects.filter((e): e is Extract<Advanced["effects"][number], { kind: K }> => e.kind === kind);
  }
}

export function candidate(i: number, over: Partial<Candidate> = {}): Candidate {
  return {
    node_id: nodeId(i),
    reputation: 50,
    model_tier: 3,
    last_heartbeat_at: new Date(T0).toISOString(),
    last_dialog_at: null,
    cooldown_until: null,
    ...over,
  };
}
