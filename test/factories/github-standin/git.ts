/**
 * Git's object model for the GitHub stand-in, with git's real object ids (SHA-1 over
 * `<type> <size>\0<payload>`), so equal content has equal shas the way GitHub's do, and the
 * fast-forward check of a ref update is a real ancestry walk.
 */

export interface Person {
  name: string;
  email: string;
  date: string;
}

export interface TreeEntry {
  name: string;
  /** As GitHub's API writes it: `100644`, `100755`, `040000`, `160000`, `120000`. */
  mode: string;
  type: "blob" | "tree" | "commit";
  sha: string;
}

export type GitObject =
  | { type: "blob"; sha: string; content: Uint8Array }
  | { type: "tree"; sha: string; entries: TreeEntry[] }
  | { type: "commit"; sha: string; tree: string; parents: string[]; message: string; author: Person; committer: Person };

const encoder = new TextEncoder();
const decoder = new TextDecoder();

const hex = (bytes: ArrayBuffer) => Array.from(new Uint8Array(bytes), (b) => b.toString(16).padStart(2, "0")).join("");
const unhex = (sha: string) => Uint8Array.from(sha.match(/../g)!, (h) => parseInt(h, 16));

function concat(parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let offset = 0;
  for (const part of parts) {
    out.set(part, offset);
    offset += part.length;
  }
  return out;
}

async function objectId(type: string, payload: Uint8Array): Promise<string> {
  const data = concat([encoder.encode(`${type} ${payload.length}\0`), payload]);
  return hex(await crypto.subtle.digest("SHA-1", data));
}

// Git orders tree entries by name, comparing a subtree as if its name ended in "/".
const sortKey = (e: TreeEntry) => (e.type === "tree" ? `${e.name}/` : e.name);

function signature(p: Person): string {
  return `${p.name} <${p.email}> ${Math.floor(Date.parse(p.date) / 1000)} +0000`;
}

export class GitStore {
  readonly objects = new Map<string, GitObject>();

  get<T extends GitObject["type"]>(sha: string, type: T): Extract<GitObject, { type: T }> | undefined {
    const obj = this.objects.get(sha);
    return obj?.type === type ? (obj as Extract<GitObject, { type: T }>) : undefined;
  }

  async putBlob(content: Uint8Array): Promise<string> {
    const sha = await objectId("blob", content);
    this.objects.set(sha, { type: "blob", sha, content });
    return sha;
  }

  async putTree(entries: TreeEntry[]): Promise<string> {
    const sorted = [...entries].sort((a, b) => (sortKey(a) < sortKey(b) ? -1 : sortKey(a) > sortKey(b) ? 1 : 0));
    const payload = concat(sorted.flatMap((e) => [encoder.encode(`${e.mode.replace(/^0+/, "")} ${e.name}\0`), unhex(e.sha)]));
    const sha = await objectId("tree", payload);
    this.objects.set(sha, { type: "tree", sha, entries: sorted });
    return sha;
  }

  async putCommit(c: { tree: string; parents: string[]; message: string; author: Person; committer: Person }): Promise<string> {
    const text = [
      `tree ${c.tree}`,
      ...c.parents.map((p) => `parent ${p}`),
      `author ${signature(c.author)}`,
      `committer ${signature(c.committer)}`,
      "",
      c.message,
    ].join("\n");
    const sha = await objectId("commit", encoder.encode(text));
    this.objects.set(sha, { type: "commit", sha, ...c });
    return sha;
  }

  /** Every blob/submodule under a tree, by full path. */
  flatten(treeSha: string, prefix = "", out = new Map<string, Omit<TreeEntry, "name">>()): Map<string, Omit<TreeEntry, "name">> {
    const tree = this.get(treeSha, "tree");
    if (!tree) throw new Error(`no tree ${treeSha}`);
    for (const e of tree.entries) {
      const path = prefix + e.name;
      if (e.type === "tree") this.flatten(e.sha, `${path}/`, out);
      else out.set(path, { mode: e.mode, type: e.type, sha: e.sha });
    }
    return out;
  }

  /** Nested trees for a flat path → entry map; returns the root tree's sha. */
  async buildTree(flat: Map<string, Omit<TreeEntry, "name">>): Promise<string> {
    const here: TreeEntry[] = [];
    const children = new Map<string, Map<string, Omit<TreeEntry, "name">>>();
    for (const [path, entry] of flat) {
      const slash = path.indexOf("/");
      if (slash < 0) here.push({ name: path, ...entry });
      else {
        const dir = path.slice(0, slash);
        if (!children.has(dir)) children.set(dir, new Map());
        children.get(dir)!.set(path.slice(slash + 1), entry);
      }
    }
    for (const [dir, sub] of children) here.push({ name: dir, mode: "040000", type: "tree", sha: await this.buildTree(sub) });
    return this.putTree(here);
  }

  /** Whether `ancestor` is `descendant` or reachable from it through parents. */
  isAncestor(ancestor: string, descendant: string): boolean {
    const seen = new Set<string>();
    const queue = [descendant];
    while (queue.length) {
      const sha = queue.pop()!;
      if (sha === ancestor) return true;
      if (seen.has(sha)) continue;
      seen.add(sha);
      queue.push(...(this.get(sha, "commit")?.parents ?? []));
    }
    return false;
  }

  /** A file's text at a commit, or undefined. */
  readFile(commitSha: string, path: string): string | undefined {
    const commit = this.get(commitSha, "commit");
    const entry = commit && this.flatten(commit.tree).get(path);
    const blob = entry && this.get(entry.sha, "blob");
    return blob ? decoder.decode(blob.content) : undefined;
  }

  /** First-parent history from a commit, newest first. */
  history(commitSha: string): Extract<GitObject, { type: "commit" }>[] {
    const out: Extract<GitObject, { type: "commit" }>[] = [];
    for (let c = this.get(commitSha, "commit"); c; c = c.parents[0] ? this.get(c.parents[0], "commit") : undefined) out.push(c);
    return out;
  }
}
