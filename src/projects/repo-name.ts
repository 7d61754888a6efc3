import * as z from "zod";

/** A bare GitHub repository name: `[A-Za-z0-9._-]`, 1-100 characters, not `.`/`..`, not ending in `.git`. */
export const repoNameField = z
  .string()
  .regex(/^[A-Za-z0-9._-]{1,100}$/, "must be 1-100 letters, digits, '.', '_' or '-'")
  .refine((n) => n !== "." && n !== ".." && !/\.git$/i.test(n), "must not be '.', '..' or end in .git");

/** A repository name from a project name: lower case, `[a-z0-9._-]`, at most 100 characters ("" if nothing is left). */
export function slugRepoName(name: string): string {
  const slug = name
    .normalize("NFKD")
    .toLowerCase()
    .replace(/[^a-z0-9._-]+/g, "-")
    .replace(/-{2,}/g, "-")
    .replace(/^[-.]+|[-.]+$/g, "")
    .slice(0, 100)
    .replace(/[-.]+$/g, "");
  return repoNameField.safeParse(slug).success ? slug : "";
}
