// The server process from the outside, as `npm start` runs it: from its start copy while that is current (built
// again after a change to what it was built from); its log lines reach stdout promptly and on shutdown; while it
// starts, /healthz says so (503) as every API request does; a CLI run before the first start does not cost the
// development key or the catalogue; and `npm install` on the running Node accepts every package. (The starts it
// refuses: startup-refusals.test.ts.)
import { execFile } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, test, vi } from 'vitest';
import { bootstrap, DEVELOPMENT_KEY_GRACE_MS, developmentKey } from '../server/bootstrap.ts';
import { ManualClock } from '../server/core/clock.ts';
import { openDatabase } from '../server/db/index.ts';
import { staleBecause } from '../server/launch.js';
import { listen } from '../server/platform.ts';
import { until } from './support/expect.ts';
import { startServerProcess } from './support/server-process.ts';
import { lines, type Spawned, spawnedServers } from './support/spawned-server.ts';

const root = fileURLToPath(new URL('..', import.meta.url));
// semver (already installed, a dependency of several packages) ships no types, and @types/semver is not installed.
const semver: { satisfies(version: string, range: string): boolean } = createRequire(import.meta.url)('semver');
const { freshDir, spawnServer } = spawnedServers();

// Most tests here start node processes: seconds on a quiet machine, a minute or
// more on one running much else. The bounds only matter when something is wrong (a process that never ends), so they
// are generous: a test may not depend on the machine's speed.
vi.setConfig({ testTimeout: 300_000 });

// ---------------------------------------------------------------------------------------------------------------
// The start copy (server/launch.js; the suite's setup built it when it was not current)

describe('npm start and the bin run the start copy only while it is current', () => {
  const recordFile = join(root, 'server/.built/inputs.json');
  const record: { inputs: [string, number, number][] } = JSON.parse(readFileSync(recordFile, 'utf8'));

  test('the copy records what it was built from: the server, its generated clients, the packages it bundles, its build script', () => {
    const paths = record.inputs.map(([path]) => path);
    expect(paths).toEqual(
      expect.arrayContaining(['server/main.ts', 'server/cli.ts', 'server/engines/pool-tasks.ts', 'server/engines/python-sandbox.mjs', 'server/tools/build.ts']),
    );
    expect(paths.some((p) => p.startsWith('generated/prisma/'))).toBe(true);
    expect(paths.some((p) => p.startsWith('node_modules/express/'))).toBe(true);
    expect(staleBecause()).toBeUndefined();
  });

  test('an input modified since, of another size, or gone makes it stale (named), as does no copy at all', () => {
    const dir = freshDir();
    const main = record.inputs.findIndex(([path]) => path === 'server/main.ts');
    const staleAfter = (change: (input: [string, number, number]) => void) => {
      const changed = structuredClone(record);
      change(changed.inputs[main]!);
      const file = join(dir, 'inputs.json');
      writeFileSync(file, JSON.stringify(changed));
      return staleBecause(file);
    };
    expect(staleAfter((input) => (input[2] -= 1_000))).toBe('server/main.ts');
    expect(staleAfter((input) => (input[1] += 1))).toBe('server/main.ts');
    expect(staleAfter((input) => (input[0] = 'server/gone.ts'))).toBe('server/gone.ts');
    expect(staleBecause(join(dir, 'none.json'))).toBe('no start copy');
  });

  test('a start loads no package kept for first use, and none the copy bundles, from node_modules', async () => {
    // Loaded when first needed, not at start (about 300 ms of a start together, measured): websockets, pictures,
    // user-given URLs, Redis (only when configured) and the worker pools. express-openapi-validator is in the copy.
    const firstUse = ['ws', 'sharp', 'undici', 'ioredis', 'piscina', 'express-openapi-validator'];
    const dir = freshDir();
    const probe = join(dir, 'probe.mjs');
    // Once the key is printed: the packages of every CommonJS file loaded (where each of these loads from).
    writeFileSync(
      probe,
      `import { createRequire } from 'node:module';
const write = process.stdout.write.bind(process.stdout);
process.stdout.write = (chunk, ...rest) => {
  if (!String(chunk).includes('Development API key')) return write(chunk, ...rest);
  const packages = new Set(Object.keys(createRequire(import.meta.url).cache).map((f) => f.match(/node_modules\\/((?:@[^/]+\\/)?[^/]+)/)?.[1]));
  write(JSON.stringify([...packages].filter(Boolean)) + '\\n', () => process.exit(0));
};
`,
    );
    const { REDIS_URL: _, ...env } = process.env;
    const { stdout } = await promisify(execFile)(process.execPath, ['--import', probe, 'server/.built/main.js'], {
      cwd: root,
      env: { ...env, DATABASE_URL: `file:${join(dir, 'probe.db')}`, DATA_DIR: dir, PORT: '0', LOG_LEVEL: 'warn' },
    });
    const loaded: string[] = JSON.parse(stdout.trim().split('\n').at(-1)!);
    expect(loaded).toContain('better-sqlite3');
    expect(loaded.filter((p) => firstUse.includes(p))).toEqual([]);
  });
});

