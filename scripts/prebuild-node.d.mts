export declare function foreignNode(arch: string, version?: string): { ok: true; path: string } | { ok: false; reason: string };
