// The official together-ai client (0.52.0) against this server, changing nothing but its baseURL: create an
// evaluation, poll its status until it completes, read it back, and list it.
import Together from 'together-ai';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { storeFile } from '../server/modules/files/store.ts';
import { startTestPlatform, type TestPlatform } from './support/platform.ts';

let t: TestPlatform;
let client: Together;
beforeAll(async () => {
  t = await startTestPlatform();
  client = new Together({ apiKey: t.caller.key, baseURL: `${t.url}/v1`, maxRetries: 0 });
});
afterAll(() => t?.close());

test('evals.create, evals.status, evals.retrieve and evals.list', async () => {
  const file = await storeFile(
    t.services,
    { projectId: t.caller.identity.projectId, filename: 'qa.jsonl', purpose: 'eval', fileType: 'jsonl' },
    ['{"question": "Is the sky blue?", "answer": "yes"}', '{"question": "Is fire cold?", "answer": "no"}'].join('\n'),
  );
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
});
