// The control plane (spec/tags/control.yaml), used the way an application's test suite would: through the typed
// client with the control key, beside the official clients pointed at the server.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import { createPlatformClient, type PlatformClient } from '@inference-platform/client';
import OpenAI from 'openai';
import Together from 'together-ai';
import { afterAll, beforeAll, beforeEach, describe, expect, test } from 'vitest';
import type { Database } from '../server/db/index.ts';
import type { ObservedRequest } from '../server/http/guests.ts';
import { Faults, newFault } from '../server/modules/control/faults.ts';
import { Journal } from '../server/modules/control/journal.ts';
import { unplaced } from '../server/modules/control/reset.ts';
import { expectError } from './support/expect.ts';
import { uploadFile } from './support/files.ts';
import { startTestPlatform, TEST_CONTROL_KEY, type TestPlatform } from './support/platform.ts';

const MODEL = 'meta-llama/Llama-3.3-70B-Instruct-Turbo';
let t: TestPlatform;
let control: PlatformClient;
const chat = { model: MODEL, messages: [{ role: 'user' as const, content: 'Say hi' }], max_tokens: 5 };

beforeAll(async () => {
  t = await startTestPlatform();
  control = createPlatformClient({ baseUrl: t.url, apiKey: TEST_CONTROL_KEY });
});
afterAll(() => t?.close());
beforeEach(async () => {
  await control.DELETE('/_control/faults');
  await control.DELETE('/_control/journal');
});

describe('the control key', () => {
  test('is the only key that opens the control plane: none 401 missing_api_key, a project key 401 invalid_api_key', async () => {
    expectError(await t.http.get('/_control/journal'), 401, { code: 'missing_api_key', param: null });
    expectError(await t.http.get('/_control/journal').set('Authorization', `Bearer ${t.caller.key}`), 401, { code: 'invalid_api_key' });
    // Read as the API reads its keys: a header that is not a bearer key is an invalid key, not a missing one.
    expectError(await t.http.get('/_control/journal').set('Authorization', `Basic ${TEST_CONTROL_KEY}`), 401, { code: 'invalid_api_key' });
    expect((await t.http.get('/_control/journal').set('Authorization', `Bearer ${TEST_CONTROL_KEY}`)).status).toBe(200);
  });

  test('does not open the API', async () => {
    expectError(await t.http.get('/v1/whoami').set('Authorization', `Bearer ${TEST_CONTROL_KEY}`), 401, { code: 'invalid_api_key' });
  });

  test('CONTROL_API=off: every control path answers 404 and Prefer is ignored', async () => {
    const off = await startTestPlatform({ config: { control: { enabled: false, journalSize: 500 } } });
    try {
      expectError(await off.http.post('/_control/reset').set('Authorization', `Bearer ${TEST_CONTROL_KEY}`), 404, { code: 'not_found' });
      const res = await off.caller.http.post('/v1/chat/completions').set('Prefer', 'code=503').send(chat);
      expect(res.status).toBe(200);
      expect(res.headers['x-fault-injected']).toBeUndefined();
    } finally {
      await off.close();
    }
  });
});

