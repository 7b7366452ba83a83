// Outages answered and survived, on real failures rather than injected ones. PostgreSQL: a cluster of this test's
// own (test/support/private-postgres.ts), stopped and started while the platform runs. SQLite: the database file
// moved away and back, and made unwritable. Both: DATA_DIR/tmp, where uploads are streamed, removed or made a file.
import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { revokeApiKey } from '../server/accounts.ts';
import { openDatabase } from '../server/db/index.ts';
import { KEY_REVOKED_CHANNEL } from '../server/db/keys.ts';
import { pgConfig } from '../server/db/urls.ts';
import { usingPostgres } from './support/database.ts';
import { expectError } from './support/expect.ts';
import { startTestPlatform, type TestPlatform } from './support/platform.ts';
import { type PrivatePostgres, privatePostgresAvailable, startPrivatePostgres } from './support/private-postgres.ts';

const SECRETS = '/v1/deployments/secrets';

/** The 503 of an outage: the envelope, `Retry-After`, and no word of the server's paths or addresses. */
function expectOutage(res: { status: number; body: any; headers: Record<string, string> }, code = 'database_unavailable') {
  expectError(res, 503, { code, type: 'server_error', param: null });
  expect(res.headers['retry-after']).toBe('1');
  expect(res.body.error.message).not.toMatch(/\/tmp|127\.0\.0\.1|\.db\b|prisma/i);
}

describe.runIf(usingPostgres && privatePostgresAvailable)('PostgreSQL stopped and started again', () => {
  let cluster: PrivatePostgres;
  let t: TestPlatform;
  beforeAll(async () => {
    cluster = await startPrivatePostgres();
    t = await startTestPlatform({ databaseUrl: cluster.url });
  });
  afterAll(async () => {
    await t?.close();
    cluster?.destroy();
  });

  test('while it is down every request answers 503 database_unavailable with Retry-After; once it is back, at once 200, and every acknowledged write is there', async () => {
    const auth = { Authorization: `Bearer ${t.caller.key}` };
    const acknowledged: string[] = [];
    for (let i = 0; i < 3; i++) {
      const res = await t.http
        .post(SECRETS)
        .set(auth)
        .send({ name: `BEFORE_${i}`, value: 'v' });
      expect(res.status).toBe(200);
      acknowledged.push(res.body.id);
    }
    const fresh = await t.newCaller(t.caller.identity.projectId);

    cluster.stop('fast');
    try {
      // A read, a write, a key not cached yet (its lookup needs the database), and the health check.
      expectOutage(await t.http.get(SECRETS).set(auth));
      expectOutage(await t.http.post(SECRETS).set(auth).send({ name: 'DURING', value: 'v' }));
      expectOutage(await t.http.get('/v1/files').set('Authorization', `Bearer ${fresh.key}`));
      const health = await t.http.get('/healthz');
      expect(health.status).toBe(503);
      expect(health.body).toMatchObject({ status: 'unavailable', database: 'postgresql' });
    } finally {
      cluster.start();
    }

    // Recovery is immediate: the first requests after the restart are served.
    const list = await t.http.get(SECRETS).set(auth);
    expect(list.status).toBe(200);
    const after = await t.http.post(SECRETS).set(auth).send({ name: 'AFTER', value: 'v' });
    expect(after.status).toBe(200);
    expect((await t.http.get('/healthz')).status).toBe(200);
    const names = (await t.http.get(SECRETS).set(auth)).body.data.map((s: { name: string }) => s.name);
    expect(names).toEqual(expect.arrayContaining(['BEFORE_0', 'BEFORE_1', 'BEFORE_2', 'AFTER']));
    expect(names).not.toContain('DURING');
  });

  test('the LISTEN for key revocations comes back after the database restarts: a key revoked by another process is refused at once again', async () => {
    const caller = await t.newCaller(t.caller.identity.projectId);
    const whoami = () => t.http.get('/v1/whoami').set('Authorization', `Bearer ${caller.key}`);
    expect((await whoami()).status).toBe(200);

    // Down for a couple of seconds, as a restart with a checkpoint is: longer than a single quick retry.
    cluster.stop('fast');
    await sleep(2000);
    cluster.start();

    // The listener's session is back on the server (the test's clock never moves, so the key cache's TTL never
    // expires: only the revocation's NOTIFY can make this process refuse the key).
    const admin = new pg.Client(pgConfig(cluster.url));
    await admin.connect();
    try {
      const listening = async () =>
        Number((await admin.query(`SELECT count(*) AS n FROM pg_stat_activity WHERE query LIKE '%LISTEN ${KEY_REVOKED_CHANNEL}%'`)).rows[0].n);
      await expect.poll(listening, { timeout: 30_000, interval: 100 }).toBe(1);
    } finally {
      await admin.end();
    }
    expect((await whoami()).status).toBe(200);
    const other = await openDatabase(cluster.url, { migrate: false });
    try {
      await revokeApiKey(other, t.clock, caller.identity.apiKeyId);
    } finally {
      await other.close();
    }
    await expect.poll(async () => (await whoami()).status, { timeout: 10_000, interval: 50 }).toBe(401);
  });
});

