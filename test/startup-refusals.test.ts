// The starts the server refuses, from the outside, as `npm start` runs it: a port that is taken, a database it cannot
// use, an unsupported DATABASE_URL, or any variable it cannot use each end it with one line that says what to do (no
// stack trace, no password), a non-zero exit code and nothing created. Each start is a process of its own, and the
// tables' rows run side by side.

import { existsSync, readdirSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { afterAll, describe, test, vi } from 'vitest';
import { root } from '../server/core/paths.ts';
import { expectToEnd, lines, STACK_LINE, spawnedServers } from './support/spawned-server.ts';

const { freshDir, spawnServer } = spawnedServers();

// Node processes, on a machine that may be running much else: the bounds only matter when a process never ends.
vi.setConfig({ testTimeout: 300_000 });

// ---------------------------------------------------------------------------------------------------------------
// 8. A port that is taken

describe('8. a port already in use', () => {
  let holder: Server | undefined;
  afterAll(() => holder?.close());

  test('exits non-zero with one line naming the port and PORT (no stack trace), and creates nothing', async ({ expect }) => {
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
// 10. A database it cannot use

const PASSWORD = 's3cretpw';
const badDatabases = [
  { why: 'an unwritable SQLite path', url: 'file:/dev/null/sub/x.db' },
  { why: 'an unreachable PostgreSQL server', url: 'postgres://postgres@127.0.0.1:1/test' },
  { why: 'a PostgreSQL database that does not exist', url: 'postgres://postgres@127.0.0.1:5432/db_that_does_not_exist_xyz' },
  { why: 'an unsupported scheme (mysql://)', url: 'mysql://root@127.0.0.1:3306/test' },
  { why: 'a URL with a password (masked)', url: `postgres://someone:${PASSWORD}@127.0.0.1:1/test` },
];

describe.concurrent('10. a database the server cannot use ends the start with one line', () => {
  for (const bad of badDatabases) {
    test(`${bad.why} (${bad.url.replace(PASSWORD, '***')}): exit non-zero, one line naming DATABASE_URL and what to do, no stack trace, no password, nothing created`, async ({
      expect,
    }) => {
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

  test('with LOG_LEVEL=debug the line is still there (a stack trace may follow), still without the password', async ({ expect }) => {
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

describe.concurrent('a variable the server cannot use ends the start with one line naming it', () => {
  for (const bad of badVariables) {
    const shown = Object.entries(bad.env)
      .map(([k, v]) => `${k}=${v}`)
      .join(' ');
    test(`${shown}: exit 1, one line naming ${bad.names}, no stack trace, nothing created`, async ({ expect }) => {
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
