import { mkdir } from "node:fs/promises";
import { join } from "node:path";

/**
 * `<home>/work/<job_id>/`. Job ids are opaque strings from the server, so anything that could
 * climb out of `<home>` (slashes, `..`) is replaced: the runner writes nothing outside its home.
 */
export function workDirFor(home: string, jobId: string): string {
  let safe = jobId.replace(/[^A-Za-z0-9._-]/g, "_");
  if (/^\.+$/.test(safe)) safe = safe.replace(/\./g, "_");
  return join(home, "work", safe);
}

export async function createWorkDir(home: string, jobId: string): Promise<string> {
  const dir = workDirFor(home, jobId);
  await mkdir(dir, { recursive: true });
  return dir;
}
