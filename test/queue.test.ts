// Queue jobs: submit / status / cancel / metrics / clear; the requirements' table move by move (claim sets
// claimed_at; done sets outputs and done_at; an explicit fail is not retried; a claim timeout returns the job to
// pending with retries + 1 while retries < 3, then failed for good; info keeps the retry history); claims by
// priority then age; the worker API's fencing (claim_token); the built-in chat worker on the runner; a restart.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { claimJobs } from '../server/modules/queue/machine.ts';
import { expectError } from './support/expect.ts';
import { startTestPlatform, type TestPlatform } from './support/platform.ts';

const CHAT = 'meta-llama/Llama-3.3-70B-Instruct-Turbo';
let n = 0;
/** A queue of its own per test, without a built-in worker. */
const newQueue = () => `acme/queue-${++n}-${Date.now()}`;

let t: TestPlatform;
beforeAll(async () => {
  t = await startTestPlatform({ config: { durations: { queue_claim_timeout: 10_000 } } });
});
afterAll(() => t?.close());

const submit = (body: object) => t.caller.http.post('/v1/queue/submit').send(body);
const status = (model: string, request_id: string) => t.caller.http.get('/v1/queue/status').query({ model, request_id });
const claim = (body: object) => t.caller.http.post('/v1/queue/claim').send(body);
const job = async (model: string, id: string) => (await status(model, id)).body;

async function submitted(model: string, extra: object = {}) {
  const res = await submit({ model, payload: { x: 1 }, ...extra });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.requestId as string;
}

describe('submit and status', () => {
  test('submit answers requestId; the job is pending with its inputs, info, priority and no outputs', async () => {
    const model = newQueue();
    const res = await submit({ model, payload: { prompt: 'hi' }, info: { user: 'u1' }, priority: 5 });
    expect(res.status).toBe(200);
    expect(Object.keys(res.body)).toEqual(['requestId']);
    const s = await status(model, res.body.requestId);
    expect(s.status).toBe(200);
    expect(s.body).toMatchObject({
      request_id: res.body.requestId,
      model,
      status: 'pending',
      priority: 5,
      retries: 0,
      inputs: { prompt: 'hi' },
      info: { user: 'u1' },
      warnings: [],
    });
    expect(s.body.outputs).toBeUndefined();
    expect(s.body.claimed_at).toBeUndefined();
    expect(s.body.done_at).toBeUndefined();
    expect(Date.parse(s.body.created_at)).toBe(Math.floor(t.clock.now()));
  });

  test("a deprecated model id: the job is in its model's queue, and warnings carries the notice", async () => {
    const res = await submit({ model: 'Salesforce/Llama-Rank-V1', payload: { q: 1 } });
    expect(res.status).toBe(200);
    const j = await job('Salesforce/Llama-Rank-V1', res.body.requestId);
    expect(j.model).toBe('Salesforce/Llama-Rank-v1');
    expect(j.warnings).toEqual([expect.stringMatching(/'Salesforce\/Llama-Rank-V1' is a deprecated id of the model 'Salesforce\/Llama-Rank-v1'/)]);
    expect((await job('Salesforce/Llama-Rank-v1', res.body.requestId)).request_id).toBe(res.body.requestId);
  });

  test('bad input answers 400 naming the field, and stores nothing', async () => {
    const model = newQueue();
    expectError(await submit({ model }), 400, { param: 'payload' });
    expectError(await submit({ model, payload: [] }), 400, { param: 'payload' });
    expectError(await submit({ model, payload: {}, priority: 1.5 }), 400, { param: 'priority' });
    expectError(await submit({ model: '', payload: {} }), 400, { param: 'model' });
    expectError(await submit({ model: 'x'.repeat(257), payload: {} }), 400, { param: 'model' });
    expect(await t.services.db.prisma.queueJob.count({ where: { model } })).toBe(0);
    expectError(await t.caller.http.get('/v1/queue/status').query({ model }), 400, { param: 'request_id' });
  });

  test('status by another model, an unknown id, or another project: 404', async () => {
    const model = newQueue();
    const id = await submitted(model);
    expectError(await status('acme/other', id), 404, { param: 'request_id', code: 'not_found' });
    expectError(await status(model, 'req_nope'), 404, { param: 'request_id' });
    expectError(await t.other.http.get('/v1/queue/status').query({ model, request_id: id }), 404, { param: 'request_id' });
  });
});