// ---------------------------------------------------------------------------------------------------------------
// 7. Logs reach stdout

describe('7. log lines reach stdout without waiting for a buffer to fill', () => {
  let p: Spawned;
  let url: string;

  test("a request's log line reaches stdout while the server keeps running, with no more output to fill a buffer", async () => {
    // A misspelt variable (RATE_LIMIT_WINDOW_SECONDS meant) is not read: the start warns and goes on.
    p = spawnServer({ DATABASE_URL: `file:${join(freshDir(), 'logs.db')}`, LOG_LEVEL: 'info', RATE_LIMITS_WINDOW: '5' });
    expect(await until(() => /Development API key.*\n/.test(p.stdout()), 120_000), p.output()).toBe(true);
    // The warning is a log line (flushed within 250 ms), the banner a direct write: either may come first.
    expect(await until(() => p.stdout().includes('RATE_LIMITS_WINDOW'), 60_000), p.output()).toBe(true);
    const warning = lines(p.stdout()).find((l) => l.includes('RATE_LIMITS_WINDOW'));
    expect(warning && JSON.parse(warning), p.stdout()).toMatchObject({ level: 40, variable: 'RATE_LIMITS_WINDOW' });
    url = p.stdout().match(/listening on (http:\/\/\S+)/)![1];
    const key = p.stdout().match(/(tpk_[\w-]+)/)![1];

    const requestId = `log-probe-${process.pid}-${Date.now()}`;
    const res = await fetch(`${url}/v1/whoami`, { headers: { Authorization: `Bearer ${key}`, 'x-request-id': requestId } });
    expect(res.status).toBe(200);
    const sent = Date.now();
    // Lines are written at least every 250 ms. A line held until a buffer fills would never come here (nothing else
    // is written), so the bound only has to be far above 250 ms, not tight: a loaded machine must not fail this.
    const seen = await until(() => p.stdout().includes(requestId), 60_000, 10);
    expect(seen, `no line with ${requestId} on stdout ${Date.now() - sent} ms after the response; stdout so far:\n${p.stdout()}`).toBe(true);
    const line = lines(p.stdout()).find((l) => l.includes(requestId))!;
    expect(JSON.parse(line)).toMatchObject({ requestId, method: 'GET', path: '/v1/whoami', status: 200, msg: 'request' });
    expect(p.child.exitCode).toBeNull();
    expect((await fetch(`${url}/healthz`)).status).toBe(200);
  });

  test("on SIGTERM the last lines (the 'shutting down' line) are on stdout before the process exits", async () => {
    p ??= spawnServer({ DATABASE_URL: `file:${join(freshDir(), 'logs.db')}`, LOG_LEVEL: 'info' });
    expect(await until(() => /(API key|existing database).*\n/.test(p.stdout()), 120_000), p.output()).toBe(true);
    p.child.kill('SIGTERM');
    const { code } = await p.exited;
    expect(code).toBe(0);
    const out = lines(p.stdout());
    const shutdown = out.find((l) => /shutting down/.test(l));
    expect(shutdown, `stdout:\n${p.stdout()}`).toBeDefined();
    expect(JSON.parse(shutdown!)).toMatchObject({ signal: 'SIGTERM', msg: 'shutting down' });
    expect(p.stdout().endsWith('\n')).toBe(true);
  });
});

// ---------------------------------------------------------------------------------------------------------------
// 9. The CLI before the first start

