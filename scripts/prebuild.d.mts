export declare const TARGETS: Record<"x64" | "arm64", { processor: string; compiler: string; strip: string; qemu: string | undefined }>;
export declare function buildDir(arch: string): string;
export declare function sourcesHash(): string;
export declare function loadCheck(rootPath: string, arch: string, file: string): { loaded: boolean; skipped?: string; error?: string };
