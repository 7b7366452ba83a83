// Chat completions and completions: every field the platform accepts, honoured by the
// local engine where it can be (streaming, stop, max_tokens, n, seed, response_format, tools, logprobs, echo,
// context length), the upstream engine relaying another instance of this server, and bad input.

import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { specPath } from '../server/core/paths.ts';
import { countTokens, encode } from '../server/engines/tokens.ts';
import { type ScratchDatabase, scratchDatabase } from './support/database.ts';
import { H100, MODEL, seededV1Endpoints } from './support/endpoints.ts';
import { expectError } from './support/expect.ts';
import { startTestPlatform, type TestPlatform } from './support/platform.ts';
import { type ServerProcess, startServerProcess } from './support/server-process.ts';

const CHAT = 'meta-llama/Llama-3.3-70B-Instruct-Turbo';
const BASE = 'mistralai/Mixtral-8x7B-v0.1'; // a language model: completions only
const SMALL = 'meta-llama/Llama-2-7b-hf'; // 4096 tokens of context
const hi = [{ role: 'user', content: 'Hello there' }];

let t: TestPlatform;
const auth = () => ({ Authorization: `Bearer ${t.caller.key}` });
const chat = (body: object) => t.http.post('/v1/chat/completions').set(auth()).send(body);
const complete = (body: object) => t.http.post('/v1/completions').set(auth()).send(body);

// Streamed chunks are not response-validated by the server (only JSON bodies are), so the tests check them
// against the spec's chunk schemas.
const specAjv = new Ajv2020({ strict: false });
specAjv.addSchema(JSON.parse(readFileSync(specPath, 'utf8')), 'spec');
const validChunk = (schema: 'ChatCompletionChunk' | 'CompletionChunk', chunk: unknown) => {
  const validate = specAjv.getSchema(`spec#/components/schemas/${schema}`)!;
  expect(validate(chunk), `${JSON.stringify(chunk)}: ${JSON.stringify(validate.errors)}`).toBe(true);
};

