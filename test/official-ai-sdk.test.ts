// The Vercel AI SDK (`ai` 6), as its READMEs show it, with its Together provider (`@ai-sdk/togetherai`), the
// OpenAI-compatible provider (`@ai-sdk/openai-compatible`) and the OpenAI provider's chat model (`@ai-sdk/openai`
// `.chat()`), pointed at this server's /v1 with the key. Its zod schemas reach the server as draft-07 JSON Schema
// (`"$schema": "http://json-schema.org/draft-07/schema#"`), in tool parameters and in structured outputs.
//
// | AI SDK call                                   | HTTP sent                                                        |
// |-----------------------------------------------|------------------------------------------------------------------|
// | generateText / streamText                     | POST /v1/chat/completions (streamText: stream, include_usage)     |
// | generateText with tools (toolChoice)          | POST /v1/chat/completions with tools[].function.parameters (zod)  |
// | generateText with Output.object({schema})     | POST /v1/chat/completions with response_format json_schema (zod)  |
// | embed / embedMany                             | POST /v1/embeddings                                              |
import { createOpenAI } from '@ai-sdk/openai';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { createTogetherAI } from '@ai-sdk/togetherai';
import { APICallError, embed, embedMany, generateText, NoObjectGeneratedError, Output, rerank, stepCountIs, streamText, tool } from 'ai';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { z } from 'zod';
import { startTestPlatform, type TestPlatform } from './support/platform.ts';

const CHAT = 'meta-llama/Llama-3.3-70B-Instruct-Turbo';
const DRAFT_07 = 'http://json-schema.org/draft-07/schema#';

let t: TestPlatform;
/** Each chat request's JSON body, as the providers sent it. */
const sent: any[] = [];
const recording = async (url: RequestInfo | URL, init?: RequestInit) => {
  if (String(url).endsWith('/chat/completions')) sent.push(JSON.parse(String(init?.body)));
  return fetch(url, init);
};
let together: ReturnType<typeof createTogetherAI>;
let compatible: ReturnType<typeof createOpenAICompatible>;
let openai: ReturnType<typeof createOpenAI>;

beforeAll(async () => {
  t = await startTestPlatform();
  const baseURL = `${t.url}/v1`;
  together = createTogetherAI({ apiKey: t.caller.key, baseURL, fetch: recording });
  compatible = createOpenAICompatible({ name: 'platform', apiKey: t.caller.key, baseURL, supportsStructuredOutputs: true, fetch: recording });
  openai = createOpenAI({ apiKey: t.caller.key, baseURL, fetch: recording });
});
afterAll(() => t?.close());

const weatherInput = z.object({ city: z.string().min(2), unit: z.enum(['celsius', 'fahrenheit']), days: z.number().int().min(1).max(7).optional() });
const weather = tool({
  description: 'The weather in a city',
  inputSchema: weatherInput,
  execute: async ({ city, unit }) => ({ city, unit, temperature: 21 }),
});

const recipe = z.object({
  name: z.string().min(3),
  servings: z.number().int().positive(),
  ingredients: z.array(z.object({ name: z.string(), amount: z.string() })).min(1),
  vegetarian: z.boolean(),
});

describe('text', () => {
  test('generateText and streamText (togetherai) answer the same text, with usage', async () => {
    const { text, usage, finishReason } = await generateText({ model: together(CHAT), prompt: 'What is an agent?', maxOutputTokens: 24 });
    expect(text).toMatch(/^\[local engine\]/);
    expect(finishReason).toBe('length');
    expect(usage.outputTokens).toBe(24);

    const result = streamText({ model: together(CHAT), prompt: 'What is an agent?', maxOutputTokens: 24 });
    let streamed = '';
    for await (const part of result.textStream) streamed += part;
    expect(streamed).toBe(text);
    expect(await result.usage).toMatchObject({ inputTokens: usage.inputTokens, outputTokens: 24 });
    expect(sent.at(-1)).toMatchObject({ stream: true, stream_options: { include_usage: true } });
  });

  test('openai-compatible chatModel, as its README shows', async () => {
    const { text } = await generateText({ model: compatible.chatModel(CHAT), prompt: 'Write a vegetarian lasagna recipe for 4 people.' });
    expect(text).toContain('Write a vegetarian lasagna recipe for 4 people.');
  });
});

describe('structured output from a zod schema (draft-07 JSON Schema)', () => {
  test.each([
    ['openai-compatible (supportsStructuredOutputs)', () => compatible.chatModel(CHAT)],
    ['openai .chat()', () => openai.chat(CHAT)],
  ])('%s: the object validates against the zod schema', async (_, model) => {
    const { output } = await generateText({ model: model(), output: Output.object({ schema: recipe }), prompt: 'Generate a lasagna recipe.' });
    expect(recipe.parse(output)).toEqual(output);
    expect(sent.at(-1).response_format).toMatchObject({ type: 'json_schema', json_schema: { schema: { $schema: DRAFT_07 } } });
  });

  test('togetherai sends json_object without the schema, so no engine here can shape the object (the README says so)', async () => {
    const err = await generateText({ model: together(CHAT), output: Output.object({ schema: recipe }), prompt: 'Generate a lasagna recipe.' }).catch((e) => e);
    expect(sent.at(-1).response_format).toEqual({ type: 'json_object' });
    expect(NoObjectGeneratedError.isInstance(err)).toBe(true);
    expect(JSON.parse(err.text)).toMatchObject({ engine: 'local' });
  });
});

