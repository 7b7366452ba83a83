// A JSON Schema carried in the prompt (the spec's Inference tag, "Structured output from the prompt"): the local
// engine answers an object valid against it when the request asks for JSON, fenced when the prompt asks for a code
// block. Through the libraries that ask so (Instructor's JSON and MD_JSON modes, whose zod 3 schemas are
// `zod/v3`; LangChain's jsonMode with its format instructions) and plain requests.
import Instructor from '@instructor-ai/instructor';
import { StructuredOutputParser } from '@langchain/core/output_parsers';
import { ChatOpenAI } from '@langchain/openai';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { z } from 'zod';
import { z as z3 } from 'zod/v3';
import { validatorOf } from '../server/engines/json-schema.ts';
import { startTestPlatform, type TestPlatform } from './support/platform.ts';

const CHAT = 'meta-llama/Llama-3.3-70B-Instruct-Turbo';
let t: TestPlatform;
let openai: OpenAI;
beforeAll(async () => {
  t = await startTestPlatform();
  openai = new OpenAI({ apiKey: t.caller.key, baseURL: `${t.url}/v1`, maxRetries: 0 });
});
afterAll(() => t?.close());

const USER = {
  type: 'object',
  properties: {
    name: { type: 'string', minLength: 2 },
    age: { type: 'integer', minimum: 18, maximum: 99 },
    tags: { type: 'array', items: { enum: ['a', 'b'] }, minItems: 1 },
  },
  required: ['name', 'age', 'tags'],
  additionalProperties: false,
};
const content = async (body: object) => (await openai.chat.completions.create({ model: CHAT, ...body } as never)).choices[0]!.message.content!;

describe('Instructor (zod 3 response models)', () => {
  const User = z3.object({ name: z3.string().min(2), age: z3.number().int().min(18).max(99), email: z3.string().email() });
  test.each(['JSON', 'MD_JSON'] as const)('%s mode parses its response_model from the local engine', async (mode) => {
    const client = Instructor({ client: openai, mode });
    const user = await client.chat.completions.create({
      model: CHAT,
      messages: [{ role: 'user', content: 'Jason Liu is 30 years old.' }],
      response_model: { schema: User, name: 'User' },
      max_retries: 0,
    });
    const { _meta, ...fields } = user as Record<string, unknown>;
    expect(User.parse(fields)).toEqual(fields);
  });
});

describe("LangChain's jsonMode", () => {
  test('withStructuredOutput(zod, { method: jsonMode }) with the format instructions in the prompt', async () => {
    const joke = z.object({ setup: z.string().min(3), punchline: z.string(), rating: z.number().int().min(1).max(10) });
    const model = new ChatOpenAI({ apiKey: t.caller.key, model: CHAT, maxRetries: 0, configuration: { baseURL: `${t.url}/v1` } });
    const instructions = StructuredOutputParser.fromZodSchema(joke).getFormatInstructions();
    const out = await model.withStructuredOutput(joke, { method: 'jsonMode' }).invoke(`Tell me a joke.\n${instructions}`);
    expect(joke.parse(out)).toEqual(out);
  });
});

describe('plain requests', () => {
  test('json_object with the schema in a system message: an object valid against it', async () => {
    const text = await content({
      response_format: { type: 'json_object' },
      messages: [
        { role: 'system', content: `Answer with JSON following this schema: ${JSON.stringify(USER)}` },
        { role: 'user', content: 'Make up a user.' },
      ],
    });
    expect(validatorOf(USER)(JSON.parse(text))).toBe(true);
  });

  test('no response_format, the schema in a fenced block, a code block asked for: a fenced object', async () => {
    const text = await content({
      messages: [
        { role: 'user', content: `Reply with JSON in a markdown code block, per this JSON Schema:\n\`\`\`json\n${JSON.stringify(USER, null, 2)}\n\`\`\`` },
      ],
    });
    const fenced = /^```json\n([\s\S]*)\n```$/.exec(text);
    expect(fenced, text).not.toBeNull();
    expect(validatorOf(USER)(JSON.parse(fenced![1]!))).toBe(true);
  });

  test('a schema in a message that asks nothing of JSON, or a text response_format: the usual text', async () => {
    const plain = await content({ messages: [{ role: 'user', content: `What does ${JSON.stringify({ type: 'object', properties: {} })} mean?` }] });
    expect(plain).toMatch(/^\[local engine\]/);
    const asText = await content({ response_format: { type: 'text' }, messages: [{ role: 'user', content: `JSON schema: ${JSON.stringify(USER)}` }] });
    expect(asText).toMatch(/^\[local engine\]/);
  });
});
