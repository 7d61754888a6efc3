/**
 * Task class (seed 000 step 1, the same rule as D4's RoundRobin): the first tag, else the priority.
 * Tags and priorities share one namespace, so a tag spelled like a priority joins that class.
 */
export function taskClassOf(tags: readonly string[], priority: string): string {
  return tags[0] ?? priority;
}
