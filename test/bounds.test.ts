// Bodies and schemas that would make the server work without bound: JSON nested thousands of levels deep (every
// step after parsing recurses into the body), and response_format / tool schemas whose sample would be enormous
// (minItems 1e8, arrays of arrays of arrays). Each is refused with a 400 naming the field, the server stays up, and
// what is within the documented bounds still works.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { MAX_BODY_DEPTH } from '../server/http/input.ts';
import { expectError } from './support/expect.ts';
import { startTestPlatform, type TestPlatform } from './support/platform.ts';

let t: TestPlatform;
beforeAll(async () => {
  t = await startTestPlatform();
});
afterAll(() => t?.close());

const CHAT = 'meta-llama/Llama-3.3-70B-Instruct-Turbo';
const hi = [{ role: 'user', content: 'Hello' }];

/** JSON text of `levels` nested objects around `leaf` (as text: JSON.stringify itself overflows past a few thousand). */
const nested = (levels: number, leaf = '1') => '{"a":'.repeat(levels) + leaf + '}'.repeat(levels);
const post = (path: string, text: string) =>
  t.http.post(path).set('Authorization', `Bearer ${t.caller.key}`).set('Content-Type', 'application/json').send(text);
const submit = (payload: string) => post('/v1/queue/submit', `{"model": "${CHAT}", "payload": ${payload}}`);
const withTool = (parameters: string) =>
  post(
    '/v1/chat/completions',
    `{"model": "${CHAT}", "messages": ${JSON.stringify(hi)}, "tools": [{"type": "function", "function": {"name": "f", "parameters": ${parameters}}}]}`,
  );

async function alive() {
  expect((await t.http.get('/v1/whoami').set('Authorization', `Bearer ${t.caller.key}`)).status).toBe(200);
}

describe('nesting depth: a JSON body nests at most MAX_BODY_DEPTH levels', () => {
  test('the documented limit is 64 levels', () => {
    expect(MAX_BODY_DEPTH).toBe(64);
  });

  test('a queue payload nested 5,000 levels: 400 nesting_too_deep, param payload', async () => {
    expectError(await submit(nested(5000)), 400, { type: 'invalid_request_error', code: 'nesting_too_deep', param: 'payload' });
    await alive();
  });

  test('tools[0].function.parameters nested 4,000 levels: 400 nesting_too_deep, param tools', async () => {
    expectError(await withTool(nested(4000)), 400, { type: 'invalid_request_error', code: 'nesting_too_deep', param: 'tools' });
    await alive();
  });

  test('arrays count as objects do: a body of 100,000 nested arrays is refused, param its first index', async () => {
    expectError(await post('/v1/queue/submit', `${'['.repeat(100_000)}${']'.repeat(100_000)}`), 400, { code: 'nesting_too_deep', param: '0' });
  });

  test('a queue payload at the limit is accepted, and one level more is not', async () => {
    // The body is level 1, the payload 2, its `x` 3: x holding n objects around {} reaches level 3 + n.
    const payload = (n: number) => `{"messages": ${JSON.stringify(hi)}, "x": ${nested(n, '{}')}}`;
    const atLimit = await submit(payload(MAX_BODY_DEPTH - 3));
    expect(atLimit.status, JSON.stringify(atLimit.body)).toBe(200);
    const status = await t.http
      .get('/v1/queue/status')
      .query({ model: CHAT, request_id: atLimit.body.requestId })
      .set('Authorization', `Bearer ${t.caller.key}`);
    expect(status.status).toBe(200);
    expect(status.body.inputs.x).toEqual(JSON.parse(nested(MAX_BODY_DEPTH - 3, '{}')));
    expectError(await submit(payload(MAX_BODY_DEPTH - 2)), 400, { code: 'nesting_too_deep', param: 'payload' });
  });
});
