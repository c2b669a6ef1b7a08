import type { SpawnSyncOptions, SpawnSyncReturns } from "node:child_process";
export declare const BUILD_ROOT: { name: string; suite: string; arch: string; mirror: string; packages: string[] };
export declare function rootsDir(): string;
export declare function rootUnavailable(): string | undefined;
export declare function ensureRoot(spec?: typeof BUILD_ROOT, log?: (line: string) => void): { ok: true; path: string } | { ok: false; reason: string };
export declare function withRootMounts(root: string, binds: string[], command: string, args: string[], options?: SpawnSyncOptions): SpawnSyncReturns<string>;
export declare function inRoot(root: string, cwd: string, env: Record<string, string>, argv: string[]): string[];
