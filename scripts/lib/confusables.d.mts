export declare function asciiPrototypes(data: Record<string, string>): [number, string][];
export declare function encodeTable(entries: readonly (readonly [number, string])[]): string;
