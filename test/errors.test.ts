// The failures every operation shares, checked for each operation of the generated table: an unknown query
// parameter, malformed JSON, a body too large, a body that is not JSON, an unexpected failure inside, and a
// database outage. Plus
// the routes no operation owns.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { operations } from '../generated/operations.ts';
import { invalidTransition } from '../server/core/errors.ts';
import { expectError } from './support/expect.ts';
import { controlled, deref, fillPath, jsonBodySchema, keyless, operationIds, operationSpec, pathParamNames, withMultipart } from './support/operations.ts';
import { driverOutageError } from './support/outage-error.ts';
import { startTestPlatform, TEST_CONTROL_KEY, type TestPlatform } from './support/platform.ts';
import { sample } from './support/schema-sample.ts';

const BODY_LIMIT = 4096;
let t: TestPlatform;
let outage: unknown;
beforeAll(async () => {
  t = await startTestPlatform({ config: { bodyLimit: BODY_LIMIT } });
  outage = await driverOutageError(t.services.db.provider);
});
afterAll(() => t?.close());

// The control plane's operations take the control key.
function request(id: (typeof operationIds)[number], key = controlled(id) ? TEST_CONTROL_KEY : t.caller.key) {
  const op = operations[id];
  const params = Object.fromEntries(
    (operationSpec(id).parameters ?? [])
      .map(deref)
      .filter((p: any) => p.in === 'path')
      .map((p: any) => [p.name, String(sample(p.schema))]),
  );
  for (const n of pathParamNames(id)) params[n] ??= 'x';
  const query = Object.fromEntries(
    (operationSpec(id).parameters ?? [])
      .map(deref)
      .filter((p: any) => p.in === 'query' && p.required)
      .map((p: any) => [p.name, sample(p.schema)]),
  );
  return t.http[op.method](fillPath(id, params)).query(query).set('Authorization', `Bearer ${key}`);
}

describe.each(operationIds)('%s', (id) => {
  // A retired operation (`x-always-refused`) answers its refusal before reading anything of the request
  // (test/open-bodies.test.ts): its query and body are not checked.
  const retired = operationSpec(id)['x-always-refused'] === true;
  const hasJsonBody = !!jsonBodySchema(id) && !retired;

  test.runIf(!retired)('an unknown query parameter: 400 naming it', async () => {
    const body = jsonBodySchema(id);
    let req = request(id).query({ zz_unknown: 1 });
    if (body) req = req.send(sample(body));
    else req = withMultipart(id, req, sample);
    expectError(await req, 400, { code: 'unknown_parameter', param: 'zz_unknown' });
  });

  test.runIf(hasJsonBody)('malformed JSON: 400 invalid_json', async () => {
    expectError(await request(id).set('Content-Type', 'application/json').send('{"a": [1,'), 400, { code: 'invalid_json', param: null });
  });

  test.runIf(hasJsonBody)('a body over the limit: 413 body_too_large', async () => {
    const big = JSON.stringify({ padding: 'x'.repeat(BODY_LIMIT * 2) });
    expectError(await request(id).set('Content-Type', 'application/json').send(big), 413, { code: 'body_too_large', param: null });
  });

  test.runIf(hasJsonBody)('a body that is not JSON: 415 unsupported_media_type', async () => {
    expectError(await request(id).set('Content-Type', 'text/plain').send('hello'), 415, { code: 'unsupported_media_type', param: null });
  });

  // An operation a signed URL authorises refuses an unsigned request before touching the database: its 500 is
  // checked with a signed request where it is tested (test/files-signed-upload.test.ts). Of the control plane's,
  // those that use the database document its 500 (all but the clock's reading; its key is checked without it).
  const usesDatabase = !keyless(id) && (!controlled(id) || (operations[id].statuses as readonly number[]).includes(500));
  const keyOf = async () => (controlled(id) ? TEST_CONTROL_KEY : (await t.newCaller(t.caller.identity.projectId)).key);
  test.runIf(usesDatabase)('an unexpected failure: generic 500 with the request id, cause only in the log', async () => {
    const key = await keyOf();
    const restore = t.breakDatabase();
    try {
      let req = request(id, key);
      const body = jsonBodySchema(id);
      if (body) req = req.send(sample(body));
      const res = await req;
      expectError(res, 500, { code: 'internal_error', type: 'server_error', param: null });
      expect(res.body.error.message).toBe('The server had an error while processing your request.');
      expect(t.logs.some((l) => l.includes(res.headers['x-request-id']) && l.includes('injected by the test'))).toBe(true);
    } finally {
      restore();
    }
  });

  // The driver's own error for a database that cannot be reached (test/outages.test.ts stops a real one).
  test.runIf(usesDatabase)('a database outage: 503 database_unavailable with Retry-After, a warning in the log', async () => {
    const key = await keyOf();
    const restore = t.breakDatabase(outage);
    try {
      let req = request(id, key);
      const body = jsonBodySchema(id);
      if (body) req = req.send(sample(body));
      const res = await req;
      expectError(res, 503, { code: 'database_unavailable', type: 'server_error', param: null });
      expect(res.headers['retry-after']).toBe('1');
      const line = t.logs.find((l) => l.includes(res.headers['x-request-id']) && l.includes('request failed'));
      expect(JSON.parse(line!)).toMatchObject({ level: 40, code: 'database_unavailable' });
    } finally {
      restore();
    }
  });
});

