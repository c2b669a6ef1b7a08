// Types of readme-library-example.mjs, for the tests that import it.
export function readmeBlock(readme: string, name: string): string;
export function runLibraryExample(code: string, env: Record<string, string>): Promise<{ status: number | null; stdout: string; stderr: string }>;