describe('fault rules', () => {
  // The policy alone, without a database: a rule's count, shared by every process through it, always lets it act.
  const whoami = { operationId: 'whoami', path: '/v1/whoami', projectId: 'proj_a', stream: false } as const;
  const policy = (now: () => number) => {
    const faults = new Faults({} as Database, { requestLimit: 1, tokenLimit: 1 }, () => new Set(), now);
    faults.store.hit = async () => true;
    return faults;
  };

  test('rules in force that fit no request answer it at once, with no promise to wait on (issue 20: they cost a request little)', async () => {
    const faults = policy(() => 0);
    faults.store.held = [
      newFault({ match: { operations: ['createChatCompletion'] }, status: 500 }, 0),
      newFault({ match: { path: '/v1/files' }, status: 500 }, 0),
      newFault({ match: { model: MODEL }, status: 500 }, 0),
      newFault({ match: { project_id: 'proj_b' }, status: 500 }, 0),
      newFault({ stream: { after_chunks: 1, cut: true } }, 0),
    ];
    expect(faults.match(whoami)).toBeNull();
    // One that fits is counted (shared by every process): that is waited on.
    const fits = newFault({ match: { operations: ['whoami'] }, status: 503 }, 0);
    faults.store.held = [...faults.store.held, fits];
    const pending = faults.match(whoami);
    expect(pending).toBeInstanceOf(Promise);
    expect(await pending).toMatchObject({ source: fits.id });
  });

  test('a fault rule that fits stops fitting the moment it expires', async () => {
    let now = 4_999;
    const faults = policy(() => now);
    faults.store.held = [newFault({ match: { operations: ['whoami'] }, status: 503, ttl_seconds: 5 }, 0)];
    expect(await faults.match(whoami)).not.toBeNull();
    now = 5_000;
    expect(faults.match(whoami)).toBeNull();
  });

  test("a 429 once: the official client's retry succeeds, and the journal shows both tries", async () => {
    const { data: rule } = await control.POST('/_control/faults', {
      body: { match: { operations: ['createChatCompletion'], model: MODEL }, status: 429, count: 1, retry_after_seconds: 0 },
    });
    expect(rule).toMatchObject({ status: 429, count: 1, hits: 0 });
    const client = new Together({ apiKey: t.caller.key, baseURL: `${t.url}/v1` });
    const completion = await client.chat.completions.create(chat);
    expect(completion.choices[0]!.message?.content).toBeTruthy();
    const { data: journal } = await control.GET('/_control/journal', { params: { query: { operation: 'createChatCompletion' } } });
    expect(journal!.data.map((e) => [e.status, e.fault])).toEqual([
      [200, null],
      [429, rule!.id],
    ]);
    // Used up: gone.
    expect((await control.GET('/_control/faults')).data!.data).toEqual([]);
  });

  test("the 429 is the platform's: dynamic_request_limited with the limit headers and Retry-After", async () => {
    await control.POST('/_control/faults', { body: { status: 429, retry_after_seconds: 3 } });
    const res = await t.caller.http.post('/v1/chat/completions').send(chat);
    expectError(res, 429, { code: 'dynamic_request_limited', type: 'dynamic_request_limited', param: null });
    expect(res.headers).toMatchObject({
      'retry-after': '3',
      'x-ratelimit-remaining': '0',
      'x-ratelimit-reset': '3',
      'x-fault-injected': expect.stringMatching(/^fault_/),
    });
  });

  test('an openai client sees a 503 model_overloaded it cannot get past when the rule holds', async () => {
    await control.POST('/_control/faults', { body: { match: { path: '/v1/chat/' }, status: 503 } });
    const client = new OpenAI({ apiKey: t.caller.key, baseURL: `${t.url}/v1`, maxRetries: 1 });
    const err = await client.chat.completions.create(chat).catch((e) => e);
    expect(err).toBeInstanceOf(OpenAI.APIError);
    expect([err.status, err.code]).toEqual([503, 'model_overloaded']);
    expect((await control.GET('/_control/faults')).data!.data[0]!.hits).toBe(2);
  });

  test('match by project, after and probability; other requests pass', async () => {
    await control.POST('/_control/faults', { body: { match: { project_id: t.other.identity.projectId }, status: 500, after: 1 } });
    await control.POST('/_control/faults', { body: { status: 502, probability: 0 } });
    expect((await t.caller.http.get('/v1/models')).status).toBe(200);
    expect((await t.other.http.get('/v1/models')).status).toBe(200);
    expectError(await t.other.http.get('/v1/models'), 500, { code: 'internal_error' });
  });

  test('drop closes the connection without an answer', async () => {
    await control.POST('/_control/faults', { body: { match: { operations: ['whoami'] }, drop: true, count: 1 } });
    await expect(t.caller.http.get('/v1/whoami')).rejects.toThrow(/socket hang up|ECONNRESET/);
    expect((await t.caller.http.get('/v1/whoami')).status).toBe(200);
  });

  test('delay_ms alone delays the real answer', async () => {
    await control.POST('/_control/faults', { body: { match: { operations: ['whoami'] }, delay_ms: 20 } });
    const res = await t.caller.http.get('/v1/whoami');
    expect(res.status).toBe(200);
    expect(res.headers['x-fault-injected']).toMatch(/^fault_/);
  });

  test("Prefer: code=... answers that status for one request (Prism's form)", async () => {
    const res = await t.caller.http.post('/v1/chat/completions').set('Prefer', 'code=503, delay=1').send(chat);
    expectError(res, 503, { code: 'model_overloaded' });
    expect(res.headers['x-fault-injected']).toBe('prefer');
    expect((await t.caller.http.post('/v1/chat/completions').send(chat)).status).toBe(200);
  });

  test('bad rules are refused naming the field, and nothing is added', async () => {
    expectError(await t.http.post('/_control/faults').set('Authorization', `Bearer ${TEST_CONTROL_KEY}`).send({ count: 1 }), 400, {
      code: 'fault_without_effect',
      param: 'status',
    });
    expectError(
      await t.http
        .post('/_control/faults')
        .set('Authorization', `Bearer ${TEST_CONTROL_KEY}`)
        .send({ match: { operations: ['whoami', 'noSuchThing'] }, status: 500 }),
      400,
      { code: 'unknown_operation', param: 'match.operations.1' },
    );
    expectError(await t.http.post('/_control/faults').set('Authorization', `Bearer ${TEST_CONTROL_KEY}`).send({ status: 200 }), 400, { param: 'status' });
    expectError(await t.http.delete('/_control/faults/fault_nope').set('Authorization', `Bearer ${TEST_CONTROL_KEY}`), 404, { param: 'faultId' });
    expect((await control.GET('/_control/faults')).data!.data).toEqual([]);
  });

  test('a rule beyond the bounds (a ttl_seconds of 1e20, a count past a billion) is refused and not installed; scripts alike', async () => {
    const post = (path: string, body: object) => t.http.post(path).set('Authorization', `Bearer ${TEST_CONTROL_KEY}`).send(body);
    expectError(await post('/_control/faults', { status: 500, ttl_seconds: 1e20 }), 400, { param: 'ttl_seconds' });
    expectError(await post('/_control/faults', { status: 500, count: 1e12 }), 400, { param: 'count' });
    expectError(await post('/_control/scripts', { answers: [{ content: 'x' }], ttl_seconds: 1e20 }), 400, { param: 'ttl_seconds' });
    expect((await control.GET('/_control/faults')).data!.data).toEqual([]);
    expect((await control.GET('/_control/scripts')).data!.data).toEqual([]);
    expect((await t.caller.http.get('/v1/whoami')).status).toBe(200);
  });

  test('a client that goes away during a delay is let go: the operation it asked for never runs', async () => {
    const server = t.platform.server!;
    const accepted: Socket[] = [];
    const onConnection = (s: Socket) => accepted.push(s);
    server.on('connection', onConnection);
    try {
      const { port } = new URL(t.url);
      const client = connect(Number(port), '127.0.0.1');
      const body = JSON.stringify({ name: 'AFTER_ABORT', value: 'v' });
      client.write(
        `POST /v1/deployments/secrets HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${t.caller.key}\r\nPrefer: delay=300\r\n` +
          `Content-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
      );
      await expect.poll(() => accepted[0]?.bytesRead ?? 0, { timeout: 10_000, interval: 5 }).toBeGreaterThan(body.length);
      const closed = new Promise((resolve) => accepted[0]!.once('close', resolve));
      client.destroy();
      await closed;
    } finally {
      server.off('connection', onConnection);
    }
    // Past the delay (real time, as a fault's delay is), the secret was never made.
    await new Promise((resolve) => setTimeout(resolve, 600));
    const names = (await t.caller.http.get('/v1/deployments/secrets')).body.data.map((s: { name: string }) => s.name);
    expect(names).not.toContain('AFTER_ABORT');
  });

  test('a rule is removed by id, and expires after ttl_seconds', async () => {
    const { data: a } = await control.POST('/_control/faults', { body: { status: 500 } });
    await control.POST('/_control/faults', { body: { status: 500, ttl_seconds: 5 } });
    await control.DELETE('/_control/faults/{faultId}', { params: { path: { faultId: a!.id } } });
    expect((await control.GET('/_control/faults')).data!.data).toHaveLength(1);
    t.clock.advance(5_000);
    expect((await control.GET('/_control/faults')).data!.data).toEqual([]);
    expect((await t.caller.http.get('/v1/whoami')).status).toBe(200);
  });
});

describe('the request journal', () => {
  test('records what the application sent and got, newest first, never the key or a secret', async () => {
    await t.caller.http.post('/v1/chat/completions').send(chat);
    expect((await t.caller.http.post('/v1/deployments/secrets').send({ name: 'journal-secret', value: 'hunter2-value' })).status).toBe(200);
    const { data } = await control.GET('/_control/journal', {});
    const [secret, completion] = data!.data;
    expect(completion).toMatchObject({
      method: 'POST',
      path: '/v1/chat/completions',
      operation: 'createChatCompletion',
      project_id: t.caller.identity.projectId,
      status: 200,
      request_body: chat,
      response_body: { object: 'chat.completion' },
    });
    expect(secret!.operation).toBe('createSecret');
    expect(secret!.request_body).toEqual({ name: 'journal-secret', value: '[redacted]' });
    const all = JSON.stringify(data);
    expect(all).not.toContain('hunter2-value');
    expect(all).not.toContain(t.caller.key);
  });

  test('redacts credentials wherever they are: a name/value pair named as one, a value shaped like one', async () => {
    const body = {
      name: 'journal-probe',
      image: 'registry.example/app:1',
      environment_variables: [
        { name: 'HF_TOKEN', value: 'hf_abcdefghijklmnopqrstuvwxyz' },
        { name: 'LOG_LEVEL', value: 'debug' },
      ],
      args: ['--auth', 'Bearer abcdefghijklmnop', '--key=sk-0123456789abcdefghijkl'],
      description: 'sk-0123456789abcdefghijkl',
    };
    await t.caller.http.post('/v1/deployments').send(body);
    const [entry] = (await control.GET('/_control/journal')).data!.data;
    const kept = entry!.request_body as typeof body;
    expect(kept.environment_variables).toEqual([
      { name: 'HF_TOKEN', value: '[redacted]' },
      { name: 'LOG_LEVEL', value: 'debug' },
    ]);
    expect(kept.args).toEqual(['--auth', '[redacted]', '--key=sk-0123456789abcdefghijkl']);
    expect(kept.description).toBe('[redacted]');
    expect(JSON.stringify(entry)).not.toContain('hf_abcdefghijklmnopqrstuvwxyz');
  });

  test('keeps a bounded copy of any body: 100,000 levels deep or a megabyte long', async () => {
    const deep = `{"model": "x", "payload": ${'['.repeat(100_000)}${']'.repeat(100_000)}}`;
    expectError(await t.caller.http.post('/v1/queue/submit').set('Content-Type', 'application/json').send(deep), 400, { code: 'nesting_too_deep' });
    const long = { ...chat, messages: [{ role: 'user', content: 'word '.repeat(200_000) }] };
    await t.caller.http.post('/v1/chat/completions').send(long);
    const [big, nested] = (await control.GET('/_control/journal')).data!.data;
    expect(JSON.stringify(nested!.request_body).length).toBeLessThan(10_000);
    expect(nested!.request_body).toMatchObject({ model: 'x' });
    expect(big!.request_body).toMatch(/cut at 4096 characters\)$/);
  });

  test('filters by status and path, and clears', async () => {
    await t.caller.http.get('/v1/whoami');
    await t.caller.http.get('/v1/files/file-nope');
    expect((await control.GET('/_control/journal', { params: { query: { status: 404 } } })).data!.data.map((e) => e.path)).toEqual(['/v1/files/file-nope']);
    expect((await control.GET('/_control/journal', { params: { query: { path: '/v1/who' } } })).data!.data).toHaveLength(1);
    expect((await control.DELETE('/_control/journal')).data!.cleared).toBe(2);
    expect((await control.GET('/_control/journal')).data!.data).toEqual([]);
  });

  test('a process holds the newest entries up to the journal size between writes (a ring: each request costs no shift)', async () => {
    const journal = new Journal(t.services.db, 3);
    const request = (path: string, at: number): ObservedRequest => ({
      at,
      answeredAt: at,
      method: 'GET',
      path,
      operation: null,
      projectId: null,
      status: 404,
      ms: 1,
      requestBody: null,
      requestBytes: 0,
      responseBody: null,
      fault: null,
      ignoredFields: null,
    });
    const paths = async () => (await journal.list({ limit: 10 })).map((e) => e.path);
    for (const [i, p] of ['a', 'b', 'c', 'd', 'e'].entries()) journal.add(request(`/v1/ring/${p}`, i));
    await journal.flush();
    expect(await paths()).toEqual(['/v1/ring/e', '/v1/ring/d', '/v1/ring/c']);
    // Written down, the ring starts again.
    journal.add(request('/v1/ring/f', 5));
    await journal.flush();
    expect(await paths()).toEqual(['/v1/ring/f', '/v1/ring/e', '/v1/ring/d']);
  });
});

describe('reset', () => {
  test("places every table: the platform's, a project's (projectId), or a child reached through its parent", () => {
    const fields: Record<string, string[]> = {};
    for (const f of readdirSync('prisma/models').filter((n) => n.endsWith('.prisma')))
      for (const [, name, body] of readFileSync(join('prisma/models', f), 'utf8').matchAll(/^model (\w+) \{\n([\s\S]*?)\n\}/gm))
        fields[name!] = body!.split('\n').map((l) => l.trim().split(/\s+/)[0]!);
    expect(unplaced((m) => fields[m] ?? [])).toEqual([]);
  });

  test("a project's reset deletes its resources and their bytes, and nothing of another project", async () => {
    const mine = await uploadFile(t.other, 'fine-tune', [{ text: 'a' }]);
    const theirs = await uploadFile(t.caller, 'fine-tune', [{ text: 'b' }]);
    const { data } = await control.POST('/_control/reset', { body: { project_id: t.other.identity.projectId } });
    expect(data).toMatchObject({ scope: 'project', project_id: t.other.identity.projectId });
    expect(data!.deleted).toBeGreaterThan(0);
    expectError(await t.other.http.get(`/v1/files/${mine}`), 404);
    expect(existsSync(join(t.config.dataDir, 'files', t.other.identity.projectId))).toBe(false);
    expect((await t.caller.http.get(`/v1/files/${theirs}`)).status).toBe(200);
    expect((await t.other.http.get('/v1/whoami')).status).toBe(200);
  });

  test('an unknown project answers 404 naming project_id', async () => {
    expectError(await t.http.post('/_control/reset').set('Authorization', `Bearer ${TEST_CONTROL_KEY}`).send({ project_id: 'proj_nope' }), 404, {
      param: 'project_id',
    });
  });

  test('the platform reset leaves the first start: the default key works, other projects and their keys are gone, the catalogue is back', async () => {
    const other = await t.newCaller();
    await uploadFile(t.caller, 'fine-tune', [{ text: 'c' }]);
    await control.POST('/_control/faults', { body: { status: 500, match: { operations: ['listFiles'] } } });
    const { data } = await control.POST('/_control/reset', {});
    expect(data).toMatchObject({ scope: 'platform', project_id: null });
    expect((await t.caller.http.get('/v1/whoami')).status).toBe(200);
    expectError(await other.http.get('/v1/whoami'), 401, { code: 'invalid_api_key' });
    expect((await t.caller.http.get('/v1/files')).body.data).toEqual([]);
    expect(existsSync(join(t.config.dataDir, 'files'))).toBe(false);
    expect((await control.GET('/_control/faults')).data!.data).toEqual([]);
    const models = (await t.caller.http.get('/v1/models')).body;
    expect(models.length ?? models.data.length).toBeGreaterThan(10);
    expect((await t.caller.http.post('/v1/chat/completions').send(chat)).status).toBe(200);
    // Another project made afresh for the tests that follow.
    t.other = await t.newCaller();
  });
});
