/**
 * The tools an employee without an `allowed_tools` list gets (seed 002: Read, Write, Edit, Bash,
 * Glob, Grep, TodoWrite, WebFetch, WebSearch and the platform's own MCP tools), in claude's spelling.
 * Defined once for both sides of the HTTP boundary: the Worker puts it on the jobs it dispatches,
 * the local-runner (which imports this file directly; it imports nothing, so both compilers and
 * Node's type stripping take it as it is) falls back to it for a job that carries none.
 */
export const DEFAULT_ALLOWED_TOOLS: string[] = [
  "Read",
  "Write",
  "Edit",
  "Bash",
  "Glob",
  "Grep",
  "TodoWrite",
  "WebFetch",
  "WebSearch",
  "mcp__crewplane__*",
];
