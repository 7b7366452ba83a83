// Scripted answers of the control plane (spec/tags/control.yaml), used the way an application's test suite would:
// rules added through the typed client with the control key, the application's own client (openai, the Vercel AI
// SDK) pointed at the server and running its agent loop against them.
import { createTogetherAI } from '@ai-sdk/togetherai';
import { createPlatformClient, type PlatformClient } from '@inference-platform/client';
import { generateText, stepCountIs, streamText, tool } from 'ai';
import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, test } from 'vitest';
import { z } from 'zod';
import { expectError } from './support/expect.ts';
import { uploadFile } from './support/files.ts';
import { startTestPlatform, TEST_CONTROL_KEY, type TestPlatform } from './support/platform.ts';

const MODEL = 'meta-llama/Llama-3.3-70B-Instruct-Turbo';
const EMBEDDER = 'BAAI/bge-base-en-v1.5';
let t: TestPlatform;
let control: PlatformClient;
let openai: OpenAI;

beforeAll(async () => {
  t = await startTestPlatform();
  control = createPlatformClient({ baseUrl: t.url, apiKey: TEST_CONTROL_KEY });
  openai = new OpenAI({ apiKey: t.caller.key, baseURL: `${t.url}/v1`, maxRetries: 0 });
});
afterAll(() => t?.close());
beforeEach(async () => {
  await control.DELETE('/_control/scripts');
});

const weatherTool = {
  type: 'function' as const,
  function: { name: 'get_weather', description: 'The weather in a city', parameters: { type: 'object', properties: { city: { type: 'string' } } } },
};
/** A tool call, then the final answer: the two calls of an agent loop. */
const agentScript = {
  match: { model: MODEL, tool: 'get_weather' },
  answers: [{ tool_calls: [{ name: 'get_weather', arguments: { city: 'Paris' } }] }, { content: 'It is 21 degrees in Paris.' }],
};
const weatherIn = (city: string) => JSON.stringify({ city, temperature: 21 });

