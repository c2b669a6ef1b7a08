export declare const GLIBC_FLOOR: string;
export declare function compareVersions(a: string, b: string): number;
export declare function symbolRequirements(file: string): { ok: true; glibc: string[]; glibcMax: string | undefined; cxx: string[] } | { ok: false; reason: string };
export declare function floorViolations(file: string, floor?: string): string[];
