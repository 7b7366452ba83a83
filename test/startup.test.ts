// The server process from the outside, as `npm start` runs it: its log lines reach stdout promptly and on shutdown;
// a port that is taken, a database it cannot use, an unsupported DATABASE_URL, or any variable it cannot use each
// end it with one line that says what to do (no stack trace, no password), exit code 1 and nothing created; while
// it starts, /healthz says so (503) as every API request does; a CLI run before the first start does not cost the
// development key or the catalogue; and `npm install` on the running Node accepts every package.
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, describe, expect, test, vi } from 'vitest';
import { bootstrap, DEVELOPMENT_KEY_GRACE_MS, developmentKey } from '../server/bootstrap.ts';
import { ManualClock } from '../server/core/clock.ts';
import { openDatabase } from '../server/db/index.ts';
import { listen } from '../server/platform.ts';
import { until } from './support/expect.ts';
import { startServerProcess } from './support/server-process.ts';

const root = fileURLToPath(new URL('..', import.meta.url));
// `node --import tsx server/main.ts`, with both resolved up front so that the process may run in any directory.
const TSX = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;
const MAIN = join(root, 'server/main.ts');
// semver (already installed, a dependency of several packages) ships no types, and @types/semver is not installed.
const semver: { satisfies(version: string, range: string): boolean } = createRequire(import.meta.url)('semver');

const dirs: string[] = [];
const freshDir = () => {
  const dir = mkdtempSync(join(tmpdir(), 'platform-startup-'));
  dirs.push(dir);
  return dir;
};
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

const running = new Set<ChildProcess>();
afterAll(() => {
  for (const child of running) child.kill('SIGKILL');
  running.clear();
});

interface Spawned {
  child: ChildProcess;
  /** stdout only. */
  stdout(): string;
  /** stdout and stderr together, in arrival order. */
  output(): string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

function spawnServer(env: Record<string, string>, cwd = root): Spawned {
  const child = spawn(process.execPath, ['--import', TSX, MAIN], {
    cwd,
    env: { ...process.env, PORT: '0', LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  running.add(child);
  let stdout = '';
  let output = '';
  child.stdout!.on('data', (c) => {
    stdout += c;
    output += c;
  });
  child.stderr!.on('data', (c) => (output += c));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => {
      running.delete(child);
      resolve({ code, signal });
    }),
  );
  return { child, stdout: () => stdout, output: () => output, exited };
}

/** Waits for the process to end by itself. One that starts serving instead is stopped, and reported as such. */
async function expectToEnd(p: Spawned, context: () => string = () => '', timeoutMs = 120_000) {
  const outcome = await Promise.race([
    p.exited.then((e) => ({ kind: 'exited' as const, ...e })),
    until(() => /listening on http/.test(p.stdout()), timeoutMs).then((started) => ({ kind: started ? ('started' as const) : ('timeout' as const) })),
  ]);
  if (outcome.kind !== 'exited') {
    p.child.kill('SIGKILL');
    await p.exited;
    expect.fail(`${outcome.kind === 'started' ? 'the server started instead of refusing' : `still running after ${timeoutMs} ms`}: ${p.output()}${context()}`);
  }
  return outcome as { code: number | null; signal: NodeJS.Signals | null };
}

// Every test here starts node processes (tsx compiles the server each time): seconds on a quiet machine, a minute or
// more on one running much else. The bounds only matter when something is wrong (a process that never ends), so they
// are generous: a test may not depend on the machine's speed.
vi.setConfig({ testTimeout: 300_000 });

const STACK_LINE = /^\s+at\s.+(:\d+:\d+\)?|\(native\)|<anonymous>\)?)$/m;
const lines = (text: string) => text.split('\n').filter((l) => l.trim() !== '');

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
// 8. A port that is taken

