// The official together-ai client (0.52.0), unchanged but for baseURL, on Files: upload (through the documented
// multipart operation: the SDK's `files.upload` helper wants a 302 signed-URL flow and, in 0.52.0, fails on Node 18+
// before sending a byte), retrieve, list, content, delete.
import Together from 'together-ai';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { startTestPlatform, type TestPlatform } from './support/platform.ts';

let t: TestPlatform;
let client: Together;
beforeAll(async () => {
  t = await startTestPlatform();
  client = new Together({ apiKey: t.caller.key, baseURL: `${t.url}/v1`, maxRetries: 0 });
});
afterAll(() => t?.close());

test('upload a fine-tuning dataset, poll it to COMPLETED, read it back, list it, delete it', async () => {
  const dataset = `${JSON.stringify({
    messages: [
      { role: 'user', content: 'Hi' },
      { role: 'assistant', content: 'Hello!' },
    ],
  })}\n`;
  const form = new FormData();
  form.append('purpose', 'fine-tune');
  form.append('file_name', 'chat.jsonl');
  form.append('file_type', 'jsonl');
  form.append('file', new Blob([dataset]), 'chat.jsonl');
  const uploaded = (await client.post('/files/upload', { body: form })) as Together.FileResponse;
  expect(uploaded).toMatchObject({ object: 'file', filename: 'chat.jsonl', purpose: 'fine-tune', FileType: 'jsonl', processing_status: 'PENDING' });

  await t.advance(0);
  const file = await client.files.retrieve(uploaded.id);
  expect(file.processing_status).toBe('COMPLETED');
  expect(file.validation_report).toMatchObject({ valid: true, dataset_format: 'CONVERSATION', nlines: 1 });

  const content = await client.files.content(uploaded.id);
  expect(await content.text()).toBe(dataset);
  expect((await client.files.list()).data.map((f) => f.id)).toContain(uploaded.id);

  expect(await client.files.delete(uploaded.id)).toEqual({ id: uploaded.id, deleted: true });
  await expect(client.files.retrieve(uploaded.id)).rejects.toMatchObject({ status: 404 });
});
