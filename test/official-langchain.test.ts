// LangChain's OpenAI integration (`@langchain/openai` with `@langchain/core`), as its README shows it, pointed at this
// server's /v1 (`configuration.baseURL`) with the key. Its zod schemas reach the server as JSON Schema (2020-12 from
// zod 4's converter), in tool parameters and in structured outputs.
//
// | LangChain call                                   | HTTP sent                                                      |
// |--------------------------------------------------|----------------------------------------------------------------|
// | ChatOpenAI invoke / stream                       | POST /v1/chat/completions (stream: true)                       |
// | withStructuredOutput(zod, {method: jsonSchema})  | POST /v1/chat/completions with response_format json_schema     |
// | withStructuredOutput(zod, {method: functionCalling}) | POST /v1/chat/completions with one tool, forced by name    |
// | bindTools([tool], {tool_choice})                 | POST /v1/chat/completions with tools                           |
// | OpenAIEmbeddings embedQuery / embedDocuments     | POST /v1/embeddings                                            |
import { HumanMessage, type ToolMessage } from '@langchain/core/messages';
import { tool } from '@langchain/core/tools';
import { ChatOpenAI, OpenAIEmbeddings } from '@langchain/openai';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { z } from 'zod';
import { startTestPlatform, type TestPlatform } from './support/platform.ts';

const CHAT = 'meta-llama/Llama-3.3-70B-Instruct-Turbo';

let t: TestPlatform;
/** Each chat request's JSON body, as LangChain sent it. */
const sent: any[] = [];
let model: ChatOpenAI;

beforeAll(async () => {
  t = await startTestPlatform();
  model = new ChatOpenAI({
    apiKey: t.caller.key,
    model: CHAT,
    maxRetries: 0,
    configuration: {
      baseURL: `${t.url}/v1`,
      fetch: async (url: RequestInfo | URL, init?: RequestInit) => {
        if (String(url).endsWith('/chat/completions')) sent.push(JSON.parse(String(init?.body)));
        return fetch(url, init);
      },
    },
  });
});
afterAll(() => t?.close());

const weather = tool(async ({ city, unit }) => JSON.stringify({ city, unit, temperature: 21 }), {
  name: 'get_weather',
  description: 'The weather in a city',
  schema: z.object({ city: z.string().min(2), unit: z.enum(['celsius', 'fahrenheit']) }),
});

const joke = z.object({
  setup: z.string().describe('The setup of the joke'),
  punchline: z.string().describe('The punchline'),
  rating: z.number().int().min(1).max(10).optional(),
});

describe('ChatOpenAI', () => {
  test('invoke and stream answer the same text', async () => {
    const response = await model.invoke('Hello world!');
    expect(response.content).toMatch(/^\[local engine\].*Hello world!/);
    expect(response.usage_metadata!.input_tokens).toBeGreaterThan(0);

    let streamed = '';
    for await (const chunk of await model.stream([new HumanMessage('Hello world!')])) streamed += chunk.content;
    expect(streamed).toBe(response.content);
    expect(sent.at(-1).stream).toBe(true);
  });

  test.each(['jsonSchema', 'functionCalling'] as const)('withStructuredOutput(zod, {method: %s}) gives an object that validates', async (method) => {
    const structured = model.withStructuredOutput(joke, { method, name: 'joke' });
    const answer = await structured.invoke('Tell me a joke about cats');
    expect(joke.parse(answer)).toEqual(answer);
    const body = sent.at(-1);
    if (method === 'jsonSchema') expect(body.response_format).toMatchObject({ type: 'json_schema', json_schema: { name: 'joke' } });
    else expect(body.tool_choice).toEqual({ type: 'function', function: { name: 'joke' } });
  });

  test('bindTools: a call forced by name validates, and the tool result goes back', async () => {
    const withTools = model.bindTools([weather], { tool_choice: 'get_weather' });
    const question = new HumanMessage('Weather in Paris?');
    const ai = await withTools.invoke([question]);
    expect(ai.tool_calls).toHaveLength(1);
    const call = ai.tool_calls![0]!;
    expect(call.name).toBe('get_weather');
    expect(weather.schema.parse(call.args)).toEqual(call.args);

    const result = (await weather.invoke(call)) as ToolMessage;
    const answer = await model.bindTools([weather]).invoke([question, ai, result]);
    expect(answer.content).toMatch(/^\[local engine\]/);
    expect(sent.at(-1).messages.at(-1)).toMatchObject({ role: 'tool', tool_call_id: call.id });
  });
});

describe('OpenAIEmbeddings', () => {
  test('embedQuery and embedDocuments', async () => {
    const embeddings = new OpenAIEmbeddings({ apiKey: t.caller.key, model: 'BAAI/bge-base-en-v1.5', configuration: { baseURL: `${t.url}/v1` } });
    const query = await embeddings.embedQuery('Hello world');
    expect(query).toHaveLength(768);
    expect(Math.hypot(...query)).toBeCloseTo(1, 6);
    const docs = await embeddings.embedDocuments(['Hello world', 'Bye bye']);
    expect(docs).toHaveLength(2);
    expect(docs[0]).toEqual(query);
  });
});
