// Where the project's files are, whether running from source (tsx) or built (server/.built/, server/dist/), from any
// working directory.
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const root = join(dirname(fileURLToPath(import.meta.url)), '../..');
// A checkout (its TypeScript beside whatever runs, the source or its start copy), or the published package.
export const inCheckout = existsSync(join(root, 'server/cli.ts'));
export const specPath = join(root, 'generated/openapi.json');
export const changelogPath = join(root, 'CHANGELOG.md');
export const PROVIDERS = ['sqlite', 'postgresql'] as const;
export type Provider = (typeof PROVIDERS)[number];
