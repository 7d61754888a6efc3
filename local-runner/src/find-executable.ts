import { accessSync, constants, statSync } from "node:fs";
import { delimiter, isAbsolute, join } from "node:path";

/** Like `command -v name`: the first executable regular file called `name` on PATH. */
export function findExecutable(name: string, pathValue: string | undefined = process.env.PATH): string | undefined {
  for (const dir of (pathValue ?? "").split(delimiter)) {
    // An empty PATH entry means the current directory; a runner should not pick binaries from there.
    if (!dir || !isAbsolute(dir)) continue;
    const candidate = join(dir, name);
    try {
      if (!statSync(candidate).isFile()) continue;
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // Not there or not executable: keep looking.
    }
  }
  return undefined;
}
