#!/usr/bin/env node
// The `inference-platform` bin. In a checkout it runs the CLI from the checkout's start copy (launch.js: built from
// the TypeScript when missing or older than it), so no build step is asked of anyone; the published package carries
// no TypeScript but the same code built into server/dist/ (npm pack builds it), and runs that.
import { existsSync } from 'node:fs';

if (existsSync(new URL('./cli.ts', import.meta.url))) {
  const { launch } = await import('./launch.js');
  await launch('cli');
} else {
  await import('./dist/cli.js');
}
