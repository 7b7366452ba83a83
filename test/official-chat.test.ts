// The official clients (npm `openai` and `together-ai`), unchanged but for baseURL: chat, streamed and whole, and
// completions, streamed and whole.
import OpenAI from 'openai';
import Together from 'together-ai';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { countTokens } from '../server/engines/tokens.ts';
import { startTestPlatform, type TestPlatform } from './support/platform.ts';

const CHAT = 'meta-llama/Llama-3.3-70B-Instruct-Turbo';
const BASE = 'mistralai/Mixtral-8x7B-v0.1';

let t: TestPlatform;
let openai: OpenAI;
let together: Together;

beforeAll(async () => {
  t = await startTestPlatform();
  openai = new OpenAI({ apiKey: t.caller.key, baseURL: `${t.url}/v1`, maxRetries: 0 });
  together = new Together({ apiKey: t.caller.key, baseURL: `${t.url}/v1`, maxRetries: 0 });
});
afterAll(() => t?.close());

describe('openai', () => {
  test('chat, whole and streamed with usage, tools and structured output', async () => {
    const whole = await openai.chat.completions.create({ model: CHAT, messages: [{ role: 'user', content: 'Hello there' }], max_tokens: 16, seed: 1 });
    expect(whole.choices[0]!.message.content).toMatch(/^\[local engine\]/);
    expect(whole.usage!.completion_tokens).toBe(16);

    const stream = await openai.chat.completions.create({
      model: CHAT,
      messages: [{ role: 'user', content: 'Hello there' }],
      max_tokens: 16,
      seed: 1,
      stream: true,
      stream_options: { include_usage: true },
    });
    let text = '';
    let finish: string | null = null;
    let usage: OpenAI.CompletionUsage | undefined | null;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? '';
      finish = chunk.choices[0]?.finish_reason ?? finish;
      usage = chunk.usage ?? usage;
    }
    expect(text).toBe(whole.choices[0]!.message.content);
    expect(finish).toBe('length');
    expect(usage).toEqual(whole.usage);

    const called = await openai.chat.completions.create({
      model: CHAT,
      messages: [{ role: 'user', content: 'Weather in Paris?' }],
      tools: [
        { type: 'function', function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } } },
      ],
      tool_choice: { type: 'function', function: { name: 'get_weather' } },
    });
    const call = called.choices[0]!.message.tool_calls![0]!;
    expect(call.type === 'function' && JSON.parse(call.function.arguments)).toHaveProperty('city');

    const structured = await openai.chat.completions.create({
      model: CHAT,
      messages: [{ role: 'user', content: 'A point' }],
      response_format: {
        type: 'json_schema',
        json_schema: {
          name: 'point',
          strict: true,
          schema: { type: 'object', properties: { x: { type: 'number' }, y: { type: 'number' } }, required: ['x', 'y'], additionalProperties: false },
        },
      },
    });
    expect(Object.keys(JSON.parse(structured.choices[0]!.message.content!))).toEqual(['x', 'y']);

    const lp = await openai.chat.completions.create({
      model: CHAT,
      messages: [{ role: 'user', content: 'Hi' }],
      logprobs: true,
      top_logprobs: 2,
      max_tokens: 5,
    });
    expect(lp.choices[0]!.logprobs!.content!.map((c) => c.token).join('')).toBe(lp.choices[0]!.message.content);
  });

  test('completions, whole and streamed', async () => {
    const whole = await openai.completions.create({ model: BASE, prompt: 'Once upon a time', max_tokens: 12 });
    expect(whole.choices[0]!.text).toMatch(/\[local engine\]/);
    expect(whole.usage).toEqual({ prompt_tokens: countTokens('Once upon a time'), completion_tokens: 12, total_tokens: countTokens('Once upon a time') + 12 });
    const stream = await openai.completions.create({ model: BASE, prompt: 'Once upon a time', max_tokens: 12, stream: true });
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.text ?? '';
    expect(text).toBe(whole.choices[0]!.text);
  });
});

describe('together-ai', () => {
  test('chat, whole and streamed', async () => {
    const whole = await together.chat.completions.create({ model: CHAT, messages: [{ role: 'user', content: 'Hello there' }], max_tokens: 10 });
    expect(whole.choices[0]!.message!.content).toMatch(/^\[local engine\]/);
    const stream = await together.chat.completions.create({ model: CHAT, messages: [{ role: 'user', content: 'Hello there' }], max_tokens: 10, stream: true });
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? '';
    expect(text).toBe(whole.choices[0]!.message!.content);
  });

  test('completions, whole and streamed, with echo and logprobs', async () => {
    const whole = await together.completions.create({ model: BASE, prompt: 'Once upon a time', max_tokens: 10, logprobs: 1, echo: true });
    expect(whole.choices[0]!.text).toMatch(/\[local engine\]/);
    expect(whole.prompt![0]!.text).toBe('Once upon a time');
    expect(whole.choices[0]!.logprobs!.token_logprobs).toHaveLength(10);
    const stream = await together.completions.create({ model: BASE, prompt: 'Once upon a time', max_tokens: 10, stream: true });
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.text ?? '';
    expect(text).toBe(whole.choices[0]!.text);
  });
});