describe('routes outside the contract', () => {
  const auth = () => ({ Authorization: `Bearer ${t.caller.key}` });

  test('an unknown route: 404 envelope', async () => {
    expectError(await t.http.get('/v1/no-such-thing').set(auth()), 404, { code: 'not_found', type: 'not_found_error' });
    expectError(await t.http.get('/elsewhere').set(auth()), 404, { code: 'not_found' });
  });

  test('a method the route does not have: 405 envelope', async () => {
    expectError(await t.http.delete('/v1/whoami').set(auth()), 405, { code: 'method_not_allowed' });
  });

  test('x-request-id: echoed when well-formed, generated otherwise', async () => {
    const mine = await t.http.get('/v1/whoami').set(auth()).set('x-request-id', 'abc-123');
    expect(mine.headers['x-request-id']).toBe('abc-123');
    const bad = await t.http.get('/v1/whoami').set(auth()).set('x-request-id', 'no spaces allowed');
    expect(bad.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
  });

  test('health, contract, reference page and changelog need no key', async () => {
    expect((await t.http.get('/healthz')).body).toEqual({ status: 'ok', database: t.services.db.provider });
    const spec = await t.http.get('/openapi.json');
    expect(spec.body.info.version).toBe('2.0.0');
    expect(spec.body.openapi).toBe('3.1.0');
    const docs = await t.http.get('/docs');
    expect(docs.text).toContain('/docs/redoc.standalone.js');
    expect(docs.text).toContain('href="/docs/changes"');
    const changes = await t.http.get('/docs/changes');
    expect(changes.type).toBe('text/html');
    expect(changes.text).toContain(`<h2>[${spec.body.info.version}]`);
    const js = await t.http.get('/docs/redoc.standalone.js');
    expect(js.status).toBe(200);
    expect(js.text.length).toBeGreaterThan(100_000);
  });

  test('health reports an unreachable database as 503', async () => {
    const restore = t.breakDatabase();
    try {
      expect((await t.http.get('/healthz')).status).toBe(503);
    } finally {
      restore();
    }
  });

  test('the Authorization header never reaches a log line', async () => {
    await t.http.get('/v1/whoami').set(auth());
    expect(t.logs.join('\n')).not.toContain(t.caller.key);
  });
});

describe("messages name a kind with its article: 'an' before a vowel", () => {
  const auth = () => ({ Authorization: `Bearer ${t.caller.key}` });
  const EMBEDDING = 'BAAI/bge-base-en-v1.5';

  test('an embedding model where a rerank, video or transcription model is needed: "is an embedding model"', async () => {
    const rerank = await t.http
      .post('/v1/rerank')
      .set(auth())
      .send({ model: EMBEDDING, query: 'q', documents: ['d'] });
    expectError(rerank, 400, { code: 'model_not_available', param: 'model' });
    const video = await t.http.post('/v2/videos').set(auth()).send({ model: EMBEDDING, prompt: 'p' });
    expectError(video, 400, { code: 'model_not_available', param: 'model' });
    const audio = await t.http.post('/v1/audio/transcriptions').set(auth()).field('model', EMBEDDING).field('file', 'https://example.com/a.wav');
    expectError(audio, 400, { code: 'model_not_available', param: 'model' });
    for (const res of [rerank, video, audio]) {
      expect(res.body.error.message).toContain(`'${EMBEDDING}' is an embedding model`);
      expect(res.body.error.message).not.toMatch(/\ba [aeiou]/i);
    }
  });

  test('a state machine names its subject with its article: "An evaluation in state ...", "A video in state ..."', () => {
    expect(invalidTransition('evaluation', 'completed', 'cancel').message).toBe('An evaluation in state completed cannot cancel.');
    expect(invalidTransition('upload job', 'Complete', 'start').message).toBe('An upload job in state Complete cannot start.');
    expect(invalidTransition('video', 'completed', 'render').message).toBe('A video in state completed cannot render.');
  });
});
