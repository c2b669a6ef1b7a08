export declare function onPath(name: string, path?: string): string | undefined;
export declare function localNodeDir(): string | undefined;
export declare function buildNative(options?: { root?: string; out?: string; target?: string; staticRuntime?: boolean; cmakeOnly?: boolean; quiet?: boolean }): {
  ok: boolean;
  addonPath: string;
  attempts: { tool: string; ok: boolean; reason?: string }[];
};
