// The official together-ai client (0.52.0) against this server, changing nothing but its baseURL: upload the input
// (the documented multipart POST /files/upload, as the client's own upload helper needs a signed-URL flow this server
// does not offer), create an evaluation, poll its status until it completes, read it back, list it, and download
// its result file.
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

test('evals.create, evals.status, evals.retrieve and evals.list', async () => {
  const form = new FormData();
  form.append('purpose', 'eval');
  form.append('file_name', 'qa.jsonl');
  form.append('file_type', 'jsonl');
  form.append('file', new Blob(['{"question": "Is the sky blue?", "answer": "yes"}\n{"question": "Is fire cold?", "answer": "no"}\n']), 'qa.jsonl');
  const file = (await client.post('/files/upload', { body: form })) as Together.FileResponse;
  const created = await client.evals.create({
    type: 'classify',
    parameters: {
      input_data_file_path: file.id,
      judge: { model: 'Qwen/Qwen3.5-9B', model_source: 'serverless', system_template: 'Imagine you are a helpful assistant judging: {{ question }}' },
      labels: ['yes', 'no'],
      pass_labels: ['yes'],
      model_to_evaluate: 'answer',
    },
  });
  expect(created).toEqual({ workflow_id: expect.stringMatching(/^eval-/), status: 'pending' });
  const id = created.workflow_id!;
  expect(await client.evals.status(id)).toEqual({ status: 'pending' });

  await t.advance(0);
  const status = await client.evals.status(id);
  expect(status.status).toBe('completed');
  expect(status.results).toMatchObject({ pass_percentage: 50, label_counts: '{"yes":1,"no":1}', invalid_label_count: 0 });

  const job = await client.evals.retrieve(id);
  expect(job).toMatchObject({ workflow_id: id, type: 'classify', status: 'completed', results: status.results });
  expect(job.parameters).toMatchObject({ labels: ['yes', 'no'], input_data_file_path: file.id });

  const list = await client.evals.list({ status: 'completed', limit: 5 });
  expect(list.map((j) => j.workflow_id)).toContain(id);

  const results = await client.files.content((status.results as { result_file_id: string }).result_file_id);
  const rows = (await results.text())
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l));
  expect(rows.map((r) => [r.question, r.label])).toEqual([
    ['Is the sky blue?', 'yes'],
    ['Is fire cold?', 'no'],
  ]);
});
