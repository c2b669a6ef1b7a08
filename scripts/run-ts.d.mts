// Types of run-ts.mjs, for the tests that import it.
export function transpile(source: string, name: string): Promise<string>;