describe('8. a port already in use', () => {
  let holder: Server | undefined;
  afterAll(() => holder?.close());

  test('exits non-zero with one line naming the port and PORT (no stack trace), and creates nothing', async () => {
    holder = createServer();
    await new Promise<void>((resolve) => holder!.listen(0, '127.0.0.1', resolve));
    const port = (holder.address() as { port: number }).port;
    const dir = freshDir();
    const p = spawnServer({ PORT: String(port), HOST: '127.0.0.1', DATABASE_URL: `file:${join(dir, 'platform.db')}` });
    const { code } = await expectToEnd(p);
    expect(code, p.output()).not.toBe(0);
    expect(code).not.toBeNull();
    // Each its own check, so that a failure reports every way the start went wrong.
    const out = lines(p.output());
    expect.soft(out, p.output()).toHaveLength(1);
    expect.soft(out[0]).toContain(String(port));
    expect.soft(out[0]).toMatch(/\bPORT\b/);
    expect.soft(p.output()).not.toMatch(STACK_LINE);
    expect.soft(readdirSync(dir), 'files created next to DATABASE_URL').toEqual([]);
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
// 10. A database it cannot use

const PASSWORD = 's3cretpw';
const badDatabases = [
  { why: 'an unwritable SQLite path', url: 'file:/dev/null/sub/x.db' },
  { why: 'an unreachable PostgreSQL server', url: 'postgres://postgres@127.0.0.1:1/test' },
  { why: 'a PostgreSQL database that does not exist', url: 'postgres://postgres@127.0.0.1:5432/db_that_does_not_exist_xyz' },
  { why: 'an unsupported scheme (mysql://)', url: 'mysql://root@127.0.0.1:3306/test' },
  { why: 'a URL with a password (masked)', url: `postgres://someone:${PASSWORD}@127.0.0.1:1/test` },
];

describe('10. a database the server cannot use ends the start with one line', () => {
  for (const bad of badDatabases) {
    test(`${bad.why} (${bad.url.replace(PASSWORD, '***')}): exit non-zero, one line naming DATABASE_URL and what to do, no stack trace, no password, nothing created`, async () => {
      const cwd = freshDir();
      const p = spawnServer({ DATABASE_URL: bad.url, LOG_LEVEL: 'info' }, cwd);
      const { code } = await expectToEnd(p, () => `\nand it created in its working directory: ${JSON.stringify(readdirSync(cwd, { recursive: true }))}`);
      const output = p.output();
      expect(output).not.toContain(PASSWORD);
      expect(code, output).not.toBe(0);
      expect(code, output).not.toBeNull();
      // Each its own check, so that a failure reports every way the start went wrong.
      const out = lines(output);
      expect.soft(out, output).toHaveLength(1);
      expect.soft(out[0]).toContain('DATABASE_URL');
      expect.soft(out[0], 'the line says what to do').toMatch(/\b(set|check|create|start|use|make sure|fix|point)\b/i);
      expect.soft(output).not.toMatch(STACK_LINE);
      expect.soft(readdirSync(cwd), 'files created in the working directory').toEqual([]);
      expect.soft(existsSync(join(root, 'mysql:')), 'a SQLite file named after the URL in the project').toBe(false);
    });
  }

  test('with LOG_LEVEL=debug the line is still there (a stack trace may follow), still without the password', async () => {
    const cwd = freshDir();
    const p = spawnServer({ DATABASE_URL: `postgres://someone:${PASSWORD}@127.0.0.1:1/test`, LOG_LEVEL: 'debug' }, cwd);
    const { code } = await expectToEnd(p);
    const output = p.output();
    expect(code, output).not.toBe(0);
    expect(code, output).not.toBeNull();
    expect(
      lines(output).some((l) => l.includes('DATABASE_URL')),
      output,
    ).toBe(true);
    expect(output).not.toContain(PASSWORD);
    expect(readdirSync(cwd)).toEqual([]);
  });
});

// ---------------------------------------------------------------------------------------------------------------
// Variables it cannot use

const badVariables: { env: Record<string, string>; names: string }[] = [
  { env: { PORT: 'abc' }, names: 'PORT' },
  { env: { PORT: '99999' }, names: 'PORT' },
  // An address this machine does not have (TEST-NET-1): refused when the port is taken.
  { env: { HOST: '192.0.2.1' }, names: 'HOST' },
  { env: { HOST: 'not a host' }, names: 'HOST' },
  { env: { LOG_LEVEL: 'verbose' }, names: 'LOG_LEVEL' },
  { env: { DATABASE_URL: 'sqlite:foo.db' }, names: 'DATABASE_URL' },
  { env: { RUNNER_POLL_MS: 'fast' }, names: 'RUNNER_POLL_MS' },
  { env: { RUNNER_LEASE_MS: '-5' }, names: 'RUNNER_LEASE_MS' },
];

describe('a variable the server cannot use ends the start with one line naming it', () => {
  for (const bad of badVariables) {
    const shown = Object.entries(bad.env)
      .map(([k, v]) => `${k}=${v}`)
      .join(' ');
    test(`${shown}: exit 1, one line naming ${bad.names}, no stack trace, nothing created`, async () => {
      const cwd = freshDir();
      const p = spawnServer({ DATABASE_URL: `file:${join(cwd, 'platform.db')}`, ...bad.env }, cwd);
      const { code } = await expectToEnd(p, () => `\nand it created in its working directory: ${JSON.stringify(readdirSync(cwd, { recursive: true }))}`);
      const output = p.output();
      expect(code, output).toBe(1);
      const out = lines(output);
      expect.soft(out, output).toHaveLength(1);
      expect.soft(out[0]).toMatch(new RegExp(`^${bad.names}\\b`));
      expect.soft(output).not.toMatch(STACK_LINE);
      expect.soft(readdirSync(cwd), 'files created in the working directory').toEqual([]);
      expect.soft(existsSync(join(root, 'sqlite:foo.db')), 'a SQLite file named after the URL in the project').toBe(false);
    });
  }
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
