/**
 * What a `utility` job naming an isolated workspace (issue 22, the 2×2's fixed verifier) shows its
 * model and reports: each observe path's content, read the way an eval case's are (regular files
 * only, no link followed out of the workspace, 64 KiB each: eval/workspace.ts observeFiles), then
 * levelled to a budget so that the prompt and the result stay bounded whatever the arm left behind.
 * The model sees exactly the contents the result reports. Pure.
 */
import type { ObservedFiles } from "./workspace.ts";

/**
 * All observed contents together stay under this much JSON: 64 paths × 64 KiB would be 4 MiB, and
 * the result (text and files) must stay under the Worker's 512 KiB (src/jobs/limits.ts).
 */
export const WORKSPACE_FILES_BYTES = 256 * 1024;

/**
 * Contents levelled to `budget` bytes of JSON: every content longer than a common cap is cut to it
 * (and named in `truncated`), the cap the largest that fits, so short files stay whole and every
 * long one keeps its beginning (as eval/result.ts does for an eval case).
 */
export function levelObserved(observed: ObservedFiles, budget = WORKSPACE_FILES_BYTES): ObservedFiles {
  const size = (files: Record<string, string | null>) => Buffer.byteLength(JSON.stringify(files));
  if (size(observed.files) <= budget) return observed;
  const entries = Object.entries(observed.files);
  const capped = (cap: number): Record<string, string | null> =>
    Object.fromEntries(entries.map(([path, content]) => [path, content === null ? null : cut(content, cap)]));
  let lo = 0;
  let hi = Math.max(0, ...entries.map(([, c]) => c?.length ?? 0));
  while (hi - lo > 1) {
    const mid = Math.floor((lo + hi) / 2);
    if (size(capped(mid)) <= budget) lo = mid;
    else hi = mid;
  }
  const files = capped(lo);
  const cutNow = new Set(entries.filter(([path, content]) => content !== null && files[path] !== content).map(([path]) => path));
  const truncated = entries.map(([path]) => path).filter((path) => cutNow.has(path) || observed.truncated.includes(path));
  return { files, truncated, unreadable: observed.unreadable };
}

/**
 * The block appended to the payload's prompt: one `--- <path>` section per observe path in the
 * given order (its content; `(absent)`; or why it was not read), then the `<artifact_receipts>`
 * block a verifier judges (`<path> exists` / `<path> missing`; a path not read as a regular file is
 * missing). A cut content says so on its `---` line.
 */
export function workspaceBlock(paths: readonly string[], observed: ObservedFiles): string {
  const sections: string[] = [];
  const receipts: string[] = [];
  for (const path of paths) {
    const content = observed.files[path] ?? null;
    if (content !== null) {
      const note = observed.truncated.includes(path) ? " (truncated: only the beginning of the file is shown)" : "";
      sections.push(`--- ${path}${note}\n${content}${content.endsWith("\n") || content === "" ? "" : "\n"}`);
    } else if (observed.unreadable.includes(path)) {
      sections.push(`--- ${path}\n(not read: not a regular file, or a link out of the workspace)\n`);
    } else {
      sections.push(`--- ${path}\n(absent)\n`);
    }
    receipts.push(`${path} ${content !== null ? "exists" : "missing"}`);
  }
  // An empty receipts block would not read as one; a `(…)` line is a comment to a reader.
  if (receipts.length === 0) receipts.push("(no observe paths)");
  return `\n\n## Files in the workspace\n${sections.join("")}\n<artifact_receipts>\n${receipts.join("\n")}\n</artifact_receipts>\n`;
}

/** At most `limit` characters, never half a surrogate pair. */
function cut(text: string, limit: number): string {
  if (text.length <= limit) return text;
  let end = limit;
  const last = text.charCodeAt(end - 1);
  if (end > 0 && last >= 0xd800 && last <= 0xdbff) end -= 1;
  return text.slice(0, end);
}
