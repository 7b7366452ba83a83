// The README's quick start, as a newcomer runs it: its first command's `npm start` (install is already done here)
// prints an address and a development key with which whoami answers; a bad key gets the 401 envelope; SIGTERM
// stops it; a second start on the same database prints no new key, and shuts down cleanly (exit 0) on SIGTERM.
// And its Configuration tables list exactly the variables of the configuration's schema, with their defaults.
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, test } from 'vitest';
import { variables } from '../server/core/config.ts';
import { root } from '../server/core/paths.ts';

const dir = mkdtempSync(join(tmpdir(), 'platform-readme-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const readme = readFileSync(join(root, 'README.md'), 'utf8');
const quickStart = readme.match(/## Quick start[\s\S]*?```(?:sh|bash)\n([\s\S]*?)```/)![1];
const commands = quickStart.split('\n').filter((l) => l.trim() && !l.trim().startsWith('#'));

test('the quick start is two commands: install and start, then the whole suite', () => {
  expect(commands).toEqual(['npm install && npm start', 'npm test']);
});

/** The README's start command, or (`direct`) the server entry point itself, so that its own exit code shows. */
function start(direct = false) {
  const [, startCommand] = commands[0].split(' && ');
  const [cmd, ...args] = direct ? [process.execPath, 'server/start.js'] : startCommand.split(' ');
  const child = spawn(cmd, args, {
    cwd: root,
    env: { ...process.env, PORT: '0', DATABASE_URL: `file:${join(dir, 'readme.db')}` },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  const banner = new Promise<string>((resolve, reject) => {
    child.stdout.on('data', (chunk) => {
      out += chunk;
      if (/(API key.*|existing database.*)\n/.test(out)) resolve(out);
    });
    child.once('exit', (code) => reject(new Error(`npm start exited with ${code}: ${out}`)));
  });
  const exited = new Promise<number | string | null>((resolve) => child.once('exit', (code, signal) => resolve(code ?? signal)));
  return { child, banner, exited };
}

test('npm start prints an address and a key that works; SIGTERM stops it; a restart prints no new key', async () => {
  const first = start();
  const banner = await first.banner;
  const url = banner.match(/listening on (http:\/\/\S+)/)![1];
  const key = banner.match(/(tpk_[\w-]+)/)![1];

  const ok = await fetch(`${url}/v1/whoami`, { headers: { Authorization: `Bearer ${key}` } });
  expect(ok.status).toBe(200);
  expect(Object.keys(await ok.json()).sort()).toEqual([
    'api_key_id',
    'organization_id',
    'organization_name',
    'project_id',
    'project_name',
    'project_slug',
    'user_id',
  ]);
  const bad = await fetch(`${url}/v1/whoami`, { headers: { Authorization: 'Bearer tpk_wrong' } });
  expect(bad.status).toBe(401);
  expect(await bad.json()).toEqual({ error: { message: expect.any(String), type: 'invalid_request_error', param: null, code: 'invalid_api_key' } });

  // npm passes SIGTERM on to the server and then ends by the same signal.
  first.child.kill('SIGTERM');
  expect([0, 'SIGTERM']).toContain(await first.exited);
  await expect(fetch(`${url}/healthz`)).rejects.toThrow();

  const second = start(true);
  const again = await second.banner;
  expect(again).not.toMatch(/tpk_/);
  expect(again).toMatch(/existing database/);
  second.child.kill('SIGTERM');
  expect(await second.exited).toBe(0); // graceful: the server closed, the runner stopped, the database closed
});

/** Splits a cell at `, ` outside code spans and parentheses: `a`, `b` (gloss, more) -> ['`a`', '`b` (gloss, more)']. */
function splitList(cell: string): string[] {
  const parts = [''];
  let depth = 0;
  let code = false;
  for (let i = 0; i < cell.length; i++) {
    const c = cell[i]!;
    if (c === '`') code = !code;
    else if (!code && c === '(') depth++;
    else if (!code && c === ')') depth--;
    if (!code && depth === 0 && cell.startsWith(', ', i)) {
      parts.push('');
      i++;
      continue;
    }
    parts[parts.length - 1] += c;
  }
  return parts.map((p) => p.trim());
}

test("the Configuration tables list exactly the schema's variables, each with the schema's default", () => {
  // Every table headed `| variable | default | meaning |`, wherever it is in the README.
  const rows = [...readme.matchAll(/^\| variable \| default \| meaning \|\n\|[-|]+\|\n((?:\|.*\|\n?)+)/gm)].flatMap((m) =>
    m[1]!
      .trim()
      .split('\n')
      .map((line) => line.split(' | ').map((c) => c.replace(/^\|\s*|\s*\|$/g, '').trim())),
  );
  expect(rows.length).toBeGreaterThan(0);
  const documented = new Map<string, string>();
  for (const [names, defaults] of rows) {
    const listed = [...names!.matchAll(/`([^`]+)`/g)].map((m) => m[1]!);
    const cells = listed.length === 1 ? [defaults!] : splitList(defaults!);
    expect(cells, `the default cell of ${names} gives one default per variable`).toHaveLength(listed.length);
    for (const [i, name] of listed.entries()) documented.set(name, cells[i]!);
  }
  // Per-step durations are declared by the machines (and listed in the spec); the README names the family.
  expect(documented.get('DURATION_<NAME>_MS')).toBe('per step');
  const inReadme = [...documented.keys()].filter((name) => !name.startsWith('DURATION_')).sort();
  expect(inReadme, 'variables in the README and in the schema').toEqual(variables.map((v) => v.name).sort());
  for (const v of variables) {
    const cell = documented.get(v.name)!;
    // The default as one would set it (a gloss in parentheses may follow), or `unset` for an optional variable.
    const expected = v.default === undefined ? 'unset' : `\`${v.default}\``;
    expect(cell === expected || cell.startsWith(`${expected} (`), `${v.name}: README says ${cell}, the schema ${expected}`).toBe(true);
  }
});