describe('9. the CLI run before the first start', () => {
  test('the first server start still prints a working development key (project default) and has the catalogue', async () => {
    const dir = freshDir();
    const DATABASE_URL = `file:${join(dir, 'platform.db')}`;
    const { stdout } = await promisify(execFile)(process.execPath, ['server/cli.js', 'orgs', 'create', 'Acme'], {
      cwd: root,
      env: { ...process.env, DATABASE_URL },
    });
    expect(stdout).toMatch(/created organization/);

    const server = await startServerProcess({ DATABASE_URL });
    try {
      expect(server.key ?? '(no key printed)', 'the development key of the first start').toMatch(/^tpk_/);
      const auth = { Authorization: `Bearer ${server.key}` };
      const whoami = await fetch(`${server.url}/v1/whoami`, { headers: auth });
      expect(whoami.status).toBe(200);
      expect(await whoami.json()).toMatchObject({ project_slug: 'default' });
      const hardware = await fetch(`${server.url}/v1/hardware`, { headers: auth });
      expect(hardware.status).toBe(200);
      expect((await hardware.json()).data.length).toBeGreaterThan(0);
    } finally {
      await server.stop();
    }
  });
});

describe('the development key is never lost', () => {
  test('a start that minted a key but died before printing it leaves the next start to print a usable one (and revokes the unprinted one)', async () => {
    const dir = freshDir();
    const DATABASE_URL = `file:${join(dir, 'platform.db')}`;
    // What a start that died between minting and printing leaves behind: the defaults, and an unprinted key older
    // than the grace another start would get to print it.
    const db = await openDatabase(DATABASE_URL);
    const past = new ManualClock(Date.now() - DEVELOPMENT_KEY_GRACE_MS - 1_000);
    const project = await bootstrap(db, past);
    const lost = await developmentKey(db, past, project.id);
    await db.close();
    expect(lost?.secret).toMatch(/^tpk_/);

    const server = await startServerProcess({ DATABASE_URL });
    try {
      expect(server.key ?? '(no key printed)').toMatch(/^tpk_/);
      expect(server.key).not.toBe(lost!.secret);
      expect((await fetch(`${server.url}/v1/whoami`, { headers: { Authorization: `Bearer ${server.key}` } })).status).toBe(200);
      expect((await fetch(`${server.url}/v1/whoami`, { headers: { Authorization: `Bearer ${lost!.secret}` } })).status).toBe(401);
    } finally {
      await server.stop();
    }
    // Printed once: the next start prints none.
    const again = await startServerProcess({ DATABASE_URL });
    await again.stop();
    expect(again.key).toBeUndefined();
  });
});

// ---------------------------------------------------------------------------------------------------------------
// Healthy means ready

describe('while the server starts', () => {
  test('/healthz answers 503 {"status": "starting"} as every API request answers 503 starting; once started, 200', async () => {
    // The port as the start takes it first, before the database and the rest.
    const server = await listen({ host: '127.0.0.1', port: 0 });
    try {
      const url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
      const health = await fetch(`${url}/healthz`);
      expect(health.status).toBe(503);
      expect(health.headers.get('retry-after')).toBe('1');
      expect(await health.json()).toEqual({ status: 'starting' });
      const api = await fetch(`${url}/v1/whoami`);
      expect(api.status).toBe(503);
      expect(await api.json()).toEqual({ error: { message: expect.any(String), type: 'server_error', param: null, code: 'starting' } });
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
    const started = await startServerProcess({ DATABASE_URL: `file:${join(freshDir(), 'platform.db')}` });
    try {
      expect((await fetch(`${started.url}/healthz`)).status).toBe(200);
      expect((await fetch(`${started.url}/v1/whoami`, { headers: { Authorization: `Bearer ${started.key}` } })).status).toBe(200);
    } finally {
      await started.stop();
    }
  });
});

// ---------------------------------------------------------------------------------------------------------------
// 11. Install on the running Node

describe('11. every package installs on the running Node', () => {
  test(`no package in package-lock.json declares an engines.node range that excludes Node ${process.version}`, () => {
    const lock = JSON.parse(readFileSync(join(root, 'package-lock.json'), 'utf8'));
    const excluding = Object.entries(lock.packages as Record<string, { engines?: unknown }>)
      .map(([path, pkg]) => [
        path || '(root)',
        pkg.engines && typeof pkg.engines === 'object' && !Array.isArray(pkg.engines) ? (pkg.engines as any).node : undefined,
      ])
      .filter(([, range]) => typeof range === 'string' && !semver.satisfies(process.version, range))
      .map(([path, range]) => `${path} (node ${range})`);
    expect(excluding).toEqual([]);
  });

  test(`the root package.json engines.node range includes Node ${process.version}`, () => {
    const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
    expect(typeof pkg.engines?.node).toBe('string');
    expect(semver.satisfies(process.version, pkg.engines.node), pkg.engines.node).toBe(true);
  });
});