describe('the state machine', () => {
  test('claim sets claimed_at (running); complete sets outputs and done_at (done)', async () => {
    const model = newQueue();
    const id = await submitted(model);
    t.clock.advance(1000);
    const c = await claim({ model, worker_id: 'w1' });
    expect(c.status).toBe(200);
    expect(c.body.object).toBe('list');
    expect(c.body.data).toHaveLength(1);
    const claimed = c.body.data[0];
    expect(claimed).toMatchObject({ request_id: id, status: 'running', claimed_at: new Date(t.clock.now()).toISOString() });
    expect(claimed.claim_expires_at).toBe(new Date(t.clock.now() + 10_000).toISOString());
    expect((await job(model, id)).status).toBe('running');
    expect((await t.caller.http.get('/v1/queue/metrics').query({ model })).body).toEqual({ messages_running: 1, messages_waiting: 0, total_jobs: 1 });

    t.clock.advance(500);
    const done = await t.caller.http.post('/v1/queue/complete').send({ model, request_id: id, claim_token: claimed.claim_token, outputs: { answer: 42 } });
    expect(done.status).toBe(200);
    expect(done.body).toMatchObject({ status: 'done', outputs: { answer: 42 }, done_at: new Date(t.clock.now()).toISOString() });
    // A retried completion by the same claim answers the same job.
    const again = await t.caller.http.post('/v1/queue/complete').send({ model, request_id: id, claim_token: claimed.claim_token, outputs: { answer: 42 } });
    expect(again.body).toEqual(done.body);
    expect((await t.caller.http.get('/v1/queue/metrics').query({ model })).body).toEqual({ messages_running: 0, messages_waiting: 0, total_jobs: 0 });
    // Nothing leaves done.
    expectError(await t.caller.http.post('/v1/queue/cancel').send({ model, request_id: id }), 409, { code: 'invalid_state_transition', param: null });
    expectError(await t.caller.http.post('/v1/queue/fail').send({ model, request_id: id, claim_token: claimed.claim_token }), 409, {
      code: 'claim_lost',
      param: 'claim_token',
    });
  });

  test('an explicit fail is final: failed, done_at, info.error, never retried', async () => {
    const model = newQueue();
    const id = await submitted(model, { info: { k: 'v' } });
    const [c] = (await claim({ model })).body.data;
    const res = await t.caller.http
      .post('/v1/queue/fail')
      .send({ model, request_id: id, claim_token: c.claim_token, error: { message: 'bad input', code: 'bad' } });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ status: 'failed', retries: 0, info: { k: 'v', error: { message: 'bad input', code: 'bad' } } });
    expect(res.body.done_at).toBeDefined();
    await t.advance(60_000);
    expect(await job(model, id)).toMatchObject({ status: 'failed', retries: 0 });
    expect((await claim({ model })).body.data).toEqual([]);
  });

  test('claim timeouts: back to pending with retries + 1 and the history in info, three times; the fourth fails it for good', async () => {
    const model = newQueue();
    const id = await submitted(model, { info: { mine: true } });
    const tokens: string[] = [];
    for (let retry = 1; retry <= 3; retry++) {
      const [c] = (await claim({ model, worker_id: `w${retry}`, claim_timeout_seconds: 2 })).body.data;
      expect(c.request_id).toBe(id);
      tokens.push(c.claim_token);
      await t.advance(1999);
      expect((await job(model, id)).status).toBe('running');
      await t.advance(1);
      const j = await job(model, id);
      expect(j).toMatchObject({ status: 'pending', retries: retry, info: { mine: true } });
      expect(j.info.retry_history).toHaveLength(retry);
      expect(j.info.retry_history[retry - 1]).toMatchObject({ retry, worker_id: `w${retry}`, reason: 'claim_timeout' });
      expect(j.done_at).toBeUndefined();
    }
    // The timed-out claims can no longer touch the job.
    expectError(await t.caller.http.post('/v1/queue/complete').send({ model, request_id: id, claim_token: tokens[0], outputs: {} }), 409, {
      code: 'claim_lost',
    });
    expectError(await t.caller.http.post('/v1/queue/heartbeat').send({ model, request_id: id, claim_token: tokens[2] }), 409, { code: 'claim_lost' });
    (await claim({ model, claim_timeout_seconds: 2 })).body.data;
    await t.advance(2000);
    const j = await job(model, id);
    expect(j).toMatchObject({ status: 'failed', retries: 3, info: { error: { code: 'retries_exhausted' } } });
    expect(j.done_at).toBe(new Date(t.clock.now()).toISOString());
    expect((await claim({ model })).body.data).toEqual([]);
  });

  test('heartbeats keep a claim alive and merge info (progress)', async () => {
    const model = newQueue();
    const id = await submitted(model);
    const [c] = (await claim({ model, claim_timeout_seconds: 2 })).body.data;
    for (let i = 1; i <= 3; i++) {
      await t.advance(1500);
      const hb = await t.caller.http.post('/v1/queue/heartbeat').send({ model, request_id: id, claim_token: c.claim_token, info: { progress: i / 4 } });
      expect(hb.status).toBe(200);
      expect(hb.body).toMatchObject({ status: 'running', info: { progress: i / 4 } });
    }
    await t.advance(1500);
    expect(await job(model, id)).toMatchObject({ status: 'running', retries: 0 });
    await t.advance(600);
    expect(await job(model, id)).toMatchObject({ status: 'pending', retries: 1 });
    expectError(await t.caller.http.post('/v1/queue/heartbeat').send({ model, request_id: 'req_nope', claim_token: 'x' }), 404, { param: 'request_id' });
  });

  test('cancel: only from pending (409 naming the status otherwise, not retried by clients); a retried cancel answers canceled', async () => {
    const model = newQueue();
    const a = await submitted(model);
    const b = await submitted(model);
    const res = await t.caller.http.post('/v1/queue/cancel').send({ model, request_id: a });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ status: 'canceled' });
    expect(await job(model, a)).toMatchObject({ status: 'canceled' });
    expect((await job(model, a)).done_at).toBeDefined();
    expect((await t.caller.http.post('/v1/queue/cancel').send({ model, request_id: a })).body).toEqual({ status: 'canceled' });
    await claim({ model });
    const refused = await t.caller.http.post('/v1/queue/cancel').send({ model, request_id: b });
    expectError(refused, 409, { code: 'invalid_state_transition', param: null });
    expect(refused.body.error.message).toMatch(/running/);
    expect(refused.headers['x-should-retry']).toBe('false');
    expect((await job(model, b)).status).toBe('running');
    expectError(await t.caller.http.post('/v1/queue/cancel').send({ model, request_id: 'req_nope' }), 404, { param: 'request_id' });
    expectError(await t.caller.http.post('/v1/queue/cancel').send({ model }), 400, { param: 'request_id' });
  });

  test('clear cancels the pending jobs of a model only; metrics count waiting and running', async () => {
    const model = newQueue();
    const other = newQueue();
    for (let i = 0; i < 4; i++) await submitted(model);
    const keep = await submitted(other);
    await claim({ model });
    expect((await t.caller.http.get('/v1/queue/metrics').query({ model })).body).toEqual({ messages_running: 1, messages_waiting: 3, total_jobs: 4 });
    const res = await t.caller.http.post('/v1/queue/clear').send({ model });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ canceled_count: 3 });
    expect((await t.caller.http.get('/v1/queue/metrics').query({ model })).body).toEqual({ messages_running: 1, messages_waiting: 0, total_jobs: 1 });
    expect((await job(other, keep)).status).toBe('pending');
    // Another project's clear touches nothing here.
    expect((await t.other.http.post('/v1/queue/clear').send({ model: other })).body).toEqual({ canceled_count: 0 });
    expectError(await t.caller.http.post('/v1/queue/clear').send({}), 400, { param: 'model' });
    expectError(await t.caller.http.get('/v1/queue/metrics'), 400, { param: 'model' });
  });
});

