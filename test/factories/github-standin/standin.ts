import { verifyJwt } from "./app-keys";
import type { Match } from "./checker";
import type { ContractOperation, ImplementedOperation } from "./contract";
import { GitStore } from "./git";
import { HANDLERS, type RepoState } from "./handlers";
import { checker, contractSource, githubError, type Answer } from "./shapes";

/**
 * An in-memory GitHub for the workers tests, injected where the Worker's Octokit sends requests
 * (`fetch` option of the forge): organisations with their repositories, git objects, refs and pull
 * requests, and a GitHub App installation that mints tokens for one organisation.
 *
 * Every request is first judged against GitHub's own OpenAPI description (see ./contract.ts): a
 * path, method, parameter or body the description does not allow is recorded in `violations` and
 * answered the way GitHub answers a bad request (404 / 422); `assertClean()` (call it in
 * `afterEach`) fails the test. Answers start from GitHub's documented example for the operation,
 * carry the stand-in's state, and are checked against the documented response schema (problems go
 * to `responseProblems`, which `assertClean()` reports too).
 *
 * Credentials: the App's JWT is verified (RS256 with the App's public key, `iss`, `iat`/`exp` within
 * GitHub's 10-minute limit) and every other call needs a live installation token for the owner.
 */

export interface RecordedRequest {
  method: string;
  url: string;
  pathname: string;
  /** The operation of the description (`POST /repos/{owner}/{repo}/git/blobs`), or null. */
  operation: string | null;
  query: Record<string, string>;
  body: unknown;
  /** The scheme used, never the credential. */
  auth: "jwt" | "token" | "none";
}

export interface InterceptContext {
  standin: GithubStandin;
  request: Request;
  params: Record<string, string>;
  body: unknown;
}

/**
 * Runs before the handler: a returned Response is sent instead of the handler's answer; returned
 * `headers` are added to the handler's answer (a deprecation notice, say).
 */
export type InterceptResult = Response | { headers: Record<string, string> } | void;
export type Interceptor = (ctx: InterceptContext) => Promise<InterceptResult> | InterceptResult;

export interface StandinOptions {
  /** The organisation the App is installed on. */
  org: string;
  appId: string;
  installationId: number;
  /** The App's public key: JWTs it does not verify are refused. */
  publicKey: CryptoKey;
  /** Other organisations that exist on this GitHub (the forge must never reach them). */
  otherOrgs?: string[];
}

function randomToken(): string {
  const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  return `ghs_${Array.from(crypto.getRandomValues(new Uint8Array(36)), (b) => alphabet[b % alphabet.length]).join("")}`;
}

export class GithubStandin {
  readonly requests: RecordedRequest[] = [];
  readonly violations: string[] = [];
  readonly responseProblems: string[] = [];
  readonly repos = new Map<string, RepoState>();
  readonly orgs: string[];
  readonly tokens = new Map<string, { expiresAt: number; org: string }>();
  readonly #interceptors = new Map<string, Array<{ fn: Interceptor; remaining: number }>>();
  #nextId = 1000;

  constructor(readonly options: StandinOptions) {
    this.orgs = [options.org, ...(options.otherOrgs ?? [])];
  }

  /** The fetch to inject (`createGithubForge({ fetch: standin.fetch })`). */
  readonly fetch: typeof fetch = async (input, init) => {
    const request = new Request(input, init);
    const answer = this.#handle(request);
    // Like a real fetch: an aborted signal (a client timeout) rejects the call.
    const signal = init?.signal ?? request.signal;
    if (!signal) return answer;
    signal.throwIfAborted();
    return Promise.race([
      answer,
      new Promise<never>((_, reject) => signal.addEventListener("abort", () => reject(signal.reason), { once: true })),
    ]);
  };

  nextId(): number {
    return this.#nextId++;
  }

  /** Runs `fn` before the next `times` requests of an operation (every one when times is omitted). */
  intercept(operation: ImplementedOperation, fn: Interceptor, times = Number.POSITIVE_INFINITY): void {
    const list = this.#interceptors.get(operation) ?? [];
    list.push({ fn, remaining: times });
    this.#interceptors.set(operation, list);
  }