describe('an agent loop', () => {
  test('the openai client: a scripted tool call, the tool run, then the scripted answer', async () => {
    const { data: rule } = await control.POST('/_control/scripts', { body: agentScript });
    const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: 'What is the weather in Paris?' }];
    const first = await openai.chat.completions.create({ model: MODEL, messages, tools: [weatherTool] }).withResponse();
    expect(first.response.headers.get('x-scripted')).toBe(rule!.id);
    const call = first.data.choices[0]!;
    expect(call.finish_reason).toBe('tool_calls');
    const [made] = call.message.tool_calls as OpenAI.ChatCompletionMessageFunctionToolCall[];
    expect(made!.id).toMatch(/^call_[0-9a-f]{24}$/);
    expect([made!.function.name, JSON.parse(made!.function.arguments)]).toEqual(['get_weather', { city: 'Paris' }]);
    messages.push(call.message, { role: 'tool', tool_call_id: made!.id, content: weatherIn('Paris') });
    const second = await openai.chat.completions.create({ model: MODEL, messages, tools: [weatherTool] });
    expect(second.choices[0]).toMatchObject({ finish_reason: 'stop', message: { content: 'It is 21 degrees in Paris.' } });
    // Usage counted as the engine counts it: the prompt and the answer's tokens.
    expect(second.usage!.completion_tokens).toBeGreaterThan(0);
    expect(second.usage!.total_tokens).toBe(second.usage!.prompt_tokens + second.usage!.completion_tokens);
    // After the last answer the rule repeats it (after_last: repeat, the default).
    const third = await openai.chat.completions.create({ model: MODEL, messages, tools: [weatherTool] });
    expect(third.choices[0]!.message.content).toBe('It is 21 degrees in Paris.');
    const { data: seen } = await control.GET('/_control/scripts/{scriptId}', { params: { path: { scriptId: rule!.id } } });
    expect(seen).toMatchObject({ hits: 3, after_last: 'repeat', capability: 'chat' });
  });

  test('the openai client streaming: the tool call and the answer arrive as chunks', async () => {
    await control.POST('/_control/scripts', { body: agentScript });
    const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: 'Weather in Paris?' }];
    const calls: { id?: string; name?: string; args: string }[] = [];
    let finish: string | null = null;
    for await (const chunk of await openai.chat.completions.create({ model: MODEL, messages, tools: [weatherTool], stream: true })) {
      for (const c of chunk.choices[0]?.delta.tool_calls ?? []) {
        calls[c.index] ??= { args: '' };
        calls[c.index]!.id ??= c.id;
        calls[c.index]!.name ??= c.function?.name;
        calls[c.index]!.args += c.function?.arguments ?? '';
      }
      finish = chunk.choices[0]?.finish_reason ?? finish;
    }
    expect(finish).toBe('tool_calls');
    expect(calls).toEqual([{ id: expect.stringMatching(/^call_/), name: 'get_weather', args: '{"city":"Paris"}' }]);
    messages.push(
      { role: 'assistant', content: null, tool_calls: [{ id: calls[0]!.id!, type: 'function', function: { name: 'get_weather', arguments: calls[0]!.args } }] },
      { role: 'tool', tool_call_id: calls[0]!.id!, content: weatherIn('Paris') },
    );
    let text = '';
    const stream = await openai.chat.completions.create({
      model: MODEL,
      messages,
      tools: [weatherTool],
      stream: true,
      stream_options: { include_usage: true },
    });
    let usage: OpenAI.CompletionUsage | undefined | null;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? '';
      usage = chunk.usage ?? usage;
    }
    expect(text).toBe('It is 21 degrees in Paris.');
    expect(usage!.completion_tokens).toBeGreaterThan(0);
  });

  test('the Vercel AI SDK: a zod tool, multi-step generateText and streamText', async () => {
    const together = createTogetherAI({ apiKey: t.caller.key, baseURL: `${t.url}/v1` });
    const ran: string[] = [];
    const weather = tool({
      description: 'The weather in a city',
      inputSchema: z.object({ city: z.string(), unit: z.enum(['celsius', 'fahrenheit']) }),
      execute: async ({ city, unit }) => {
        ran.push(`${city}/${unit}`);
        return { city, unit, temperature: 21 };
      },
    });
    const script = {
      match: { model: MODEL, tool: 'weather' },
      answers: [{ tool_calls: [{ name: 'weather', arguments: '{"city":"Oslo","unit":"celsius"}' }] }, { content: 'Oslo: 21 °C.' }],
      after_last: 'fall_through' as const,
    };
    await control.POST('/_control/scripts', { body: script });
    const result = await generateText({ model: together(MODEL), tools: { weather }, stopWhen: stepCountIs(3), prompt: 'Weather in Oslo?' });
    expect(ran).toEqual(['Oslo/celsius']);
    expect(result.steps.map((s) => s.finishReason)).toEqual(['tool-calls', 'stop']);
    expect(result.text).toBe('Oslo: 21 °C.');

    // Spent (fall_through): the engine answers the next request again.
    const after = await generateText({ model: together(MODEL), tools: { weather }, prompt: 'Weather in Oslo?' });
    expect(after.text).toMatch(/^\[local engine\]/);

    await control.POST('/_control/scripts', { body: script });
    const streamed = streamText({ model: together(MODEL), tools: { weather }, stopWhen: stepCountIs(3), prompt: 'Weather in Oslo?' });
    expect(await streamed.text).toBe('Oslo: 21 °C.');
    expect(ran).toEqual(['Oslo/celsius', 'Oslo/celsius']);
  });
});