describe('tool calling from a zod schema (draft-07 JSON Schema)', () => {
  test.each([
    ['togetherai', () => together(CHAT)],
    ['openai-compatible', () => compatible.chatModel(CHAT)],
    ['openai .chat()', () => openai.chat(CHAT)],
  ])('%s: required and forced by name give calls whose input validates', async (_, model) => {
    const required = await generateText({ model: model(), tools: { weather }, toolChoice: 'required', prompt: 'Weather in Paris?' });
    expect(sent.at(-1).tools[0].function.parameters.$schema).toBe(DRAFT_07);
    expect(required.toolCalls).toHaveLength(1);
    expect(required.toolCalls[0]!.toolName).toBe('weather');
    expect(weatherInput.parse(required.toolCalls[0]!.input)).toEqual(required.toolCalls[0]!.input);
    // execute ran on the validated input
    expect(required.toolResults[0]!.output).toMatchObject({ temperature: 21 });

    const forced = await generateText({
      model: model(),
      tools: { weather, other: tool({ inputSchema: z.object({ q: z.string() }) }) },
      toolChoice: { type: 'tool', toolName: 'weather' },
      prompt: 'Weather in Paris?',
    });
    expect(sent.at(-1).tool_choice).toEqual({ type: 'function', function: { name: 'weather' } });
    expect(forced.toolCalls.map((c) => c.toolName)).toEqual(['weather']);
  });

  test('a two-step loop: the tool result goes back, and the model answers', async () => {
    const before = sent.length;
    const result = await generateText({
      model: together(CHAT),
      tools: { weather },
      // The first step must call the tool; after it the model may answer (the local engine answers with text).
      prepareStep: ({ stepNumber }) => (stepNumber === 0 ? { toolChoice: { type: 'tool', toolName: 'weather' } } : {}),
      stopWhen: stepCountIs(5),
      prompt: 'What is the weather in Paris?',
    });
    expect(result.steps).toHaveLength(2);
    expect(result.steps[0]!.toolResults[0]!.output).toMatchObject({ temperature: 21 });
    expect(result.text).toMatch(/^\[local engine\]/);
    const second = sent[before + 1];
    const call = second.messages.find((m: any) => m.role === 'assistant').tool_calls[0];
    expect(second.messages.at(-1)).toMatchObject({ role: 'tool', tool_call_id: call.id });
    expect(JSON.parse(second.messages.at(-1).content)).toMatchObject({ temperature: 21 });
    expect(result.steps[1]!.usage.inputTokens).toBeGreaterThan(result.steps[0]!.usage.inputTokens!);
  });
});

describe('embeddings and rerank', () => {
  test('embed and embedMany (togetherai and openai-compatible)', async () => {
    for (const model of [together.embeddingModel('BAAI/bge-base-en-v1.5'), compatible.embeddingModel('BAAI/bge-base-en-v1.5')]) {
      const { embedding } = await embed({ model, value: 'sunny day at the beach' });
      expect(embedding).toHaveLength(768);
      expect(Math.hypot(...embedding)).toBeCloseTo(1, 6);
      const { embeddings } = await embedMany({ model, values: ['sunny day at the beach', 'rainy afternoon in the city', 'snowy night in the mountains'] });
      expect(embeddings).toHaveLength(3);
      expect(embeddings[0]).toEqual(embedding);
    }
  });

  test('rerank (togetherai)', async () => {
    const documents = ['sunny day at the beach', 'rainy afternoon in the city', 'snowy night in the mountains'];
    const { ranking } = await rerank({ model: together.rerankingModel('Salesforce/Llama-Rank-v1'), documents, query: 'a rainy afternoon', topN: 2 });
    expect(ranking).toHaveLength(2);
    expect(ranking[0]!.originalIndex).toBe(1);
  });
});

describe('a listed model that is not serverless', () => {
  test('answers 400 model_not_available, which the SDK reports as an API call error', async () => {
    const err = await generateText({ model: together('Qwen/Qwen2.5-72B-Instruct'), prompt: 'Hi', maxRetries: 0 }).catch((e) => e);
    expect(APICallError.isInstance(err)).toBe(true);
    expect(err.statusCode).toBe(400);
    expect(JSON.parse(err.responseBody).error).toMatchObject({ type: 'invalid_request_error', code: 'model_not_available', param: 'model' });
    expect(err.message).toMatch(/non-serverless model 'Qwen\/Qwen2.5-72B-Instruct'.*dedicated endpoint/);
  });
});