  /**
   * Holds the next `parties` requests of an operation until all of them have arrived, so the
   * requests are certain to race (each was built on what it read before any of them landed).
   */
  barrier(operation: ImplementedOperation, parties = 2): void {
    let arrived = 0;
    let release!: () => void;
    const everyone = new Promise<void>((resolve) => (release = resolve));
    this.intercept(
      operation,
      async () => {
        if (++arrived === parties) release();
        await everyone;
      },
      parties,
    );
  }

  repo(fullName: string): RepoState | undefined {
    return this.repos.get(fullName.toLowerCase());
  }

  /** Fails with every request the description did not allow and every off-contract answer. */
  assertClean(): void {
    const all = [...this.violations.map((v) => `request: ${v}`), ...this.responseProblems.map((p) => `stand-in answer: ${p}`)];
    if (all.length) throw new Error(`GitHub stand-in (${contractSource}):\n${all.join("\n")}`);
  }

  /** Requests of one operation, in order. */
  sent(operation: string): RecordedRequest[] {
    return this.requests.filter((r) => r.operation === operation);
  }

  /** A commit by someone else on a branch (what "the branch moved" looks like from the forge). */
  async pushCommit(fullName: string, branch: string, files: Record<string, string>, message = "concurrent change"): Promise<string> {
    const repo = this.repo(fullName);
    if (!repo) throw new Error(`no repository ${fullName}`);
    const head = repo.refs.get(`refs/heads/${branch}`);
    if (!head) throw new Error(`no branch ${branch} in ${fullName}`);
    const flat = repo.git.flatten(repo.git.get(head, "commit")!.tree);
    for (const [path, text] of Object.entries(files))
      flat.set(path, { mode: "100644", type: "blob", sha: await repo.git.putBlob(new TextEncoder().encode(text)) });
    const now = new Date().toISOString();
    const who = { name: "Someone Else", email: "someone@example.com", date: now };
    const sha = await repo.git.putCommit({ tree: await repo.git.buildTree(flat), parents: [head], message, author: who, committer: who });
    repo.refs.set(`refs/heads/${branch}`, sha);
    return sha;
  }

  /** A repository with an initial commit (as `auto_init` makes it), registered under its owner. */
  async createRepository(owner: string, name: string, opts: { description?: string | null; private?: boolean } = {}): Promise<RepoState> {
    const repo = await this.buildRepository(owner, name, opts);
    this.repos.set(`${owner}/${name}`.toLowerCase(), repo);
    return repo;
  }

  /** A repository with an initial commit, not yet registered (the caller checks and sets). */
  async buildRepository(owner: string, name: string, opts: { description?: string | null; private?: boolean } = {}): Promise<RepoState> {
    const git = new GitStore();
    const now = new Date().toISOString().replace(/\.\d{3}Z$/, "Z");
    const readme = await git.putBlob(new TextEncoder().encode(`# ${name}\n${opts.description ? `\n${opts.description}\n` : ""}`));
    const tree = await git.putTree([{ name: "README.md", mode: "100644", type: "blob", sha: readme }]);
    const who = { name: "GitHub", email: "noreply@github.com", date: now };
    const initial = await git.putCommit({ tree, parents: [], message: "Initial commit", author: who, committer: who });
    return {
      id: this.nextId(),
      owner,
      name,
      description: opts.description ?? null,
      private: opts.private ?? false,
      defaultBranch: "main",
      createdAt: now,
      git,
      refs: new Map([["refs/heads/main", initial]]),
      pulls: [],
    };
  }

  async #handle(request: Request): Promise<Response> {
    const url = new URL(request.url);
    const bodyText = request.body ? await request.text() : "";
    let body: unknown = bodyText;
    try {
      body = bodyText ? JSON.parse(bodyText) : undefined;
    } catch {
      // kept as text; the contract check reports it
    }
    const authorization = request.headers.get("authorization") ?? "";
    const scheme = /^bearer\s+eyJ/i.test(authorization) ? "jwt" : /^(token|bearer)\s+\S/i.test(authorization) ? "token" : "none";
    const recorded: RecordedRequest = {
      method: request.method,
      url: request.url,
      pathname: url.pathname,
      operation: null,
      query: Object.fromEntries(url.searchParams),
      body,
      auth: scheme,
    };
    this.requests.push(recorded);