describe.runIf(!usingPostgres)('SQLite: the database file moved away, or unwritable', () => {
  let t: TestPlatform;
  let file: string;
  beforeAll(async () => {
    t = await startTestPlatform();
    file = t.services.db.url.replace(/^file:/, '');
  });
  afterAll(() => t?.close());

  test('moved away: writes answer 503 (none goes to the moved file, where it would be lost at the next start), /healthz says so; moved back, served at once', async () => {
    const auth = { Authorization: `Bearer ${t.caller.key}` };
    expect((await t.http.post(SECRETS).set(auth).send({ name: 'BEFORE', value: 'v' })).status).toBe(200);
    renameSync(file, `${file}.moved`);
    try {
      expectOutage(await t.http.post(SECRETS).set(auth).send({ name: 'DURING', value: 'v' }));
      // The open read connection still reads the file it opened, which holds every acknowledged write.
      expect((await t.http.get(SECRETS).set(auth)).status).toBe(200);
      const health = await t.http.get('/healthz');
      expect(health.status).toBe(503);
      expect(health.body).toEqual({ status: 'unavailable', database: 'sqlite', reason: expect.stringMatching(/SQLite database file/) });
      expect(health.body.reason).not.toContain(file);
    } finally {
      renameSync(`${file}.moved`, file);
    }
    expect((await t.http.post(SECRETS).set(auth).send({ name: 'AFTER', value: 'v' })).status).toBe(200);
    const names = (await t.http.get(SECRETS).set(auth)).body.data.map((s: { name: string }) => s.name);
    expect(names).toEqual(expect.arrayContaining(['BEFORE', 'AFTER']));
    expect(names).not.toContain('DURING');
    expect((await t.http.get('/healthz')).status).toBe(200);
  });

  test('an unwritable database file: /healthz answers 503 and says why; writable again, 200', async () => {
    const lock = makeUnwritable(file);
    if (!lock) return void console.warn('skipped: this file system cannot make a file unwritable for this user');
    try {
      const health = await t.http.get('/healthz');
      expect(health.status).toBe(503);
      expect(health.body).toEqual({ status: 'unavailable', database: 'sqlite', reason: expect.stringMatching(/^the SQLite database file is not writable/) });
    } finally {
      lock.undo();
    }
    expect((await t.http.get('/healthz')).body).toEqual({ status: 'ok', database: 'sqlite' });
  });
});

/**
 * Makes a file unwritable: read-only permissions, or, for root (whom permissions do not stop), the immutable
 * attribute. Null where neither works (chattr on a file system without attributes, such as tmpfs).
 */
function makeUnwritable(path: string): { undo(): void } | null {
  if (process.getuid?.() !== 0) {
    const mode = statSync(path).mode;
    chmodSync(path, 0o444);
    return { undo: () => chmodSync(path, mode) };
  }
  try {
    execFileSync('chattr', ['+i', path], { stdio: 'ignore' });
  } catch {
    return null;
  }
  return { undo: () => execFileSync('chattr', ['-i', path], { stdio: 'ignore' }) };
}

describe('DATA_DIR/tmp, where uploads are streamed, removed or made unusable while the server runs', () => {
  let t: TestPlatform;
  let tmp: string;
  beforeAll(async () => {
    t = await startTestPlatform();
    tmp = join(t.config.dataDir, 'tmp');
  });
  afterAll(() => t?.close());

  // Over a megabyte, more than the parser buffers: a write that fails must not leave the rest of the body unread.
  const ROWS = '{"a": 1}\n'.repeat(120_000);
  // A hang fails the test (after 20 s) instead of stalling it.
  const within = () => AbortSignal.timeout(20_000);
  const multipart = async () => {
    const form = new FormData();
    form.set('purpose', 'eval');
    form.set('file_name', 'rows.jsonl');
    form.set('file', new Blob([ROWS]), 'rows.jsonl');
    const res = await fetch(`${t.url}/v1/files/upload`, { method: 'POST', headers: { Authorization: `Bearer ${t.caller.key}` }, body: form, signal: within() });
    return { status: res.status, headers: Object.fromEntries(res.headers), body: await res.json() };
  };
  const signed = async () => {
    const params = new URLSearchParams({ purpose: 'eval', file_name: 'rows.jsonl', file_type: 'jsonl' });
    const begin = await fetch(`${t.url}/v1/files?${params}`, { method: 'POST', headers: { Authorization: `Bearer ${t.caller.key}` }, redirect: 'manual' });
    expect(begin.status).toBe(302);
    const res = await fetch(begin.headers.get('location')!, {
      method: 'PUT',
      headers: { 'Content-Type': 'application/octet-stream' },
      body: ROWS,
      signal: within(),
    });
    return { status: res.status, headers: Object.fromEntries(res.headers), body: await res.json() };
  };

  test('removed: the next uploads make it again and are stored', async () => {
    for (const send of [multipart, signed]) {
      expect((await send()).status).toBe(200);
      rmSync(tmp, { recursive: true, force: true });
      const res = await send();
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      expect(existsSync(tmp)).toBe(true);
    }
  });

  test('unusable (a file where the folder should be): uploads answer 503 storage_unavailable at once, naming no server path, and keep nothing', async () => {
    const before = (await t.caller.http.get('/v1/files')).body.data.length;
    rmSync(tmp, { recursive: true, force: true });
    writeFileSync(tmp, 'not a folder');
    try {
      for (const send of [multipart, signed]) {
        const res = await send();
        expectOutage(res, 'storage_unavailable');
        expect(JSON.stringify(res.body)).not.toContain(t.config.dataDir);
        // The file system's own words are in the log, under the request id.
        const line = t.logs.find((l) => l.includes(res.headers['x-request-id']) && l.includes('request failed'));
        expect(JSON.parse(line!)).toMatchObject({ level: 40, code: 'storage_unavailable', cause: expect.stringMatching(/^E[A-Z]+ /) });
      }
    } finally {
      rmSync(tmp, { force: true });
    }
    // The signed upload's file was recorded before its bytes came, and still awaits them; no upload was kept.
    const files = (await t.caller.http.get('/v1/files')).body.data;
    expect(files.filter((f: { bytes: number }) => f.bytes > 0).length).toBe(before);
    expect((await multipart()).status).toBe(200);
  });
});
