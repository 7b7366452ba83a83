// The types of launch.js (plain JavaScript, so that `npm start` loads no compiler).
export function ensureBuilt(): Promise<void>;
export function launch(entry: 'main' | 'cli'): Promise<void>;
export function staleBecause(record?: URL | string): string | undefined;