    if (url.origin !== "https://api.github.com") {
      this.violations.push(`${request.method} ${request.url}: not api.github.com`);
      return this.#send(null, githubError(404, "Not Found"));
    }
    // GitHub's REST rule outside the description: "All API requests must include a valid User-Agent header."
    if (!request.headers.get("user-agent")) {
      this.violations.push(`${request.method} ${url.pathname}: no User-Agent header`);
      return this.#send(
        null,
        githubError(403, "Request forbidden by administrative rules. Please make sure your request has a User-Agent header."),
      );
    }
    const matched = checker.match(request.method, url.pathname);
    if ("problem" in matched) {
      this.violations.push(`${request.method} ${url.pathname}: ${matched.problem}`);
      return this.#send(null, githubError(404, "Not Found"));
    }
    const { match } = matched;
    recorded.operation = match.op.key;
    const problems = checker.checkRequest(match, url.searchParams, request.headers.get("content-type"), bodyText);
    if (problems.length) {
      this.violations.push(...problems);
      return this.#send(
        null,
        githubError(
          422,
          "Invalid request.",
          problems.map((message) => ({ resource: "Request", code: "invalid", message })),
        ),
      );
    }

    const denied = await this.#authenticate(match, authorization);
    if (denied) return this.#send(match.op, denied);

    const extraHeaders: Record<string, string> = {};
    for (const entry of this.#interceptors.get(match.op.key) ?? []) {
      if (entry.remaining <= 0) continue;
      entry.remaining--;
      const result = await entry.fn({ standin: this, request, params: match.params, body });
      if (result instanceof Response) return result;
      if (result) Object.assign(extraHeaders, result.headers);
    }

    const handler = HANDLERS[match.op.key as ImplementedOperation];
    if (!handler) {
      this.violations.push(`${match.op.key}: allowed by the description, but the stand-in does not implement it`);
      return this.#send(null, githubError(501, "Not implemented by the stand-in"));
    }
    return this.#send(
      match.op,
      await handler({
        standin: this,
        params: match.params,
        query: url.searchParams,
        body: body as never,
        authOrg: this.#tokenOrg(authorization),
      }),
      extraHeaders,
    );
  }

  async #authenticate(match: Match, authorization: string): Promise<Answer | null> {
    const credential = authorization.replace(/^\S+\s+/, "");
    if (match.op.key === "POST /app/installations/{installation_id}/access_tokens") {
      const claims = /^bearer\s/i.test(authorization) ? await verifyJwt(credential, this.options.publicKey) : null;
      const now = Math.floor(Date.now() / 1000);
      const valid =
        claims !== null &&
        String(claims.iss) === this.options.appId &&
        typeof claims.iat === "number" &&
        typeof claims.exp === "number" &&
        claims.iat <= now + 60 &&
        claims.exp > now &&
        claims.exp - claims.iat <= 660;
      if (!valid) return githubError(401, "A JSON web token could not be decoded");
      if (Number(match.params.installation_id) !== this.options.installationId) return githubError(404, "Not Found");
      return null;
    }
    if (!this.#tokenOrg(authorization)) return githubError(401, "Bad credentials");
    return null;
  }

  /** The organisation a live installation token in the header belongs to. */
  #tokenOrg(authorization: string): string | null {
    const match = /^(?:token|bearer)\s+(\S+)$/i.exec(authorization);
    const token = match && this.tokens.get(match[1]!);
    return token && token.expiresAt > Date.now() ? token.org : null;
  }

  /** Mints an installation token for the App's organisation. */
  mintToken(): { token: string; expiresAt: string } {
    const token = randomToken();
    const expiresAt = Date.now() + 3_600_000;
    this.tokens.set(token, { expiresAt, org: this.options.org });
    return { token, expiresAt: new Date(expiresAt).toISOString().replace(/\.\d{3}Z$/, "Z") };
  }

  #send(op: ContractOperation | null, answer: Answer, extraHeaders: Record<string, string> = {}): Response {
    if (op) this.responseProblems.push(...checker.checkResponse(op, answer.status, answer.body));
    return new Response(answer.body === undefined ? null : JSON.stringify(answer.body), {
      status: answer.status,
      headers: { "content-type": "application/json; charset=utf-8", "x-github-request-id": crypto.randomUUID(), ...extraHeaders },
    });
  }
}
