// Where the project's files are, whether running from source (tsx) or from any working directory.
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const root = join(dirname(fileURLToPath(import.meta.url)), '../..');
export const specPath = join(root, 'generated/openapi.json');
export const changelogPath = join(root, 'CHANGELOG.md');
export const PROVIDERS = ['sqlite', 'postgresql'] as const;
export type Provider = (typeof PROVIDERS)[number];
