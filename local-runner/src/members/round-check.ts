/**
 * "Is this member's round still going?", answered by the Worker for the member's own token
 * (`GET /v1/team/member`). A round that ended in any way revokes its members' tokens, so a 401 is
 * a definite "over"; so is a token past its recorded expiry. Anything else we cannot read (the
 * Worker unreachable, an older Worker without the endpoint) is "unknown": a running member is then
 * left alone and a scaffold kept until its token's expiry decides.
 */
export type RoundCheck = { state: "live" } | { state: "over"; reason: string } | { state: "unknown"; reason: string };

export interface RoundCheckOptions {
  apiUrl: string;
  token: string;
  /** The token's expiry as the Worker stated it (ISO); past it the round is over. */
  expiresAt?: string | undefined;
  now?: number;
  fetch?: typeof fetch;
  timeoutMs?: number;
  signal?: AbortSignal;
}

export async function checkMemberRound(options: RoundCheckOptions): Promise<RoundCheck> {
  const now = options.now ?? Date.now();
  if (options.expiresAt) {
    const expires = Date.parse(options.expiresAt);
    if (!Number.isNaN(expires) && expires <= now) return { state: "over", reason: `the member token expired at ${options.expiresAt}` };
  }
  const doFetch = options.fetch ?? fetch;
  const timeout = AbortSignal.timeout(options.timeoutMs ?? 10_000);
  let response: Response;
  let text: string;
  try {
    response = await doFetch(new URL("/v1/team/member", options.apiUrl), {
      headers: { authorization: `Bearer ${options.token}`, accept: "application/json, application/problem+json" },
      signal: options.signal ? AbortSignal.any([options.signal, timeout]) : timeout,
    });
    text = await response.text();
  } catch (err) {
    return { state: "unknown", reason: `crewplane could not be asked: ${err instanceof Error ? err.message : String(err)}` };
  }
  if (response.status === 401) return { state: "over", reason: "the Worker no longer accepts the member token (its round ended)" };
  if (!response.ok) return { state: "unknown", reason: `GET /v1/team/member answered ${response.status}` };
  let body: { live?: unknown; round_phase?: unknown; stage_status?: unknown };
  try {
    body = JSON.parse(text) as typeof body;
  } catch {
    return { state: "unknown", reason: "GET /v1/team/member did not answer JSON" };
  }
  if (body.live === true) return { state: "live" };
  if (body.live === false) {
    return {
      state: "over",
      reason: `the round is ${String(body.round_phase ?? "over")} and the stage ${String(body.stage_status ?? "ended")}`,
    };
  }
  return { state: "unknown", reason: "GET /v1/team/member did not say whether the round is live" };
}