describe('chat answers', () => {
  const raw = (body: object) => t.caller.http.post('/v1/chat/completions').send({ model: MODEL, ...body });
  /** The content pieces of an SSE answer, one per event that carries content. */
  const pieces = (text: string) =>
    text
      .split('\n\n')
      .filter((e) => e.startsWith('data: {'))
      .map((e) => JSON.parse(e.slice(6)).choices[0]?.delta?.content)
      .filter((c) => typeof c === 'string' && c !== '');

  test("a stream's chunks arrive as scripted: explicit chunks, or chunk_size characters", async () => {
    await control.POST('/_control/scripts', { body: { match: { message_contains: 'chunks' }, answers: [{ chunks: ['Hel', 'lo, ', 'world'], delay_ms: 5 }] } });
    const res = await raw({ messages: [{ role: 'user', content: 'chunks please' }], stream: true });
    expect(res.status).toBe(200);
    expect(res.headers['x-scripted']).toMatch(/^script_/);
    expect(pieces(res.text)).toEqual(['Hel', 'lo, ', 'world']);
    expect(res.text.trim().endsWith('data: [DONE]')).toBe(true);

    await control.POST('/_control/scripts', { body: { match: { message_regex: '^size \\d+$' }, answers: [{ content: 'abcdefg', chunk_size: 3 }] } });
    expect(pieces((await raw({ messages: [{ role: 'user', content: 'size 3' }], stream: true })).text)).toEqual(['abc', 'def', 'g']);
  });

  test('a JSON object as the content, a finish_reason and usage as given', async () => {
    await control.POST('/_control/scripts', {
      body: {
        match: { body: [{ path: 'response_format.type', equals: 'json_object' }] },
        answers: [{ json: { answer: 42 }, finish_reason: 'length', usage: { prompt_tokens: 7, completion_tokens: 3 } }],
      },
    });
    const res = await raw({ messages: [{ role: 'user', content: 'json' }], response_format: { type: 'json_object' } });
    expect(JSON.parse(res.body.choices[0].message.content)).toEqual({ answer: 42 });
    expect(res.body.choices[0].finish_reason).toBe('length');
    expect(res.body.usage).toEqual({ prompt_tokens: 7, completion_tokens: 3, total_tokens: 10 });
    expect(res.headers['x-inference-engine']).toBeUndefined();
  });

  test('rate limits settle on the usage answered', async () => {
    // A platform of its own, with a window no test outlasts: the token count is the scripted answer's.
    const limited = await startTestPlatform({ database: 'sqlite', config: { rateLimits: { ...t.config.rateLimits, windowSeconds: 60 } } });
    try {
      const scripts = createPlatformClient({ baseUrl: limited.url, apiKey: TEST_CONTROL_KEY });
      await scripts.POST('/_control/scripts', { body: { answers: [{ content: 'counted', usage: { prompt_tokens: 5000, completion_tokens: 2000 } }] } });
      const res = await limited.caller.http.post('/v1/chat/completions').send({ model: MODEL, messages: [{ role: 'user', content: 'hi' }] });
      expect(res.body.usage.total_tokens).toBe(7000);
      expect(Number(res.headers['x-tokenlimit-remaining'])).toBe(Number(res.headers['x-tokenlimit-limit']) - 7000);
    } finally {
      await limited.close();
    }
  });

  test('completions: the content as the text; body conditions at dotted paths', async () => {
    await control.POST('/_control/scripts', {
      body: { match: { operations: ['createCompletion'], body: [{ path: 'stop.-1', contains: 'END' }] }, answers: [{ content: ' scripted text' }] },
    });
    const res = await t.caller.http.post('/v1/completions').send({ model: MODEL, prompt: 'Once', stop: ['x', 'THE END'] });
    expect(res.body.choices[0]).toMatchObject({ text: ' scripted text', finish_reason: 'stop' });
    const streamed = await t.caller.http
      .post('/v1/completions')
      .send({ model: MODEL, prompt: 'Once', stop: ['THE END'], stream: true, stream_options: { include_usage: true } });
    const events = streamed.text
      .split('\n\n')
      .filter((e) => e.startsWith('data: {'))
      .map((e) => JSON.parse(e.slice(6)));
    expect(events.flatMap((e) => e.choices.map((c: { text: string }) => c.text)).join('')).toBe(' scripted text');
    expect(events.at(-1).usage.total_tokens).toBe(res.body.usage.total_tokens);
    // The same rule does not answer chat (operations), nor a completion without the condition.
    expect((await raw({ messages: [{ role: 'user', content: 'Once' }] })).headers['x-scripted']).toBeUndefined();
    expect((await t.caller.http.post('/v1/completions').send({ model: MODEL, prompt: 'Once' })).body.choices[0].text).toMatch(/local engine/);
  });

  test('unmatched requests fall through to the engine; rules are tried oldest first', async () => {
    const { data: first } = await control.POST('/_control/scripts', { body: { match: { message_contains: 'hello' }, answers: [{ content: 'one' }] } });
    await control.POST('/_control/scripts', { body: { answers: [{ content: 'two' }] } });
    expect((await raw({ messages: [{ role: 'user', content: 'hello there' }] })).headers['x-scripted']).toBe(first!.id);
    await control.DELETE('/_control/scripts/{scriptId}', { params: { path: { scriptId: first!.id } } });
    expect((await raw({ messages: [{ role: 'user', content: 'hello there' }] })).body.choices[0].message.content).toBe('two');
    await control.DELETE('/_control/scripts');
    const res = await raw({ messages: [{ role: 'user', content: 'hello there' }] });
    expect(res.body.choices[0].message.content).toMatch(/^\[local engine\]/);
    expect(res.headers).toMatchObject({ 'x-inference-engine': 'local' });
    expect(res.headers['x-scripted']).toBeUndefined();
  });

  test('a rule expires after ttl_seconds, and a platform reset clears the rules', async () => {
    await control.POST('/_control/scripts', { body: { answers: [{ content: 'soon gone' }], ttl_seconds: 5 } });
    expect((await control.GET('/_control/scripts')).data!.data).toHaveLength(1);
    t.clock.advance(5_000);
    expect((await control.GET('/_control/scripts')).data!.data).toEqual([]);
    await control.POST('/_control/scripts', { body: { answers: [{ content: 'kept until reset' }] } });
    await control.POST('/_control/reset', {});
    expect((await control.GET('/_control/scripts')).data!.data).toEqual([]);
    expect((await raw({ messages: [{ role: 'user', content: 'hi' }] })).body.choices[0].message.content).toMatch(/^\[local engine\]/);
    t.other = await t.newCaller();
  });
});

