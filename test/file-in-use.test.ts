// A file a job still needs cannot be deleted: while a fine-tuning job reading it (training or validation file) or
// an evaluation job reading it (input file) is not terminal, DELETE /v1/files/{id} answers 409 file_in_use (param
// id) and deletes nothing; once the job is terminal the delete works. One rule for both kinds (files/in-use.ts).
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { batchMachine } from '../server/modules/batches/machine.ts';
import { evaluationMachine } from '../server/modules/evaluation/machine.ts';
import { BATCH_TERMINAL, EVALUATION_TERMINAL, FINE_TUNE_TERMINAL } from '../server/modules/files/in-use.ts';
import { fineTuneMachine } from '../server/modules/fine-tuning/machine.ts';
import { expectError } from './support/expect.ts';
import { uploadFile } from './support/files.ts';
import { startTestPlatform, type TestPlatform } from './support/platform.ts';

const BASE = 'meta-llama/Meta-Llama-3.1-8B-Instruct-Reference';
const JUDGE = 'meta-llama/Llama-3.3-70B-Instruct-Turbo';
const CHAT_ROWS = Array.from({ length: 10 }, (_, i) => ({
  messages: [
    { role: 'user', content: `Question ${i}?` },
    { role: 'assistant', content: `Answer ${i}.` },
  ],
}));
const EVAL_ROWS = [
  { question: 'Is the sky blue?', response: 'yes' },
  { question: 'Is fire cold?', response: 'no' },
];

let t: TestPlatform;
beforeAll(async () => {
  t = await startTestPlatform();
});
afterAll(() => t?.close());

const upload = (purpose: 'fine-tune' | 'eval', rows: unknown[] | string) => uploadFile(t.caller, purpose, rows, 'f.jsonl');

const del = (id: string) => t.caller.http.delete(`/v1/files/${id}`);
const classify = (file: string) => ({
  type: 'classify',
  parameters: {
    judge: { model: JUDGE, model_source: 'serverless', system_template: 'Judge: {{ question }}' },
    labels: ['yes', 'no'],
    pass_labels: ['yes'],
    model_to_evaluate: 'response',
    input_data_file_path: file,
  },
});

/** Answers the refusal after checking it is the 409 envelope and that the file is still there. */
async function refused(file: string) {
  const res = await del(file);
  expectError(res, 409, { code: 'file_in_use', param: 'id' });
  expect((await t.caller.http.get(`/v1/files/${file}`)).status).toBe(200);
  expect((await t.caller.http.get(`/v1/files/${file}/content`)).status).toBe(200);
  return res.body.error.message as string;
}

describe('an evaluation holds its input file until it is terminal', () => {
  test('pending: 409 naming the job, nothing deleted; completed: deleted; its result file is not held', async () => {
    const file = await upload('eval', EVAL_ROWS);
    const job = (await t.caller.http.post('/v1/evaluation').send(classify(file))).body.workflow_id as string;
    expect(await refused(file)).toContain(`evaluation job '${job}', which is pending`);
    await t.advance(0);
    const done = (await t.caller.http.get(`/v1/evaluation/${job}`)).body;
    expect(done.status).toBe('completed');
    expect((await del(file)).body).toEqual({ id: file, deleted: true });
    expect((await t.caller.http.get(`/v1/files/${file}`)).status).toBe(404);
    expect((await del(done.results.result_file_id)).body).toEqual({ id: done.results.result_file_id, deleted: true });
  });

  test('a job that ends user_error releases its file; two jobs on one file hold it until both end', async () => {
    const bad = await upload('eval', 'not json\n');
    const job = (await t.caller.http.post('/v1/evaluation').send(classify(bad))).body.workflow_id as string;
    await refused(bad);
    await t.advance(0);
    expect((await t.caller.http.get(`/v1/evaluation/${job}`)).body.status).toBe('user_error');
    expect((await del(bad)).status).toBe(200);

    const shared = await upload('eval', EVAL_ROWS);
    const first = (await t.caller.http.post('/v1/evaluation').send(classify(shared))).body.workflow_id as string;
    await t.advance(0);
    expect((await t.caller.http.get(`/v1/evaluation/${first}`)).body.status).toBe('completed');
    const second = (await t.caller.http.post('/v1/evaluation').send(classify(shared))).body.workflow_id as string;
    expect(await refused(shared)).toContain(`'${second}'`);
    await t.advance(0);
    expect((await del(shared)).status).toBe(200);
  });

  test('a file no job reads deletes at once while another is held', async () => {
    const held = await upload('eval', EVAL_ROWS);
    const free = await upload('eval', EVAL_ROWS);
    await t.caller.http.post('/v1/evaluation').send(classify(held));
    expect((await del(free)).status).toBe(200);
    await refused(held);
    await t.advance(0);
    expect((await del(held)).status).toBe(200);
  });
});

describe('a fine-tuning job holds its files until it is terminal', () => {
  test('training and validation files: 409 while the job runs, deleted once it has completed', async () => {
    const train = await upload('fine-tune', CHAT_ROWS);
    const validation = await upload('fine-tune', CHAT_ROWS.slice(0, 3));
    await t.advance(0);
    const job = (await t.caller.http.post('/v1/fine-tunes').send({ model: BASE, training_file: train, validation_file: validation, n_evals: 1 })).body;
    expect(job.status, JSON.stringify(job)).toBe('pending');
    expect(await refused(train)).toContain(`fine-tuning job '${job.id}', which is pending`);
    await refused(validation);
    for (let i = 0; i < 20 && (await t.caller.http.get(`/v1/fine-tunes/${job.id}`)).body.status !== 'completed'; i++) {
      const status = (await t.caller.http.get(`/v1/fine-tunes/${job.id}`)).body.status;
      expect(await refused(train)).toContain(`which is ${status}`);
      await t.advance(1000);
    }
    expect((await t.caller.http.get(`/v1/fine-tunes/${job.id}`)).body.status).toBe('completed');
    expect((await del(train)).body).toEqual({ id: train, deleted: true });
    expect((await del(validation)).body).toEqual({ id: validation, deleted: true });
  });

  test('a cancelled job releases its file', async () => {
    const train = await upload('fine-tune', CHAT_ROWS);
    await t.advance(0);
    const job = (await t.caller.http.post('/v1/fine-tunes').send({ model: BASE, training_file: train })).body;
    await refused(train);
    expect((await t.caller.http.post(`/v1/fine-tunes/${job.id}/cancel`)).body.status).toBe('cancelled');
    expect((await del(train)).status).toBe(200);
  });
});

test("the rule's terminal states are the machines'", () => {
  expect([...FINE_TUNE_TERMINAL].sort()).toEqual([...fineTuneMachine.terminal].sort());
  expect([...EVALUATION_TERMINAL].sort()).toEqual([...evaluationMachine.terminal].sort());
  expect([...BATCH_TERMINAL].sort()).toEqual([...batchMachine.terminal].sort());
});
