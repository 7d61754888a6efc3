/** The canonical JSON the crewplane Worker hashes: keys sorted at every level, no whitespace. */
export function canonicalJson(value: unknown): string;
