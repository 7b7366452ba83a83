#!/usr/bin/env node
// The `inference-platform` bin. In a checkout it runs the TypeScript CLI through tsx, so no build step is needed;
// the published package carries no TypeScript but the same code built into server/dist/ (npm pack builds it), and
// runs that.
import { existsSync } from 'node:fs';

if (existsSync(new URL('./cli.ts', import.meta.url))) {
  const { register } = await import('tsx/esm/api');
  register();
  await import('./cli.ts');
} else {
  await import('./dist/cli.js');
}