describe('claims', () => {
  test('priority orders claims: higher first, then oldest', async () => {
    const model = newQueue();
    const ids: Record<string, string> = {};
    for (const [name, priority] of [
      ['low1', 0],
      ['high1', 10],
      ['mid', 5],
      ['high2', 10],
      ['low2', 0],
      ['neg', -3],
    ] as const) {
      ids[name] = await submitted(model, { priority });
      t.clock.advance(1);
    }
    const order: string[] = [];
    for (;;) {
      const batch = (await claim({ model, max_jobs: 2 })).body.data as { request_id: string }[];
      if (!batch.length) break;
      order.push(...batch.map((j) => Object.keys(ids).find((k) => ids[k] === j.request_id)!));
    }
    expect(order).toEqual(['high1', 'high2', 'mid', 'low1', 'low2', 'neg']);
  });

  test('concurrent claims never hand out a job twice', async () => {
    const model = newQueue();
    for (let i = 0; i < 40; i++) await submitted(model);
    const { db } = t.services;
    const results = await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        claimJobs(db, t.clock, { projectId: t.caller.identity.projectId, model, limit: 7, timeoutMs: 10_000, workerId: `w${i}` }),
      ),
    );
    const ids = results.flat().map((j) => j.id);
    expect(ids).toHaveLength(40);
    expect(new Set(ids).size).toBe(40);
  });

  test('another project claims nothing of this one; bad claims answer 400', async () => {
    const model = newQueue();
    await submitted(model);
    expect((await t.other.http.post('/v1/queue/claim').send({ model })).body.data).toEqual([]);
    expectError(await claim({ model, max_jobs: 0 }), 400, { param: 'max_jobs' });
    expectError(await claim({ model, claim_timeout_seconds: 0 }), 400, { param: 'claim_timeout_seconds' });
    expectError(await t.caller.http.post('/v1/queue/complete').send({ model, request_id: 'x', claim_token: 'y' }), 400, { param: 'outputs' });
    expectError(await t.caller.http.post('/v1/queue/fail').send({ model, request_id: 'x' }), 400, { param: 'claim_token' });
    expectError(await t.caller.http.post('/v1/queue/heartbeat').send({ model, request_id: 'x' }), 400, { param: 'claim_token' });
  });

  test('complete and fail of an unknown job: 404', async () => {
    const model = newQueue();
    expectError(await t.caller.http.post('/v1/queue/complete').send({ model, request_id: 'req_nope', claim_token: 'y', outputs: {} }), 404, {
      param: 'request_id',
    });
    expectError(await t.caller.http.post('/v1/queue/fail').send({ model, request_id: 'req_nope', claim_token: 'y' }), 404, { param: 'request_id' });
  });
});

