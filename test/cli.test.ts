// The account CLI, run as a separate process against the database a running server uses: it creates an
// organization, a project and a key the server accepts, lists keys without their secrets, and revokes a key, which
// the server then refuses: at once on PostgreSQL (told by NOTIFY), after the key cache's TTL on SQLite.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { root } from '../server/core/paths.ts';
import { startTestPlatform, type TestPlatform } from './support/platform.ts';

const run = promisify(execFile);
// Each CLI run is a process of its own (node, tsx, the migrations check): seconds each on a busy machine, so the tests
// get a budget far above what they need when the machine is quiet (about 10 s), not a measure of its speed.
const BUDGET_MS = 300_000;
let t: TestPlatform;
beforeAll(async () => {
  t = await startTestPlatform();
});
afterAll(() => t?.close());

const cli = async (...args: string[]) => {
  const { stdout } = await run(process.execPath, ['server/cli.js', ...args, '--json'], {
    cwd: root,
    env: { ...process.env, DATABASE_URL: t.services.db.url },
  });
  return JSON.parse(stdout);
};

test(
  'create an organization, a project and a key; use it; list it; revoke it',
  async () => {
    const org = await cli('orgs', 'create', 'Acme Labs');
    expect(org.name).toBe('Acme Labs');
    const project = await cli('projects', 'create', 'Acme Research', '--org', org.id);
    expect(project.slug).toBe('acme-research');
    const key = await cli('keys', 'create', '--project', 'acme-research', '--name', 'ci');
    expect(key.secret).toMatch(/^tpk_/);

    const whoami = await t.http.get('/v1/whoami').set('Authorization', `Bearer ${key.secret}`);
    expect(whoami.status).toBe(200);
    expect(whoami.body).toMatchObject({ api_key_id: key.id, project_slug: 'acme-research', organization_name: 'Acme Labs' });

    const listed = await cli('keys', 'list', '--project', project.id);
    expect(listed.map((k: any) => k.id)).toEqual([key.id]);
    expect(JSON.stringify(listed)).not.toContain(key.secret);
    expect(listed[0]).not.toHaveProperty('hash');

    await cli('keys', 'revoke', key.id);
    const refused = async () => (await t.http.get('/v1/whoami').set('Authorization', `Bearer ${key.secret}`)).status === 401;
    if (t.services.db.provider === 'postgresql') {
      // The revoking process notifies every server; allow for delivery.
      await expect.poll(refused, { timeout: 5000, interval: 50 }).toBe(true);
    } else {
      expect(await refused()).toBe(false); // still cached: another process cannot reach this one's memory
      t.clock.advance(t.services.config.keyCacheTtlMs + 1);
      expect(await refused()).toBe(true);
    }
  },
  BUDGET_MS,
);

test(
  'an explicit slug that is taken is refused',
  async () => {
    const org = await cli('orgs', 'create', 'Beta');
    await cli('projects', 'create', 'One', '--org', org.id, '--slug', 'beta-one');
    await expect(cli('projects', 'create', 'Two', '--org', org.id, '--slug', 'beta-one')).rejects.toThrow(/slug 'beta-one' is taken/);
  },
  BUDGET_MS,
);
