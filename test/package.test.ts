// The platform as a dev dependency, proved from outside: `npm pack` of the project and of the client, both
// installed into an empty project with nothing else of this repository (npm and its registry only), where a small
// vitest suite (test/support/outside-app/) starts the platform through the testing entry as its global setup and
// calls it with together-ai and the typed client. Also: the bin starts it (`--json`), the testing entry starts it in
// the test runner's own process, and the package's types compile on their own.
//
// The install is what a user's is, with one stand-in: better-sqlite3's prebuilt binary, which its install script
// downloads from GitHub (unreachable here, where it would compile from source for minutes), comes from a local
// file made of this checkout's own build of the same version (prebuild-install's "local prebuilds"). `npm run
// trials` (TRIALS=package) installs without it, compiling from source. The project does not depend on the database,
// so it runs on the SQLite pass only.
import { execFile, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import ts from 'typescript';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { root } from '../server/core/paths.ts';
import { cleanEnv, installApp, localPrebuild, type Packed, packBoth, runAppSuite } from './support/package.ts';

const run = promisify(execFile);
const INSTALL_BUDGET_MS = 600_000;
const work = mkdtempSync(join(tmpdir(), 'platform-package-'));
const app = join(work, 'app');
let packed: Packed;
const timings: Record<string, number> = {};

// Once installed, the tests use the project side by side (each its own files and processes).
describe.skipIf(process.env.TEST_DATABASE_URL)('the packages, installed into an empty project', { concurrent: true }, () => {
  beforeAll(async () => {
    const t = performance.now();
    packed = await packBoth(work);
    timings.pack = performance.now() - t;
    timings.install = await installApp(app, packed, await localPrebuild(join(work, 'prebuilds')));
  }, INSTALL_BUDGET_MS);
  afterAll(() => {
    console.log(
      `package test: pack ${Math.round(timings.pack ?? 0)} ms, install ${Math.round(timings.install ?? 0)} ms, vitest ${Math.round(timings.vitest ?? 0)} ms`,
    );
    rmSync(work, { recursive: true, force: true });
  });

  test('the tarball carries the server built (no TypeScript but its types), its console, migrations, contract and the typed client', ({ expect }) => {
    const { files } = packed;
    expect(files).toEqual(expect.arrayContaining(['server/cli.js', 'server/dist/cli.js', 'server/dist/testing.js', 'server/dist/testing.d.ts']));
    // What the server starts beside its code: the worker threads' tasks and the Python sandbox's script.
    expect(files).toEqual(expect.arrayContaining(['server/dist/pool-worker.js', 'server/dist/python-sandbox.mjs']));
    expect(files).toEqual(expect.arrayContaining(['generated/openapi.json', 'server/console/index.html', 'CHANGELOG.md', 'README.md', 'package.json']));
    expect(files.some((f) => f.startsWith('prisma/migrations/sqlite/'))).toBe(true);
    expect(files.some((f) => f.startsWith('prisma/migrations/postgresql/'))).toBe(true);
    expect(files).toContain('node_modules/@inference-platform/client/dist/index.js');
    // (Its bundled dependencies' files are theirs, as published.)
    expect(files.filter((f) => /\.ts$/.test(f) && !/\.d\.ts$/.test(f) && !f.startsWith('node_modules/'))).toEqual([]);
    expect(files.filter((f) => f.startsWith('test/') || f.startsWith('spec/') || f.startsWith('generated/prisma'))).toEqual([]);
    // Outside the checkout, the bin runs the build (no tsx loader, no server/*.ts).
    expect(existsSync(join(app, 'node_modules/inference-platform/server/cli.ts'))).toBe(false);
  });

  test('its vitest suite passes: the platform started from a global setup, called with together-ai and the typed client', async ({ expect }) => {
    const t = performance.now();
    const { passed, failures, output } = await runAppSuite(app);
    timings.vitest = performance.now() - t;
    expect(failures, output).toEqual([]);
    expect(passed).toBe(7);
  });

  /** `inference-platform start ...` in the project until its JSON line; answers the line and a stop that answers the exit code. */
  async function startBin(args: string[]) {
    const child = spawn(join(app, 'node_modules/.bin/inference-platform'), ['start', '--port', '0', '--json', ...args], {
      cwd: app,
      env: cleanEnv,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    let out = '';
    let err = '';
    child.stderr.on('data', (c) => (err += c));
    const line = await new Promise<string>((resolve, reject) => {
      child.stdout.on('data', (c) => {
        out += c;
        if (out.includes('\n')) resolve(out.split('\n')[0]!);
      });
      exited.then((code) => reject(new Error(`exited ${code}: ${err}`)));
    });
    const stop = () => {
      child.kill('SIGTERM');
      return exited;
    };
    return { started: JSON.parse(line), stop };
  }
  const whoami = (url: string, key: string) => fetch(`${url}/v1/whoami`, { headers: { Authorization: `Bearer ${key}` } }).then((r) => r.status);

  test('the bin starts it with --json (one line: where, and the keys) on a throw-away folder, removed when it stops', async ({ expect }) => {
    const { started, stop } = await startBin([]);
    expect(started).toMatchObject({ url: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+$/), api_key: expect.stringMatching(/^tpk_/), database: 'sqlite' });
    expect(started.control_key).toMatch(/^ctl_/);
    expect(await whoami(started.url, started.api_key)).toBe(200);
    expect(existsSync(started.data_dir)).toBe(true);
    expect(await stop()).toBe(0);
    expect(existsSync(started.data_dir)).toBe(false);
  });

  test("the bin's --data folder is kept, and its accounts commands reach it with a DATABASE_URL relative to the current folder", async ({ expect }) => {
    const { stdout } = await run(join(app, 'node_modules/.bin/inference-platform'), ['keys', 'create', '--json'], {
      cwd: app,
      env: { ...cleanEnv, DATABASE_URL: 'file:./data/platform.db' },
    });
    const key = JSON.parse(stdout).secret;
    expect(existsSync(join(app, 'data/platform.db'))).toBe(true);
    const { started, stop } = await startBin(['--data', 'data']);
    expect(started.data_dir).toBe(join(app, 'data'));
    expect(await whoami(started.url, key)).toBe(200);
    expect(await stop()).toBe(0);
    expect(existsSync(join(app, 'data/platform.db'))).toBe(true);
  });

  test("the testing entry starts it in the test runner's own process too", async ({ expect }) => {
    writeFileSync(
      join(app, 'in-process.mjs'),
      `import { startPlatform, createPlatformClient } from 'inference-platform/testing';
const platform = await startPlatform({ in: 'process' });
const api = createPlatformClient({ baseUrl: platform.url, apiKey: platform.apiKey });
const { data } = await api.GET('/v1/whoami');
await platform.control.reset();
await platform.stop();
console.log(data.project_slug);
`,
    );
    const { stdout } = await run(process.execPath, ['in-process.mjs'], { cwd: app, env: cleanEnv });
    expect(stdout.trim()).toBe('default');
  });

  test('its types stand on their own: the testing entry and the client, as a TypeScript user imports them', ({ expect }) => {
    const file = join(app, 'check.mts');
    writeFileSync(
      file,
      `import { startPlatform, createControlClient, type RunningPlatform, type StartPlatformOptions } from 'inference-platform/testing';
import { createPlatformClient, PlatformError, type PageItem } from '@inference-platform/client';
const options: StartPlatformOptions = { in: 'process', env: { RATE_LIMITS: 'off' } };
const platform: RunningPlatform = await startPlatform(options);
const reset: Promise<{ scope: 'platform' | 'project' }> = platform.control.reset();
const control = createControlClient({ baseUrl: platform.url, controlKey: platform.controlKey });
await control.time.advance(60);
const api = createPlatformClient({ baseUrl: platform.url, apiKey: platform.apiKey, retry: { maxRetries: 5 } });
for await (const chunk of await api.stream('/v1/chat/completions', { model: 'm', messages: [{ role: 'user', content: 'hi' }] })) {
  const text: string | null | undefined = chunk.choices[0]?.delta.content;
}
const item: PageItem<'/v2/supported-models'> | undefined = undefined;
// @ts-expect-error: not an option of startPlatform
await startPlatform({ port: 'eighty' });
export { reset, item, PlatformError };
`,
    );
    const program = ts.createProgram([file], {
      module: ts.ModuleKind.NodeNext,
      moduleResolution: ts.ModuleResolutionKind.NodeNext,
      target: ts.ScriptTarget.ES2022,
      lib: ['lib.es2022.d.ts', 'lib.dom.d.ts', 'lib.dom.asynciterable.d.ts'],
      types: [],
      strict: true,
      noEmit: true,
      skipLibCheck: true,
    });
    const diagnostics = ts.getPreEmitDiagnostics(program);
    expect(ts.formatDiagnostics(diagnostics, { getCanonicalFileName: (f) => f, getCurrentDirectory: () => app, getNewLine: () => '\n' })).toBe('');
  });
});

test("the contract needs no bundling: json-schema-ref-parser's bundle answers it unchanged (server/http/validator.ts skips it)", async () => {
  // The parser the validator uses, from where the validator finds it.
  const parser = createRequire(createRequire(import.meta.url).resolve('express-openapi-validator'))('@apidevtools/json-schema-ref-parser');
  const spec = JSON.parse(readFileSync(join(root, 'generated/openapi.json'), 'utf8'));
  expect(await parser.bundle(structuredClone(spec))).toEqual(spec);
});