/** The `data:` events of a streamed answer, `[DONE]` last. */
async function events(path: string, body: object): Promise<{ status: number; type: string | null; data: any[]; done: boolean }> {
  const res = await fetch(`${t.url}${path}`, { method: 'POST', headers: { ...auth(), 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
  const text = await res.text();
  const data = text
    .split('\n\n')
    .filter((b) => b.startsWith('data: '))
    .map((b) => b.slice(6));
  const done = data.at(-1) === '[DONE]';
  return { status: res.status, type: res.headers.get('content-type'), data: data.filter((d) => d !== '[DONE]').map((d) => JSON.parse(d)), done };
}

beforeAll(async () => {
  t = await startTestPlatform();
});
afterAll(() => t?.close());

describe('chat completions on the local engine', () => {
  test('usage counts the transcript and the answer with the real tokenizer; the engine says it is local', async () => {
    const res = await chat({ model: CHAT, messages: [{ role: 'system', content: 'Be brief.' }, ...hi] });
    expect(res.status).toBe(200);
    expect(res.headers['x-inference-engine']).toBe('local');
    expect(res.body.system_fingerprint).toBe('local-chat-engine-2');
    const text = res.body.choices[0].message.content;
    expect(text).toMatch(/^\[local engine\]/);
    expect(res.body.usage.prompt_tokens).toBe(countTokens('system: Be brief.\nuser: Hello there'));
    expect(res.body.usage.completion_tokens).toBe(countTokens(text));
    expect(res.body.usage.total_tokens).toBe(res.body.usage.prompt_tokens + res.body.usage.completion_tokens);
    expect(res.body.prompt).toEqual([]);
    expect(res.body.choices[0].logprobs).toBeNull();
    expect(res.body.choices[0]).not.toHaveProperty('seed');
  });

  test('the same request gives the same answer; seed is echoed; sampling parameters are accepted', async () => {
    const body = {
      model: CHAT,
      messages: hi,
      seed: 42,
      temperature: 1.3,
      top_p: 0.5,
      top_k: 40,
      min_p: 0.1,
      repetition_penalty: 1.1,
      presence_penalty: 0.5,
      frequency_penalty: 0.5,
      logit_bias: { '100': -5 },
      n: 2,
    };
    const a = await chat(body);
    const b = await chat(body);
    expect(a.status).toBe(200);
    expect(a.body.choices.map((c: any) => c.message.content)).toEqual(b.body.choices.map((c: any) => c.message.content));
    expect(a.body.choices.map((c: any) => c.seed)).toEqual([42, 42]);
    expect(a.body.choices[1].message.content).toContain('(choice 2 of 2)');
  });

  test('n up to the platform maximum of 128; 129 is 400', async () => {
    const res = await chat({ model: CHAT, messages: hi, n: 128, max_tokens: 3 });
    expect(res.body.choices).toHaveLength(128);
    expect(res.body.usage.completion_tokens).toBe(128 * 3);
    expectError(await chat({ model: CHAT, messages: hi, n: 129 }), 400, { param: 'n' });
  });

  test('stop as a string or a list; max_tokens 0 gives an empty completion', async () => {
    const one = await chat({ model: CHAT, messages: hi, stop: 'engine' });
    expect(one.body.choices[0]).toMatchObject({ finish_reason: 'stop', message: { content: '[local ' } });
    const none = await chat({ model: CHAT, messages: hi, max_tokens: 0 });
    expect(none.body.choices[0]).toMatchObject({ finish_reason: 'length', message: { content: '' } });
    expect(none.body.usage.completion_tokens).toBe(0);
  });

  test('non-text parts, role function, reasoning and template fields are accepted; skipped parts are reported', async () => {
    const res = await chat({
      model: CHAT,
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'What is this?' },
            { type: 'image_url', image_url: { url: 'https://example.com/a.png' } },
            { type: 'video_url', video_url: { url: 'https://example.com/a.mp4' } },
          ],
        },
        { role: 'assistant', content: null, function_call: { name: 'look', arguments: '{}' } },
        { role: 'function', name: 'look', content: 'a cat' },
        {
          role: 'user',
          content: [
            { type: 'input_audio', input_audio: { data: 'AAAA', format: 'wav' } },
            { type: 'audio_url', audio_url: { url: 'https://example.com/a.wav' } },
            { type: 'text', text: 'And this?' },
          ],
        },
      ],
      reasoning: { enabled: true },
      reasoning_effort: 'low',
      chat_template_kwargs: { enable_thinking: false },
      compliance: 'hipaa',
      parallel_tool_calls: false,
      user: 'u-1',
    });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.choices[0].message.content).toContain('"And this?"');
    expect(res.body.warnings).toEqual([{ message: expect.stringMatching(/^4 image, video or audio content part\(s\) were not read/) }]);
  });

  test('safety_model must be a moderation model; the local engine says it does not apply it', async () => {
    const res = await chat({ model: CHAT, messages: hi, safety_model: 'Meta-Llama/Llama-Guard-7b' });
    expect(res.status).toBe(200);
    expect(res.body.warnings[0].message).toMatch(/safety_model Meta-Llama\/Llama-Guard-7b was not applied/);
    expectError(await chat({ model: CHAT, messages: hi, safety_model: CHAT }), 400, { param: 'safety_model', code: 'model_not_supported' });
  });

  test('response_format json_object and json_schema give JSON that validates', async () => {
    const obj = await chat({ model: CHAT, messages: hi, response_format: { type: 'json_object' } });
    expect(JSON.parse(obj.body.choices[0].message.content)).toMatchObject({ engine: 'local', last_message: 'Hello there' });

    const schema = {
      type: 'object',
      properties: {
        city: { type: 'string', minLength: 3 },
        days: { type: 'integer', minimum: 1, maximum: 7 },
        unit: { type: 'string', enum: ['celsius', 'fahrenheit'] },
        tags: { type: 'array', items: { type: 'string' }, minItems: 2 },
        when: { type: 'string', format: 'date-time' },
      },
      required: ['city', 'days', 'unit', 'tags', 'when'],
      additionalProperties: false,
    };
    const res = await chat({ model: CHAT, messages: hi, response_format: { type: 'json_schema', json_schema: { name: 'forecast', schema, strict: true } } });
    expect(res.status).toBe(200);
    const value = JSON.parse(res.body.choices[0].message.content);
    const ajv = new Ajv2020({ strict: false });
    (addFormats as unknown as (a: Ajv2020) => void)(ajv);
    expect(ajv.validate(schema, value), JSON.stringify(ajv.errors)).toBe(true);
    expect(res.body.usage.completion_tokens).toBe(countTokens(res.body.choices[0].message.content));

    // Together's form: json_object with a schema.
    const together = await chat({ model: CHAT, messages: hi, response_format: { type: 'json_object', schema } });
    expect(ajv.validate(schema, JSON.parse(together.body.choices[0].message.content))).toBe(true);

    const impossible = { type: 'string', minLength: 5, maxLength: 2 };
    expectError(await chat({ model: CHAT, messages: hi, response_format: { type: 'json_schema', json_schema: { name: 'x', schema: impossible } } }), 400, {
      param: 'response_format',
      code: 'unsupported_json_schema',
    });
  });

  test('schemas of drafts 04, 06, 07, 2019-09 and 2020-12 (by $schema, or none) are read in their draft, in tools and response_format', async () => {
    const object = (positive: object) => ({
      type: 'object',
      properties: { city: { type: 'string', minLength: 2 }, n: { type: 'number', ...positive } },
      required: ['city', 'n'],
    });
    const drafts: [string | undefined, object][] = [
      // draft-04's exclusiveMinimum is a boolean beside minimum; from draft-06 on it is a number.
      ['http://json-schema.org/draft-04/schema#', object({ minimum: 0, exclusiveMinimum: true })],
      ['http://json-schema.org/draft-06/schema#', object({ exclusiveMinimum: 0 })],
      ['http://json-schema.org/draft-07/schema#', object({ exclusiveMinimum: 0 })],
      ['https://json-schema.org/draft-07/schema', object({ exclusiveMinimum: 0 })],
      ['https://json-schema.org/draft/2019-09/schema', object({ exclusiveMinimum: 0 })],
      ['https://json-schema.org/draft/2020-12/schema', object({ exclusiveMinimum: 0 })],
      [undefined, object({ exclusiveMinimum: 0 })],
    ];
    for (const [$schema, body] of drafts) {
      const schema = $schema === undefined ? body : { $schema, ...body };
      const tools = [{ type: 'function', function: { name: 'find', parameters: schema } }];
      const called = await chat({ model: CHAT, messages: hi, tools, tool_choice: 'required' });
      expect(called.status, `${$schema}: ${JSON.stringify(called.body)}`).toBe(200);
      expect(JSON.parse(called.body.choices[0].message.tool_calls[0].function.arguments)).toMatchObject({ city: expect.any(String), n: expect.any(Number) });
      const structured = await chat({ model: CHAT, messages: hi, response_format: { type: 'json_schema', json_schema: { name: 'x', schema } } });
      expect(structured.status, `${$schema}: ${JSON.stringify(structured.body)}`).toBe(200);
      expect(JSON.parse(structured.body.choices[0].message.content).n).toBeGreaterThan(0);
      const together = await chat({ model: CHAT, messages: hi, response_format: { type: 'json_object', schema } });
      expect(together.status).toBe(200);
    }

    // zod's draft-07 with a reused schema: $ref into `definitions` is followed.
    const point = { type: 'object', properties: { x: { type: 'number' } }, required: ['x'], additionalProperties: false };
    const refs = {
      $schema: 'http://json-schema.org/draft-07/schema#',
      type: 'object',
      properties: { from: { $ref: '#/definitions/point' }, to: { $ref: '#/definitions/point' } },
      required: ['from', 'to'],
      definitions: { point },
    };
    const routed = await chat({ model: CHAT, messages: hi, response_format: { type: 'json_schema', json_schema: { name: 'route', schema: refs } } });
    expect(JSON.parse(routed.body.choices[0].message.content)).toEqual({ from: { x: 0 }, to: { x: 0 } });
    // The same `$id` in two requests: each request's schema is its own.
    const withId = { $id: 'https://example.com/schemas/point', ...point };
    for (let i = 0; i < 2; i++)
      expect((await chat({ model: CHAT, messages: hi, response_format: { type: 'json_schema', json_schema: { name: 'p', schema: withId } } })).status).toBe(
        200,
      );

    // A $schema naming no known draft, or a schema that is not valid in its draft, is 400 invalid_json_schema.
    const unknown = await chat({
      model: CHAT,
      messages: hi,
      response_format: { type: 'json_schema', json_schema: { name: 'x', schema: { $schema: 'https://example.com/my-dialect', type: 'object' } } },
    });
    expectError(unknown, 400, { param: 'response_format', code: 'invalid_json_schema' });
    expect(unknown.body.error.message).toMatch(/"https:\/\/example.com\/my-dialect" names no JSON Schema draft/);
    const draft04 = { $schema: 'http://json-schema.org/draft-04/schema#', ...object({ exclusiveMinimum: 0 }) };
    const invalid = await chat({
      model: CHAT,
      messages: hi,
      tools: [{ type: 'function', function: { name: 'find', parameters: draft04 } }],
      tool_choice: 'required',
    });
    expectError(invalid, 400, { param: 'tools', code: 'invalid_json_schema' });
    expect(invalid.body.error.message).toMatch(/not a valid draft-04 JSON Schema/);
  });

  test('tools: a forced or required call gives tool_calls whose arguments validate; auto answers with text', async () => {
    const parameters = {
      type: 'object',
      properties: { location: { type: 'string' }, unit: { type: 'string', enum: ['c', 'f'] }, days: { type: 'integer', minimum: 1 } },
      required: ['location', 'unit'],
    };
    const tools = [
      { type: 'function', function: { name: 'get_weather', description: 'Weather', parameters } },
      { type: 'function', function: { name: 'get_time', parameters: { type: 'object', properties: { tz: { type: 'string' } }, required: ['tz'] } } },
    ];
    const forced = await chat({ model: CHAT, messages: hi, tools, tool_choice: { type: 'function', function: { name: 'get_weather' } } });
    expect(forced.status).toBe(200);
    const choice = forced.body.choices[0];
    expect(choice.finish_reason).toBe('tool_calls');
    expect(choice.message.content).toBeNull();
    const call = choice.message.tool_calls[0];
    expect(call).toMatchObject({ index: 0, type: 'function', function: { name: 'get_weather' } });
    expect(call.id).toMatch(/^call_/);
    const ajv = new Ajv2020({ strict: false });
    expect(ajv.validate(parameters, JSON.parse(call.function.arguments))).toBe(true);
    expect(forced.body.usage.completion_tokens).toBe(countTokens('get_weather') + countTokens(call.function.arguments));
    // The tools' definitions are part of the prompt.
    expect(forced.body.usage.prompt_tokens).toBe(countTokens(`user: Hello there\ntools: ${JSON.stringify(tools)}`));

    const required = await chat({ model: CHAT, messages: hi, tools, tool_choice: 'required' });
    expect(required.body.choices[0].message.tool_calls[0].function.name).toBe('get_weather');

    const auto = await chat({ model: CHAT, messages: hi, tools });
    expect(auto.body.choices[0]).toMatchObject({ finish_reason: 'stop', message: { content: expect.stringMatching(/^\[local engine\]/) } });

    // The conversation goes on with the tool's result.
    const next = await chat({
      model: CHAT,
      messages: [...hi, { role: 'assistant', content: null, tool_calls: [call] }, { role: 'tool', tool_call_id: call.id, content: '{"temp": 21}' }],
      tools,
    });
    expect(next.status).toBe(200);

    expectError(await chat({ model: CHAT, messages: hi, tools, tool_choice: { type: 'function', function: { name: 'nope' } } }), 400, {
      param: 'tool_choice',
      code: 'unknown_tool',
    });
    expectError(await chat({ model: CHAT, messages: hi, tool_choice: 'required' }), 400, { param: 'tool_choice', code: 'no_tools' });
    expectError(await chat({ model: CHAT, messages: hi, tools, tool_choice: 'sometimes' }), 400, { param: 'tool_choice' });
    expectError(await chat({ model: CHAT, messages: hi, tools: [{ type: 'function', function: { description: 'no name' } }] }), 400, {
      param: 'tools',
      code: 'invalid_tool',
    });
  });

  test('logprobs and top_logprobs are consistent with the text and usage; echo returns the prompt as counted', async () => {
    const res = await chat({ model: CHAT, messages: hi, logprobs: true, top_logprobs: 3, echo: true, max_tokens: 12 });
    const c = res.body.choices[0];
    const ids = encode(c.message.content);
    expect(c.logprobs.token_ids).toEqual(ids);
    expect(c.logprobs.tokens.join('')).toBe(c.message.content);
    expect(c.logprobs.token_logprobs).toEqual(ids.map(() => 0));
    expect(c.logprobs.content).toHaveLength(res.body.usage.completion_tokens);
    for (const entry of c.logprobs.content) {
      expect(entry.logprob).toBe(0);
      expect(entry.top_logprobs).toEqual([{ token: entry.token, logprob: 0, bytes: entry.bytes }]);
      expect(Buffer.from(entry.bytes).toString('utf8')).toBe(entry.token);
    }
    expect(res.body.prompt).toEqual([{ text: 'user: Hello there', logprobs: { tokens: expect.any(Array), token_ids: encode('user: Hello there') } }]);
    expect(res.body.prompt[0].logprobs.token_ids).toHaveLength(res.body.usage.prompt_tokens);

    // The platform's form: logprobs as a number of alternatives.
    const together = await chat({ model: CHAT, messages: hi, logprobs: 2, max_tokens: 4 });
    expect(together.body.choices[0].logprobs.content[0].top_logprobs).toHaveLength(1);
    expect((await chat({ model: CHAT, messages: hi, logprobs: 0 })).body.choices[0].logprobs).toBeNull();
    expectError(await chat({ model: CHAT, messages: hi, logprobs: 21 }), 400, { param: 'logprobs' });
  });

  test('context_length_exceeded_behavior: error (the default) refuses, truncate keeps the end of the prompt', async () => {
    const long = 'word '.repeat(5000); // about 5,000 tokens, over Llama-2-7b's 4,096
    expectError(await chat({ model: 'meta-llama/Llama-2-7b-hf', messages: hi }), 400, { param: 'model', code: 'model_not_supported' });
    expectError(await complete({ model: SMALL, prompt: long }), 400, { param: 'prompt', code: 'context_length_exceeded' });
    expectError(await complete({ model: SMALL, prompt: long, context_length_exceeded_behavior: 'error' }), 400, {
      param: 'prompt',
      code: 'context_length_exceeded',
    });
    expectError(await complete({ model: SMALL, prompt: 'hi', max_tokens: 5000 }), 400, { param: 'max_tokens', code: 'context_length_exceeded' });

    const cut = await complete({ model: SMALL, prompt: `${long}THE END`, max_tokens: 96, context_length_exceeded_behavior: 'truncate', echo: true });
    expect(cut.status).toBe(200);
    expect(cut.body.usage.prompt_tokens).toBe(4096 - 96);
    expect(cut.body.prompt[0].text.endsWith('THE END')).toBe(true);
    expect(cut.body.usage.prompt_tokens + cut.body.usage.completion_tokens).toBeLessThanOrEqual(4096);
    expect(cut.body.warnings[0].message).toMatch(/truncated/);

    // Chat: the oldest non-system messages go first.
    const chatLong = [
      { role: 'system', content: 'Rules.' },
      { role: 'user', content: 'word '.repeat(140_000) },
      { role: 'assistant', content: 'ok' },
      { role: 'user', content: 'Last question' },
    ];
    expectError(await chat({ model: CHAT, messages: chatLong }), 400, { param: 'messages', code: 'context_length_exceeded' });
    const kept = await chat({ model: CHAT, messages: chatLong, context_length_exceeded_behavior: 'truncate', echo: true });
    expect(kept.status).toBe(200);
    expect(kept.body.prompt[0].text).toBe('system: Rules.\nassistant: ok\nuser: Last question');
    expect(kept.body.choices[0].message.content).toContain('"Last question"');
  });

  test('streaming: a role chunk, one chunk per token, the finish reason, a usage chunk when asked, then [DONE]', async () => {
    const whole = await chat({ model: CHAT, messages: hi, max_tokens: 20, logprobs: true });
    const s = await events('/v1/chat/completions', {
      model: CHAT,
      messages: hi,
      max_tokens: 20,
      stream: true,
      stream_options: { include_usage: true },
      logprobs: true,
    });
    expect(s.status).toBe(200);
    expect(s.type).toMatch(/^text\/event-stream/);
    expect(s.done).toBe(true);
    for (const chunk of s.data) expect(chunk).toMatchObject({ object: 'chat.completion.chunk', model: CHAT, id: s.data[0].id });
    for (const chunk of s.data) validChunk('ChatCompletionChunk', chunk);
    expect(s.data[0].choices[0]).toMatchObject({ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null });
    const tokens = s.data.slice(1, -2);
    expect(tokens).toHaveLength(20);
    expect(tokens.map((c) => c.choices[0].delta.content).join('')).toBe(whole.body.choices[0].message.content);
    expect(tokens.every((c) => c.choices[0].logprobs.content[0].logprob === 0)).toBe(true);
    expect(s.data.at(-2).choices[0].finish_reason).toBe('length');
    expect(s.data.at(-1)).toMatchObject({ choices: [], usage: whole.body.usage });

    const plain = await events('/v1/chat/completions', { model: CHAT, messages: hi, stream: true, n: 2 });
    expect(plain.data.every((c) => c.usage === null)).toBe(true);
    expect(plain.data.filter((c) => c.choices[0].finish_reason === 'stop').map((c) => c.choices[0].index)).toEqual([0, 1]);

    const tool = await events('/v1/chat/completions', {
      model: CHAT,
      messages: hi,
      stream: true,
      tools: [{ type: 'function', function: { name: 'f', parameters: { type: 'object', properties: { a: { type: 'number' } }, required: ['a'] } } }],
      tool_choice: 'required',
    });
    expect(tool.data[1].choices[0].delta.tool_calls[0].function.name).toBe('f');
    for (const chunk of tool.data) validChunk('ChatCompletionChunk', chunk);
    expect(tool.data.at(-1).choices[0].finish_reason).toBe('tool_calls');

    // An error found before the stream starts is an ordinary error response.
    const bad = await fetch(`${t.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { ...auth(), 'Content-Type': 'application/json' },
      body: JSON.stringify({ model: 'nope/nope', messages: hi, stream: true }),
    });
    expect(bad.status).toBe(404);
    expect((await bad.json()).error.param).toBe('model');
  });
});

describe('completions on the local engine', () => {
  test('a language model completes a prompt; logprobs as a number; echo; seed; n', async () => {
    const res = await complete({ model: BASE, prompt: 'Once upon a time', max_tokens: 10, logprobs: 1, echo: true, seed: 3, n: 2 });
    expect(res.status).toBe(200);
    expect(res.headers['x-inference-engine']).toBe('local');
    expect(res.body).toMatchObject({ object: 'text.completion', model: BASE, system_fingerprint: 'local-chat-engine-2' });
    expect(res.body.id).toMatch(/^cmpl_/);
    const c = res.body.choices[0];
    expect(c).toMatchObject({ index: 0, finish_reason: 'length', seed: 3 });
    expect(c.logprobs.token_ids).toEqual(encode(c.text));
    expect(c.logprobs.token_logprobs).toHaveLength(10);
    expect(res.body.usage).toEqual({
      prompt_tokens: countTokens('Once upon a time'),
      completion_tokens: 20,
      total_tokens: countTokens('Once upon a time') + 20,
    });
    expect(res.body.prompt[0]).toMatchObject({ text: 'Once upon a time', logprobs: { token_ids: encode('Once upon a time') } });
    const plain = await complete({ model: BASE, prompt: 'Once upon a time' });
    expect(plain.body.choices[0].text).toContain('"Once upon a time"');
    expect(plain.body.choices[0]).not.toHaveProperty('logprobs');
    expect(plain.body.prompt).toEqual([]);
    // A dedicated endpoint completes through the same code; a stopped one is 503.
    const { running, stopped } = await seededV1Endpoints(t);
    const dedicated = await complete({ model: `default/${running.name}`, prompt: 'Hi', max_tokens: 40 });
    expect(dedicated.headers['x-served-by']).toBe(running.id);
    expect(dedicated.body.choices[0].text).toContain(running.modelId);
    expectError(await complete({ model: `default/${stopped.name}`, prompt: 'Hi' }), 503, { code: 'endpoint_not_ready', param: 'model' });
    // Chat and moderation models complete too.
    expect((await complete({ model: CHAT, prompt: 'x' })).status).toBe(200);
    expect((await complete({ model: 'Meta-Llama/Llama-Guard-7b', prompt: 'x' })).status).toBe(200);
  });

  test('streaming: completion.chunk events carrying the token, then the finish reason and the usage', async () => {
    const whole = await complete({ model: BASE, prompt: 'Once upon a time', max_tokens: 8 });
    const s = await events('/v1/completions', {
      model: BASE,
      prompt: 'Once upon a time',
      max_tokens: 8,
      stream: true,
      stream_options: { include_usage: true },
    });
    expect(s.done).toBe(true);
    for (const chunk of s.data) validChunk('CompletionChunk', chunk);
    const tokens = s.data.filter((c) => c.choices.length && c.finish_reason === null);
    expect(tokens).toHaveLength(8);
    expect(tokens.map((c) => c.token.text).join('')).toBe(whole.body.choices[0].text);
    expect(tokens.map((c) => c.choices[0].text).join('')).toBe(whole.body.choices[0].text);
    expect(tokens[0]).toMatchObject({ object: 'completion.chunk', model: BASE, token: { logprob: 0, special: false }, usage: null });
    expect(s.data.at(-2)).toMatchObject({ finish_reason: 'length', choices: [{ finish_reason: 'length' }] });
    expect(s.data.at(-1)).toMatchObject({ choices: [], usage: whole.body.usage });
  });
});

describe('bad input', () => {
  test('wrong content types, empty and malformed bodies are 4xx envelopes', async () => {
    for (const path of ['/v1/chat/completions', '/v1/completions']) {
      expectError(await t.http.post(path).set(auth()).set('Content-Type', 'text/plain').send('hello'), 415);
      expectError(await t.http.post(path).set(auth()).set('Content-Type', 'application/json').send('{"model":'), 400, { code: 'invalid_json' });
      expectError(await t.http.post(path).set(auth()), 415);
      expectError(await t.http.post(path).set(auth()).send({}), 400, { param: 'model', code: 'required' });
    }
    expectError(await chat({ model: CHAT, messages: [] }), 400, { param: 'messages', code: 'minItems' });
    expectError(await chat({ model: CHAT }), 400, { param: 'messages', code: 'required' });
    expectError(await chat({ model: CHAT, messages: [{ role: 'robot', content: 'x' }] }), 400, { param: 'messages.0.role' });
    expectError(await chat({ model: CHAT, messages: hi, max_tokens: -1 }), 400, { param: 'max_tokens' });
    expectError(await chat({ model: CHAT, messages: hi, context_length_exceeded_behavior: 'shrink' }), 400, { param: 'context_length_exceeded_behavior' });
    expectError(await complete({ model: BASE, prompt: '' }), 400, { param: 'prompt', code: 'minLength' });
    expectError(await complete({ model: BASE }), 400, { param: 'prompt', code: 'required' });
    // A field the completion does not declare is ignored, and named (open bodies).
    expect((await complete({ model: BASE, prompt: 'x', messages: hi })).headers['x-ignored-fields']).toBe('messages');
  });

  test('an unknown model is 404 naming model; a model of the wrong type is 400 naming model', async () => {
    expectError(await chat({ model: 'nope/nope', messages: hi }), 404, { code: 'model_not_found', param: 'model' });
    expectError(await complete({ model: 'nope/nope', prompt: 'x' }), 404, { code: 'model_not_found', param: 'model' });
    expectError(await chat({ model: '', messages: hi }), 404, { code: 'model_not_found', param: 'model' });
    for (const model of ['BAAI/bge-base-en-v1.5', 'Salesforce/Llama-Rank-v1', 'openai/whisper-large-v3', 'black-forest-labs/FLUX.1-schnell']) {
      expectError(await chat({ model, messages: hi }), 400, { code: 'model_not_supported', param: 'model' });
      expectError(await complete({ model, prompt: 'x' }), 400, { code: 'model_not_supported', param: 'model' });
    }
    const err = await chat({ model: BASE, messages: hi });
    expectError(err, 400, { code: 'model_not_supported', param: 'model' });
    expect(err.body.error.message).toMatch(/POST \/v1\/completions/);
  });
});

describe('the upstream engine: another instance of this server', () => {
  let upstream: ServerProcess;
  let vllm: Server;
  let vllmUrl: string;
  const vllmSeen: any[] = [];
  let db: ScratchDatabase;
  let front: TestPlatform;
  const frontChat = (body: object) =>
    front.http
      .post('/v1/chat/completions')
      .set({ Authorization: `Bearer ${front.caller.key}` })
      .send(body);

  beforeAll(async () => {
    db = await scratchDatabase('sqlite');
    upstream = await startServerProcess({ DATABASE_URL: db.url });
    // A stand-in for vLLM: its answers carry fields this contract does not name, and lack some it requires.
    vllm = createServer((req, res) => {
      let raw = '';
      req.on('data', (c) => (raw += c));
      req.on('end', () => {
        vllmSeen.push({ url: req.url, auth: req.headers.authorization, body: JSON.parse(raw) });
        const chat = req.url === '/v1/chat/completions';
        res.setHeader('Content-Type', 'application/json');
        res.end(
          JSON.stringify({
            id: 'chatcmpl-vllm',
            object: chat ? 'chat.completion' : 'text_completion',
            created: 1700000000,
            model: 'served-by-vllm',
            choices: [
              chat
                ? {
                    index: 0,
                    message: { role: 'assistant', content: 'Bonjour', refusal: null, annotations: null, tool_calls: [], reasoning_content: null },
                    logprobs: null,
                    finish_reason: 'stop',
                    stop_reason: null,
                  }
                : { index: 0, text: ' there', logprobs: null, finish_reason: 'abort', stop_reason: null, prompt_logprobs: null },
            ],
            service_tier: null,
            usage: { prompt_tokens: 3, total_tokens: 5, completion_tokens: 2, prompt_tokens_details: null },
            prompt_logprobs: null,
            kv_transfer_params: null,
          }),
        );
      });
    });
    await new Promise<void>((resolve) => vllm.listen(0, '127.0.0.1', resolve));
    vllmUrl = `http://127.0.0.1:${(vllm.address() as AddressInfo).port}/v1`;
    front = await startTestPlatform({
      config: {
        engines: {
          routes: [
            { models: ['meta-llama/*'], capabilities: ['chat'], engine: 'upstream', url: `${upstream.url}/v1`, apiKey: upstream.key },
            // The upstream's own name for the model differs from the one the caller uses.
            { models: [BASE], capabilities: ['chat'], engine: 'upstream', url: `${upstream.url}/v1`, apiKey: upstream.key, model: 'mistralai/Mistral-7B-v0.1' },
            { models: ['Qwen/*'], capabilities: ['chat'], engine: 'upstream', url: 'http://127.0.0.1:9/v1' },
            { models: ['deepseek-ai/*'], capabilities: ['chat'], engine: 'upstream', url: vllmUrl, apiKey: 'vllm-key', model: 'deepseek-v3' },
          ],
        },
      },
    });
  }, 60_000);
  afterAll(async () => {
    await front?.close();
    await upstream?.stop();
    await db?.drop();
    await new Promise((resolve) => vllm?.close(resolve));
  });

  test('a v2 deployment of a model routed upstream reports the upstream engine as its runtimeInfo', async () => {
    const base = `/v2/projects/${front.caller.identity.projectId}`;
    const auth = { Authorization: `Bearer ${front.caller.key}` };
    const e = await front.http.post(`${base}/endpoints`).set(auth).send({ name: 'routed' });
    expect(e.status, JSON.stringify(e.body)).toBe(200);
    const d = await front.http
      .post(`${base}/endpoints/${e.body.id}/deployments`)
      .set(auth)
      .send({ name: 'd1', model: MODEL, config: H100, autoscaling: { minReplicas: 0, maxReplicas: 0 } });
    expect(d.status, JSON.stringify(d.body)).toBe(200);
    expect(d.body.runtimeInfo).toEqual({
      engineType: 'upstream',
      engineVersion: `${upstream.url}/v1`,
      functionCallingSupported: true,
      structuredOutputSupported: true,
    });
    const read = await front.http.get(`${base}/endpoints/${e.body.id}/deployments/${d.body.id}`).set(auth);
    expect(read.body.runtimeInfo.engineType).toBe('upstream');
  });

  test('chat and completions are forwarded and answered with the caller model name', async () => {
    const res = await frontChat({ model: CHAT, messages: hi, max_tokens: 30, seed: 5, logprobs: true, top_logprobs: 2 });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.headers['x-inference-engine']).toBe('upstream');
    expect(res.body.model).toBe(CHAT);
    expect(res.body.choices[0].message.content).toMatch(/^\[local engine\]/); // the upstream's own local engine
    expect(res.body.choices[0].seed).toBe(5);
    expect(res.body.choices[0].logprobs.content).toHaveLength(res.body.usage.completion_tokens);

    const c = await front.http
      .post('/v1/completions')
      .set({ Authorization: `Bearer ${front.caller.key}` })
      .send({ model: BASE, prompt: 'Once', max_tokens: 40 });
    expect(c.status).toBe(200);
    expect(c.body.model).toBe(BASE);
    expect(c.body.choices[0].text).toContain('mistralai/Mistral-7B-v0.1'); // the upstream ran the route's model
  });

  test("a vLLM-shaped answer is kept to this contract's fields", async () => {
    const res = await frontChat({ model: 'deepseek-ai/DeepSeek-V3', messages: hi, temperature: 0.7 });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(vllmSeen.at(-1)).toMatchObject({
      url: '/v1/chat/completions',
      auth: 'Bearer vllm-key',
      body: { model: 'deepseek-v3', messages: hi, temperature: 0.7 },
    });
    expect(res.body).toMatchObject({
      id: 'chatcmpl-vllm',
      object: 'chat.completion',
      model: 'deepseek-ai/DeepSeek-V3',
      prompt: [],
      system_fingerprint: 'upstream',
    });
    expect(res.body.choices).toEqual([{ index: 0, message: { role: 'assistant', content: 'Bonjour' }, finish_reason: 'stop', logprobs: null }]);
    expect(res.body.usage).toEqual({ prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 });
    expect(res.body).not.toHaveProperty('service_tier');

    const c = await front.http
      .post('/v1/completions')
      .set({ Authorization: `Bearer ${front.caller.key}` })
      .send({ model: 'deepseek-ai/DeepSeek-V3', prompt: 'Hi' });
    expect(c.status, JSON.stringify(c.body)).toBe(200);
    expect(c.body).toMatchObject({
      object: 'text.completion',
      model: 'deepseek-ai/DeepSeek-V3',
      choices: [{ index: 0, text: ' there', finish_reason: 'stop' }],
    });
  });

  test('streams are relayed chunk by chunk', async () => {
    const res = await fetch(`${front.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${front.caller.key}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({ model: CHAT, messages: hi, max_tokens: 6, stream: true, stream_options: { include_usage: true } }),
    });
    expect(res.headers.get('x-inference-engine')).toBe('upstream');
    const data = (await res.text())
      .split('\n\n')
      .filter((b) => b.startsWith('data: '))
      .map((b) => b.slice(6));
    expect(data.at(-1)).toBe('[DONE]');
    const chunks = data.slice(0, -1).map((d) => JSON.parse(d));
    expect(chunks.every((c) => c.model === CHAT)).toBe(true);
    expect(
      chunks
        .slice(1, 7)
        .map((c) => c.choices[0].delta.content)
        .join(''),
    ).toBe('[local engine] This answer');
    expect(chunks.at(-1).usage.completion_tokens).toBe(6);
  });

  test("the upstream's refusals are passed on; an unreachable upstream is 502", async () => {
    expectError(await frontChat({ model: CHAT, messages: hi, tool_choice: 'required' }), 400, { code: 'upstream_refused', param: 'tool_choice' });
    expectError(await frontChat({ model: 'Qwen/Qwen2.5-72B-Instruct-Turbo', messages: hi }), 502, { code: 'upstream_unreachable' });
    const c = await front.http
      .post('/v1/completions')
      .set({ Authorization: `Bearer ${front.caller.key}` })
      .send({ model: 'Qwen/Qwen2.5-72B-Instruct-Turbo', prompt: 'x' });
    expectError(c, 502, { code: 'upstream_unreachable' });
  });
});