describe('built-in workers', () => {
  test("a chat model's job is run by the built-in worker through the local chat engine", async () => {
    const id = await submitted(CHAT, { payload: { messages: [{ role: 'user', content: 'Hello queue' }], max_tokens: 200 }, info: { tag: 'x' } });
    expect((await job(CHAT, id)).status).toBe('pending');
    await t.services.runner.drain();
    const j = await job(CHAT, id);
    expect(j).toMatchObject({ status: 'done', retries: 0, info: { tag: 'x' } });
    expect(j.claimed_at).toBeDefined();
    expect(j.done_at).toBeDefined();
    expect(j.outputs.choices[0].text).toMatch(/local engine.*Hello queue/);
    expect(j.outputs.usage.total_tokens).toBe(j.outputs.usage.prompt_tokens + j.outputs.usage.completion_tokens);
  });

  test('the built-in worker takes jobs by priority', async () => {
    const low = await submitted(CHAT, { payload: { messages: [{ role: 'user', content: 'low' }] }, priority: 1 });
    const high = await submitted(CHAT, { payload: { messages: [{ role: 'user', content: 'high' }] }, priority: 9 });
    const [first] = await t.services.runner.claim(1);
    await t.services.runner.process(first!);
    expect((await job(CHAT, high)).status).toBe('done');
    expect((await job(CHAT, low)).status).toBe('pending');
    await t.services.runner.drain();
    expect((await job(CHAT, low)).status).toBe('done');
  });

  test("a chat model's payload is checked at submit (400 naming payload.<field>)", async () => {
    expectError(await submit({ model: CHAT, payload: { prompt: 'no messages' } }), 400, { param: 'payload.messages' });
    expectError(await submit({ model: CHAT, payload: { messages: [{ role: 'user' }] } }), 400, { param: 'payload.messages.0' });
    expectError(await submit({ model: CHAT, payload: { messages: [{ role: 'user', content: 'x' }], max_tokens: 0 } }), 400, { param: 'payload.max_tokens' });
  });

  test('a built-in job whose worker died is returned to the queue by its claim timeout and done by the next worker', async () => {
    const id = await submitted(CHAT, { payload: { messages: [{ role: 'user', content: 'survive' }] } });
    // A worker claims it and dies: nothing heartbeats.
    await claimJobs(t.services.db, t.clock, { projectId: t.caller.identity.projectId, model: CHAT, limit: 1, timeoutMs: 10_000, workerId: 'doomed' });
    await t.services.runner.drain(); // the built-in item finds nothing pending
    expect((await job(CHAT, id)).status).toBe('running');
    await t.advance(10_000);
    const j = await job(CHAT, id);
    expect(j).toMatchObject({ status: 'done', retries: 1 });
    expect(j.info.retry_history[0]).toMatchObject({ worker_id: 'doomed' });
  });

  test('a restart keeps every job where it was', async () => {
    const p = await startTestPlatform({ config: { durations: { queue_claim_timeout: 10_000 } } });
    try {
      const model = newQueue();
      const post = (path: string, body: object) => p.caller.http.post(path).send(body);
      const get = async (m: string, id: string) => (await p.caller.http.get('/v1/queue/status').query({ model: m, request_id: id })).body;
      const ids: string[] = [];
      for (let i = 0; i < 3; i++) {
        ids.push((await post('/v1/queue/submit', { model, payload: { i } })).body.requestId);
        p.clock.advance(1);
      }
      const [canceled, running, pending] = ids;
      await post('/v1/queue/cancel', { model, request_id: canceled }).expect(200);
      const [c] = (await post('/v1/queue/claim', { model, claim_timeout_seconds: 5 })).body.data;
      expect(c.request_id).toBe(running);
      const chat = (await post('/v1/queue/submit', { model: CHAT, payload: { messages: [{ role: 'user', content: 'after restart' }] } })).body.requestId;
      await p.restart();
      expect((await get(model, canceled!)).status).toBe('canceled');
      expect((await get(model, pending!)).status).toBe('pending');
      expect((await get(model, running!)).status).toBe('running');
      const done = await post('/v1/queue/complete', { model, request_id: running, claim_token: c.claim_token, outputs: { ok: true } });
      expect(done.body.status).toBe('done');
      await p.advance(0);
      expect((await get(CHAT, chat)).status).toBe('done');
    } finally {
      await p.close();
    }
  });
});
