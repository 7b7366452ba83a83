// Bodies and schemas that would make the server work without bound: JSON nested thousands of levels deep (every
// step after parsing recurses into the body), and response_format / tool schemas whose sample would be enormous
// (minItems 1e8, arrays of arrays of arrays). Each is refused with a 400 naming the field, the server stays up, and
// what is within the documented bounds still works.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { closePools, offLoopCompleted, worker } from '../server/engines/pool.ts';
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

describe('schema sampling: the local engine samples within documented bounds', () => {
  const respond = (schema: object) =>
    t.http
      .post('/v1/chat/completions')
      .set('Authorization', `Bearer ${t.caller.key}`)
      .send({ model: CHAT, messages: hi, response_format: { type: 'json_schema', json_schema: { name: 'x', schema } } });
  const call = (parameters: object) =>
    t.http
      .post('/v1/chat/completions')
      .set('Authorization', `Bearer ${t.caller.key}`)
      .send({ model: CHAT, messages: hi, tools: [{ type: 'function', function: { name: 'f', parameters } }], tool_choice: 'required' });
  const array = (minItems: number, items: object = { type: 'integer' }) => ({ type: 'array', items, minItems });
  /** 400 unsupported_json_schema naming `param`, its message saying which bound (not the sampler's failure). */
  const beyond = (res: any, param: string, words: RegExp) => {
    expectError(res, 400, { type: 'invalid_request_error', code: 'unsupported_json_schema', param });
    expect(res.body.error.message).toMatch(/asks for more than the local engine samples/);
    expect(res.body.error.message).toMatch(words);
  };

  test('minItems 100,000,000 (17.5 s and 1.7 GB, then a 500, before): 400, in response_format and in tools', async () => {
    beyond(await respond(array(1e8)), 'response_format', /100,000,000 values, over the 10,000/);
    beyond(await call({ type: 'object', properties: { xs: array(1e8) }, required: ['xs'] }), 'tools', /over the 10,000/);
    await alive();
  });

  test('arrays of arrays multiply: minItems 10,000 x 10,000 x 10 (out of memory, before) is 400', async () => {
    beyond(await respond(array(10_000, array(10_000, array(10)))), 'response_format', /values, over the 10,000/);
    await alive();
  });

  test('$refs count where they are used: a chain of 40 definitions, each two of the one before, is 400', async () => {
    const $defs: Record<string, object> = { d0: { type: 'integer' } };
    for (let i = 1; i <= 40; i++)
      $defs[`d${i}`] = { type: 'object', properties: { l: { $ref: `#/$defs/d${i - 1}` }, r: { $ref: `#/$defs/d${i - 1}` } }, required: ['l', 'r'] };
    beyond(await respond({ $defs, $ref: '#/$defs/d40' }), 'response_format', /subschemas to sample/);
    await alive();
  });

  test('a chain of 200 $refs is 400 (nested more than 128 deep); a recursive $ref is sampled as the sampler can', async () => {
    const $defs: Record<string, object> = { d200: { type: 'string' } };
    for (let i = 0; i < 200; i++) $defs[`d${i}`] = { $ref: `#/$defs/d${i + 1}` };
    beyond(await respond({ $defs, $ref: '#/$defs/d0' }), 'response_format', /nest more than 128 deep/);
    // A tree of optional fields: the sampler samples the node it is already inside as {}, and the sample is valid.
    const tree = {
      $defs: {
        node: { type: 'object', properties: { name: { type: 'string' }, children: { type: 'array', items: { $ref: '#/$defs/node' } } } },
      },
      $ref: '#/$defs/node',
    };
    const res = await respond(tree);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(JSON.parse(res.body.choices[0].message.content)).toEqual({ name: 'string', children: [{}] });
  });

  test('minLength 100,000,000 is 400; so is a sample whose JSON is over 1 MB (5,000 copies of a 1,000-character default)', async () => {
    beyond(await respond({ type: 'string', minLength: 1e8 }), 'response_format', /minLength add up to 100,000,000 characters/);
    beyond(await respond(array(5000, { type: 'string', default: 'x'.repeat(1000) })), 'response_format', /longer than 1,000,000 bytes/);
    await alive();
  });

  test('a schema of more than 1,000 objects is refused before it is compiled (2,000 properties took Ajv seconds; 5,000 overflowed its stack)', async () => {
    const properties = Object.fromEntries(Array.from({ length: 2000 }, (_, i) => [`p${i}`, { type: 'string' }]));
    beyond(await call({ type: 'object', properties }), 'tools', /more than 1,000 JSON objects/);
    // 998 properties, the map and the schema: 1,000 objects, compiled and sampled.
    const within = Object.fromEntries(Array.from({ length: 998 }, (_, i) => [`p${i}`, { type: 'integer' }]));
    const res = await call({ type: 'object', properties: within, required: Object.keys(within) });
    expect(res.status, JSON.stringify(res.body).slice(0, 300)).toBe(200);
    expect(Object.keys(JSON.parse(res.body.choices[0].message.tool_calls[0].function.arguments))).toHaveLength(998);
  });

  test('arrays are bounded by their entries, all together: enum of 900,000 values (200 after 3 s, before) and required of 20,000 names are 400', async () => {
    beyond(
      await respond({ type: 'string', enum: Array.from({ length: 900_000 }, (_, i) => `v${i}`) }),
      'response_format',
      /arrays \(enum values, required names and the like\) hold more than 10,000 entries/,
    );
    beyond(await call({ type: 'object', required: Array.from({ length: 20_000 }, (_, i) => `k${i}`) }), 'tools', /more than 10,000 entries/);
    // Within: 10,000 entries in all (an enum of 9,000 and a required of 1,000).
    const keys = Array.from({ length: 1_000 }, (_, i) => `k${i}`);
    const res = await respond({
      type: 'object',
      properties: { pick: { enum: Array.from({ length: 9_000 }, (_, i) => i) } },
      required: keys.slice(0, 999).concat('pick'),
    });
    // 999 required names the sampler cannot fill (no properties for them): valid JSON Schema, not satisfiable by a sample.
    expectError(res, 400, { code: 'unsupported_json_schema', param: 'response_format' });
    expect(res.body.error.message).not.toMatch(/asks for more/);
  });

  test("a schema's strings and property names hold at most 1,000,000 characters together", async () => {
    beyond(await respond({ type: 'string', description: 'd'.repeat(1_000_001) }), 'response_format', /more than 1,000,000 characters/);
    const res = await respond({ type: 'string', description: 'd'.repeat(999_000) });
    expect(res.status, JSON.stringify(res.body).slice(0, 300)).toBe(200);
  });

  test('a schema is compiled, sampled and checked off the event loop (a worker thread), once per request whatever n', async () => {
    const before = offLoopCompleted();
    const props = Object.fromEntries(Array.from({ length: 900 }, (_, i) => [`p${i}`, { type: 'string' }]));
    const res = await t.http
      .post('/v1/chat/completions')
      .set('Authorization', `Bearer ${t.caller.key}`)
      .send({
        model: CHAT,
        messages: hi,
        n: 8,
        response_format: { type: 'json_schema', json_schema: { name: 'x', schema: { type: 'object', properties: props } } },
      });
    expect(res.status, JSON.stringify(res.body).slice(0, 300)).toBe(200);
    expect(res.body.choices).toHaveLength(8);
    expect(new Set(res.body.choices.map((c: any) => c.message.content)).size).toBe(1);
    expect(offLoopCompleted() - before).toBe(1);
  });

  test('a worker thread that cannot start (its file missing) fails the request with a 500, the server alive; the next pool starts again', async () => {
    const schema = { response_format: { type: 'json_schema', json_schema: { name: 'x', schema: { type: 'object', properties: { a: { type: 'string' } } } } } };
    const ask = () =>
      t.http
        .post('/v1/chat/completions')
        .set('Authorization', `Bearer ${t.caller.key}`)
        .send({ model: CHAT, messages: hi, ...schema });
    const file = worker.file;
    await closePools();
    worker.file = new URL('./no-such-pool-worker.js', file).href;
    try {
      const failed = await ask();
      expectError(failed, 500, { code: 'internal_error', param: null });
      expect(failed.body.error.message).not.toMatch(/pool-worker|\//);
    } finally {
      worker.file = file;
    }
    expect((await t.http.get('/healthz')).status).toBe(200);
    expect((await ask()).status).toBe(200);
  });

  test("a pattern that backtracks (`^(\\w+)*x$`, minLength 40: hours with JavaScript's engine) is checked in linear time: answered, the server alive", async () => {
    const res = await respond({ type: 'object', properties: { s: { type: 'string', minLength: 40, pattern: '^(\\w+)*x$' } }, required: ['s'] });
    // Whether the sample satisfies the pattern or not, the answer comes at once: 200 with a valid object, or 400.
    if (res.status === 200) expect(JSON.parse(res.body.choices[0].message.content).s).toMatch(/^\w{39,}x$/);
    else expectError(res, 400, { code: 'unsupported_json_schema', param: 'response_format' });
    await alive();
  });

  test('a pattern of syntax linear matching cannot run (lookahead, backreferences) is 400 naming the schema', async () => {
    const res = await call({ type: 'object', properties: { s: { type: 'string', pattern: '^(?=a)a+$' } }, required: ['s'] });
    expectError(res, 400, { type: 'invalid_request_error', code: 'invalid_json_schema', param: 'tools' });
    expect(res.body.error.message).toMatch(/unsupported Perl syntax/);
  });

  test('within the bounds: 10,000 items, and an object schema nested 30 deep (the body allows 64 levels), are sampled and valid', async () => {
    const items = await respond(array(10_000));
    expect(items.status, JSON.stringify(items.body).slice(0, 300)).toBe(200);
    expect(JSON.parse(items.body.choices[0].message.content)).toHaveLength(10_000);
    let deep: object = { type: 'string', minLength: 1 };
    for (let i = 0; i < 30; i++) deep = { type: 'object', properties: { a: deep }, required: ['a'] };
    const res = await respond(deep);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    let value = JSON.parse(res.body.choices[0].message.content);
    for (let i = 0; i < 30; i++) value = value.a;
    expect(typeof value).toBe('string');
  });
});
