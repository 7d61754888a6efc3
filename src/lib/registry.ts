/**
 * A name → code table (config sections, ticks, …) written as an object literal, so a feature
 * registers itself by adding one line, but read as a Map: `get(name)` with a name from a URL or
 * from storage only ever finds the table's own entries, never `constructor`, `__proto__` or
 * `toString` from Object.prototype.
 */
export function registry<K extends string, V>(entries: { readonly [P in K]?: V }): ReadonlyMap<K, V> {
  return new Map(Object.entries(entries) as [K, V][]);
}
