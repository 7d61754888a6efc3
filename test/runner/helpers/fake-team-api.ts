/**
 * A stand-in for the Worker's Team-as-Agent endpoints the crewplane MCP server calls (API.md
 * "Team-as-Agent"; the memory/wiki reads of issue 11 item 6), on 127.0.0.1 with an ephemeral port.
 * Member tokens are pinned to (employee, task, round, role) like the real ones will be; slots follow
 * the seed: a new packet_id takes the next slot of its leg, the same packet_id keeps its slot.
 */
import { randomUUID } from "node:crypto";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";

export interface MemberPin {
  employeeId: string;
  taskId: string;
  round: number;
  role: string;
}

export interface TeamRequest {
  method: string;
  path: string;
  authorization: string | undefined;
  body: any;
}

export interface StoredPacket {
  leg: string;
  slot: string;
  packet_id: string;
  packet: Record<string, unknown>;
  pin: MemberPin;
}

export interface FakeTeamApi {
  url: string;
  requests: TeamRequest[];
  packets: StoredPacket[];
  /** Mints a token pinned to this member. */
  mint(pin: MemberPin): string;
  /** The round ended: the Worker revokes its members' tokens, so they get 401 from now on. */
  revoke(token: string): void;
  /** The stage ended while the round goes on (`GET /v1/team/member` then says `live: false`). */
  endStage(token: string): void;
  memory: Record<string, Array<{ id: string; text: string }>>;
  wiki: Record<string, Record<string, { title: string; body: string }>>;
  close(): Promise<void>;
}

export async function startFakeTeamApi(): Promise<FakeTeamApi> {
  const requests: TeamRequest[] = [];
  const packets: StoredPacket[] = [];
  const tokens = new Map<string, MemberPin>();
  const endedStages = new Set<string>();
  const memory: FakeTeamApi["memory"] = {};
  const wiki: FakeTeamApi["wiki"] = {};

  const server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const text = Buffer.concat(chunks).toString("utf8");
    let body: unknown;
    try {
      body = text ? JSON.parse(text) : undefined;
    } catch {
      body = text;
    }
    const url = new URL(req.url ?? "/", "http://x");
    const recorded: TeamRequest = {
      method: req.method ?? "",
      path: url.pathname + url.search,
      authorization: req.headers.authorization,
      body,
    };
    requests.push(recorded);
    const send = (status: number, payload: unknown): void => {
      res.writeHead(status, { "content-type": status >= 400 ? "application/problem+json" : "application/json" });
      res.end(JSON.stringify(payload));
    };
    const problem = (status: number, code: string, detail: string, errors?: unknown[]): void =>
      send(status, { type: "about:blank", title: code, status, detail, code, ...(errors ? { errors } : {}) });

    const token = /^Bearer (.+)$/.exec(recorded.authorization ?? "")?.[1];
    const pin = token ? tokens.get(token) : undefined;
    if (!pin) return problem(401, "unauthorized", "invalid member token");

    if (req.method === "GET" && url.pathname === "/v1/team/member") {
      const ended = endedStages.has(token!);
      return send(200, {
        task_id: pin.taskId,
        round: pin.round,
        role: pin.role,
        round_phase: "executing",
        stage_status: ended ? "completed" : "dispatched",
        live: !ended,
      });
    }
    if (req.method === "POST" && url.pathname === "/v1/team/handoff") {
      const packet = (body as { packet?: unknown })?.packet;
      if (!packet || typeof packet !== "object" || Array.isArray(packet)) {
        return problem(422, "validation_failed", "packet must be an object", [{ path: ["packet"], message: "expected object" }]);
      }
      const p = packet as Record<string, unknown>;
      if (typeof p.packet_id !== "string")
        return problem(422, "validation_failed", "invalid packet", [{ path: ["packet", "packet_id"], message: "required" }]);
      const toRole = typeof p.to_role === "string" ? p.to_role : pin.role === "planner" ? "executor" : "verifier";
      const leg = `${pin.role}-to-${toRole}`;
      const sameLeg = packets.filter((s) => s.pin.taskId === pin.taskId && s.pin.round === pin.round && s.leg === leg);
      const existing = sameLeg.find((s) => s.packet_id === p.packet_id);
      const slot = existing?.slot ?? (sameLeg.length === 0 ? "" : `.${String(sameLeg.length).padStart(2, "0")}`);
      if (existing) existing.packet = p;
      else packets.push({ leg, slot, packet_id: p.packet_id, packet: p, pin });
      return send(201, { leg, slot, packet_id: p.packet_id });
    }
    const employee = /^\/v1\/employees\/([^/]+)\/(memory|wiki)(?:\/([^/]+))?$/.exec(url.pathname);
    if (req.method === "GET" && employee) {
      const id = decodeURIComponent(employee[1]!);
      if (id !== pin.employeeId) return problem(403, "forbidden", "a member token reads only its own employee");
      const q = (url.searchParams.get("q") ?? "").toLowerCase();
      if (employee[2] === "memory") {
        return send(200, { entries: (memory[id] ?? []).filter((e) => e.text.toLowerCase().includes(q)) });
      }
      const pages = wiki[id] ?? {};
      if (employee[3] !== undefined) {
        const slug = decodeURIComponent(employee[3]);
        const page = pages[slug];
        return page ? send(200, { slug, ...page }) : problem(404, "not_found", `no wiki page ${slug}`);
      }
      const hits = Object.entries(pages)
        .filter(([, page]) => `${page.title} ${page.body}`.toLowerCase().includes(q))
        .map(([slug, page]) => ({ slug, title: page.title, snippet: page.body.slice(0, 80) }));
      return send(200, { pages: hits });
    }
    return problem(404, "not_found", "no such endpoint");
  });

  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    packets,
    memory,
    wiki,
    mint(pin) {
      const token = `member_${randomUUID().replace(/-/g, "")}.${randomUUID().replace(/-/g, "")}`;
      tokens.set(token, pin);
      return token;
    },
    revoke(token) {
      tokens.delete(token);
    },
    endStage(token) {
      endedStages.add(token);
    },
    close() {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}