describe('other capabilities', () => {
  test('embeddings: the given vectors for the given texts, the engine for the others', async () => {
    const vector = Array.from({ length: 768 }, (_, i) => (i === 0 ? 1 : 0));
    const { data: rule } = await control.POST('/_control/scripts', {
      body: { capability: 'embeddings', match: { model: EMBEDDER }, answers: [{ embeddings: [{ text: 'cat', vector }] }] },
    });
    const res = await openai.embeddings.create({ model: EMBEDDER, input: ['cat', 'dog'] }).withResponse();
    expect(res.response.headers.get('x-scripted')).toBe(rule!.id);
    expect(res.data.data[0]!.embedding).toEqual(vector);
    expect(res.data.data[1]!.embedding).toHaveLength(768);
    expect(res.data.data[1]!.embedding).not.toEqual(vector);
    expect(res.data.usage.prompt_tokens).toBe(2);
    // None of its texts: the engine alone.
    expect((await openai.embeddings.create({ model: EMBEDDER, input: 'dog' }).withResponse()).response.headers.get('x-scripted')).toBeNull();
  });

  test('transcription: the scripted text', async () => {
    const { data: rule } = await control.POST('/_control/scripts', {
      body: { capability: 'transcription', match: { operations: ['createTranscription'] }, answers: [{ content: 'Hello from the script.' }] },
    });
    const res = await t.caller.http
      .post('/v1/audio/transcriptions')
      .field('model', 'openai/whisper-large-v3')
      .field('response_format', 'verbose_json')
      .attach('file', Buffer.from('not audio at all'), 'speech.wav');
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body).toMatchObject({ text: 'Hello from the script.', segments: [{ text: 'Hello from the script.' }] });
    expect(res.headers).toMatchObject({ 'x-scripted': rule!.id, 'x-transcription-engine': 'scripted' });
  });

  test("the judge's verdicts, seen in the evaluation's result", async () => {
    await control.POST('/_control/scripts', {
      body: { capability: 'judge', match: { message_contains: 'good' }, answers: [{ verdict: { score: 9, explanation: 'scripted' } }] },
    });
    await control.POST('/_control/scripts', { body: { capability: 'judge', answers: [{ content: '{"score": 2}' }] } });
    const file = await uploadFile(t.caller, 'eval', [{ response: 'a good answer' }, { response: 'a poor answer' }]);
    const judge = { model: 'Qwen/Qwen3.5-9B', model_source: 'serverless', system_template: 'Judge it.' };
    const created = await t.caller.http.post('/v1/evaluation').send({
      type: 'score',
      parameters: { judge, min_score: 0, max_score: 10, pass_threshold: 5, model_to_evaluate: 'response', input_data_file_path: file },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    await t.advance(0);
    const job = (await t.caller.http.get(`/v1/evaluation/${created.body.workflow_id}`)).body;
    expect(job.status).toBe('completed');
    expect(job.results.aggregated_scores).toMatchObject({ mean_score: 5.5, pass_percentage: 50 });
  });
});

describe('bad rules', () => {
  const post = (body: object) => t.http.post('/_control/scripts').set('Authorization', `Bearer ${TEST_CONTROL_KEY}`).send(body);

  test('are refused naming the field, and nothing is added', async () => {
    expectError(await post({ answers: [{ finish_reason: 'stop' }] }), 400, { param: 'answers.0.content', code: 'missing_field' });
    expectError(await post({ answers: [{ content: 'a', json: {} }] }), 400, { param: 'answers.0.json' });
    expectError(await post({ capability: 'transcription', answers: [{ tool_calls: [{ name: 'x' }] }] }), 400, { param: 'answers.0.tool_calls' });
    expectError(await post({ match: { operations: ['createEmbedding'] }, answers: [{ content: 'a' }] }), 400, {
      param: 'match.operations.0',
      code: 'unknown_operation',
    });
    expectError(await post({ match: { message_regex: '(?<=a)b' }, answers: [{ content: 'a' }] }), 400, {
      param: 'match.message_regex',
      code: 'invalid_pattern',
    });
    expectError(await post({ match: { body: [{ path: 'a..b', equals: 1 }] }, answers: [{ content: 'a' }] }), 400, { param: 'match.body.0.path' });
    expectError(await post({ capability: 'judge', answers: [{ verdict: { score: 1 }, content: '1' }] }), 400, { param: 'answers.0.verdict' });
    expectError(await post({ capability: 'embeddings', answers: [{ embeddings: [{ text: 'a', vector: [1] }] }] }), 400, { param: 'match.model' });
    expectError(await post({ capability: 'embeddings', match: { model: MODEL }, answers: [{ embeddings: [{ text: 'a', vector: [1] }] }] }), 400, {
      param: 'match.model',
      code: 'model_not_supported',
    });
    expectError(await post({ capability: 'embeddings', match: { model: EMBEDDER }, answers: [{ embeddings: [{ text: 'a', vector: [1, 0] }] }] }), 400, {
      param: 'answers.0.embeddings.0.vector',
      code: 'invalid_dimensions',
    });
    expectError(await post({ answers: [] }), 400, { param: 'answers' });
    expectError(await t.http.get('/_control/scripts/script_nope').set('Authorization', `Bearer ${TEST_CONTROL_KEY}`), 404, { param: 'scriptId' });
    expectError(await t.http.delete('/_control/scripts/script_nope').set('Authorization', `Bearer ${TEST_CONTROL_KEY}`), 404, { param: 'scriptId' });
    expect((await control.GET('/_control/scripts')).data!.data).toEqual([]);
  });
});
