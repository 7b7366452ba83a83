// Evaluation jobs: accepted pending, moved by the runner through queued and running to completed (or user_error),
// each move in status_updates; classify, score and compare judged by the local judge with hand-computed results and
// a result file in Files; the judge through an upstream route and an external OpenAI-compatible server (a stub that
// records what it is sent, with num_workers calls at a time, and a second instance of this server); position bias
// corrected by two passes; the request's rules; lists, the model list, and project scoping.
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { findFile, readFileContent } from '../server/modules/files/index.ts';
import { storeFile } from '../server/modules/files/store.ts';
import { type ScratchDatabase, scratchDatabase } from './support/database.ts';
import { expectError } from './support/expect.ts';
import { type Caller, localUrls, startTestPlatform, type TestPlatform } from './support/platform.ts';
import { type ServerProcess, startServerProcess } from './support/server-process.ts';

const JUDGE = 'meta-llama/Llama-3.3-70B-Instruct-Turbo';
const ROUTED = 'Qwen/Qwen2.5-72B-Instruct-Turbo';

/** A stub OpenAI-compatible server: records each chat request and answers with `answer(body)` after `delayMs`. */
interface Stub {
  url: string;
  requests: { auth?: string; body: any }[];
  maxInFlight: number;
  answer: (body: any) => string;
  delayMs: number;
  close(): Promise<void>;
}

async function startStub(): Promise<Stub> {
  let inFlight = 0;
  const stub = { requests: [], maxInFlight: 0, answer: () => '{"label": "yes"}', delayMs: 0 } as unknown as Stub;
  const read = (req: IncomingMessage) =>
    new Promise<string>((resolve) => {
      let s = '';
      req.on('data', (c) => (s += c));
      req.on('end', () => resolve(s));
    });
  const server: Server = createServer(async (req, res) => {
    const body = JSON.parse(await read(req));
    stub.requests.push({ auth: req.headers.authorization, body });
    inFlight++;
    stub.maxInFlight = Math.max(stub.maxInFlight, inFlight);
    await new Promise((r) => setTimeout(r, stub.delayMs));
    inFlight--;
    if (req.url !== '/v1/chat/completions') return void res.writeHead(404).end('{}');
    res.writeHead(200, { 'Content-Type': 'application/json' });
    res.end(
      JSON.stringify({
        id: 'x',
        object: 'chat.completion',
        choices: [{ index: 0, message: { role: 'assistant', content: stub.answer(body) }, finish_reason: 'stop' }],
      }),
    );
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  stub.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
  stub.close = () => new Promise((r) => server.close(() => r()));
  return stub;
}

let t: TestPlatform;
let stub: Stub;
beforeAll(async () => {
  stub = await startStub();
  t = await startTestPlatform({
    config: {
      urlFetch: localUrls,
      engines: { routes: [{ models: [ROUTED], capabilities: ['chat'], engine: 'upstream', url: stub.url, apiKey: 'routed-key' }] },
    },
  });
});
afterAll(async () => {
  await t?.close();
  await stub?.close();
});

/** An input file (JSON Lines) of the caller's project. */
async function input(rows: unknown[] | string, caller: Caller = t.caller, fileType: 'jsonl' | 'csv' = 'jsonl'): Promise<string> {
  const content = typeof rows === 'string' ? rows : `${rows.map((r) => JSON.stringify(r)).join('\n')}\n`;
  return (await storeFile(t.services, { projectId: caller.identity.projectId, filename: `input.${fileType}`, purpose: 'eval', fileType }, content)).id;
}

/** The lines of a result file, parsed. */
async function resultRows(fileId: string, caller: Caller = t.caller): Promise<any[]> {
  const f = await findFile(t.services, caller.identity.projectId, fileId);
  expect(f, `result file ${fileId}`).not.toBeNull();
  let text = '';
  for await (const chunk of readFileContent(t.services, f!)) text += chunk;
  return text
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l));
}

const judge = (extra: object = {}) => ({ model: JUDGE, model_source: 'serverless', system_template: 'You judge answers to: {{ question }}', ...extra });
const create = (body: object, caller: Caller = t.caller) => caller.http.post('/v1/evaluation').send(body);
const status = (id: string) => t.caller.http.get(`/v1/evaluation/${id}/status`);
const details = (id: string) => t.caller.http.get(`/v1/evaluation/${id}`);

/** Creates a job and lets the runner finish it; answers the job. */
async function evaluated(body: object) {
  const res = await create(body);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  await t.advance(0);
  return (await details(res.body.workflow_id)).body;
}

describe('classify with the local judge', () => {
  test('pending, then queued, running and completed; counts per label, pass percentage, invalid labels; a result file in Files', async () => {
    const file = await input([
      { question: 'Is the sky blue?', response: 'yes' },
      { question: 'Is fire cold?', response: 'No, it is not.' },
      { question: 'Is water wet?', response: 'Yes, yes.' },
      { question: 'Is 2 prime?', response: 'It depends.' },
    ]);
    const res = await create({
      type: 'classify',
      parameters: { judge: judge(), labels: ['yes', 'no'], pass_labels: ['yes'], model_to_evaluate: 'response', input_data_file_path: file },
    });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body).toEqual({ workflow_id: expect.stringMatching(/^eval-/), status: 'pending' });
    const id = res.body.workflow_id;
    expect((await status(id)).body).toEqual({ status: 'pending' });

    await t.advance(0);
    const done = (await details(id)).body;
    expect(done).toMatchObject({ workflow_id: id, type: 'classify', owner_id: t.caller.identity.projectId, status: 'completed' });
    expect(done.status_updates.map((u: any) => u.status)).toEqual(['pending', 'queued', 'running', 'completed']);
    expect(done.status_updates.at(-1).message).toBe('Evaluated 4 rows with the local judge.');
    expect(Date.parse(done.updated_at)).toBeGreaterThanOrEqual(Date.parse(done.created_at));
    // yes, no, yes (twice in one response), none: 2 yes, 1 no, 1 invalid; pass 2 of 3.
    expect(done.results).toEqual({
      generation_fail_count: 0,
      judge_fail_count: 0,
      invalid_label_count: 1,
      pass_percentage: 200 / 3,
      label_counts: JSON.stringify({ yes: 2, no: 1 }),
      result_file_id: expect.stringMatching(/^file-/),
    });
    expect((await status(id)).body).toEqual({ status: 'completed', results: done.results });

    const rows = await resultRows(done.results.result_file_id);
    expect(rows).toHaveLength(4);
    expect(rows[0]).toMatchObject({ question: 'Is the sky blue?', response: 'yes', label: 'yes' });
    expect(JSON.parse(rows[0].judge_answer)).toMatchObject({ judge: 'local-lexical-judge', label: 'yes' });
    expect(rows[3]).toMatchObject({
      label: null,
      invalid_label: "The judge gave no label. No label occurs in the response as a whole word ('yes' 0, 'no' 0).",
    });
    const resultFile = await findFile(t.services, t.caller.identity.projectId, done.results.result_file_id);
    expect(resultFile).toMatchObject({ purpose: 'eval', fileType: 'jsonl', filename: `${id}-results.jsonl` });
  });

  test('responses generated by a model on the local engine: the local chat engine answers, and says it is local', async () => {
    const file = await input([{ question: 'Say hi' }, { question: 'Say bye' }]);
    const job = await evaluated({
      type: 'classify',
      parameters: {
        judge: judge(),
        labels: ['local engine', 'remote engine'],
        pass_labels: ['local engine'],
        model_to_evaluate: {
          model: JUDGE,
          model_source: 'serverless',
          max_tokens: 200,
          temperature: 0.2,
          system_template: 'Be brief.',
          input_template: '{{ question }}',
        },
        input_data_file_path: file,
      },
    });
    expect(job.results).toMatchObject({
      generation_fail_count: 0,
      pass_percentage: 100,
      label_counts: JSON.stringify({ 'local engine': 2, 'remote engine': 0 }),
    });
    const rows = await resultRows(job.results.result_file_id);
    expect(rows[0].response).toMatch(/^\[local engine\].*Your last message was: "Say hi"/);
  });

  test('without model_to_evaluate the judge is given the row itself', async () => {
    const file = await input([{ question: 'q', verdict: 'no' }]);
    const job = await evaluated({ type: 'classify', parameters: { judge: judge(), labels: ['yes', 'no'], pass_labels: ['yes'], input_data_file_path: file } });
    expect(job.results).toMatchObject({ pass_percentage: 0, label_counts: JSON.stringify({ yes: 0, no: 1 }) });
    expect((await resultRows(job.results.result_file_id))[0].response).toBe(JSON.stringify({ question: 'q', verdict: 'no' }));
  });
});

describe('a CSV input file', () => {
  test('its header names the columns; a malformed file ends the job user_error', async () => {
    const csv = 'question,response\n"Is it, really?",yes\nWhy,"no, never"\n';
    const job = await evaluated({
      type: 'classify',
      parameters: {
        judge: judge(),
        labels: ['yes', 'no'],
        pass_labels: ['yes'],
        model_to_evaluate: 'response',
        input_data_file_path: await input(csv, t.caller, 'csv'),
      },
    });
    expect(job.results).toMatchObject({ pass_percentage: 50, label_counts: JSON.stringify({ yes: 1, no: 1 }) });
    expect((await resultRows(job.results.result_file_id))[0]).toMatchObject({ question: 'Is it, really?', response: 'yes', label: 'yes' });
    const bad = await evaluated({
      type: 'classify',
      parameters: {
        judge: judge(),
        labels: ['yes', 'no'],
        pass_labels: ['yes'],
        model_to_evaluate: 'response',
        input_data_file_path: await input('question,response\n"unclosed,yes\n', t.caller, 'csv'),
      },
    });
    expect(bad.status).toBe('user_error');
    expect(bad.results.error).toMatch(/^The input file is not valid CSV: /);
  });
});

describe('score with the local judge', () => {
  test('mean, population std and pass percentage of the valid scores; a row without a reference is a judge failure', async () => {
    // F1 against the reference: 1 (identical), 2/3 ("the cat sat" vs 6 words), 0; on 0..10: 10, 6.67, 0.
    const file = await input([
      { question: 'q1', response: 'the cat sat on the mat', reference: 'the cat sat on the mat' },
      { question: 'q2', response: 'the cat sat', ground_truth: 'the cat sat on the mat' },
      { question: 'q3', response: 'dogs bark', expected: 'the cat sat' },
      { question: 'q4', response: 'no reference here' },
    ]);
    const job = await evaluated({
      type: 'score',
      parameters: { judge: judge(), min_score: 0, max_score: 10, pass_threshold: 5, model_to_evaluate: 'response', input_data_file_path: file },
    });
    const scores = [10, 6.67, 0];
    const mean = scores.reduce((a, b) => a + b) / 3;
    const std = Math.sqrt(scores.reduce((a, s) => a + (s - mean) ** 2, 0) / 3);
    expect(job.status).toBe('completed');
    expect(job.results.aggregated_scores.mean_score).toBeCloseTo(mean, 10);
    expect(job.results.aggregated_scores.std_score).toBeCloseTo(std, 10);
    expect(job.results).toMatchObject({
      aggregated_scores: { pass_percentage: 200 / 3 },
      judge_fail_count: 1,
      invalid_score_count: 0,
      failed_samples: 1,
      generation_fail_count: 0,
    });
    const rows = await resultRows(job.results.result_file_id);
    expect(rows.map((r) => r.score ?? null)).toEqual([10, 6.67, 0, null]);
    expect(rows[3].judge_error).toMatch(/no reference/);
  });
});

describe('compare', () => {
  const rows = [
    { prompt: 'capital of France', a: 'Paris is the capital of France', b: 'London', reference: 'Paris is the capital of France' },
    { prompt: 'capital of Italy', a: 'Madrid', b: 'Rome is the capital of Italy', reference: 'Rome is the capital of Italy' },
    { prompt: 'capital of Spain', a: 'Spain', b: 'spain' },
  ];

  test('the local judge, two passes (A first, then B first), reconciled; the result file has both passes', async () => {
    const job = await evaluated({
      type: 'compare',
      parameters: { judge: judge({ system_template: 'Which is better?' }), model_a: 'a', model_b: 'b', input_data_file_path: await input(rows) },
    });
    expect(job.results).toEqual({ A_wins: 1, B_wins: 1, Ties: 1, generation_fail_count: 0, judge_fail_count: 0, result_file_id: expect.any(String) });
    const out = await resultRows(job.results.result_file_id);
    expect(out[0]).toMatchObject({ response_a: rows[0]!.a, response_b: rows[0]!.b, winner: 'A', flipped_winner: 'A', final_winner: 'A' });
    // Shown B first, the local judge named the first response (B's) the winner: read back, A.
    expect(JSON.parse(out[0].flipped_judge_answer).winner).toBe('B');
    expect(out[2]).toMatchObject({ final_winner: 'tie' });
  });

  test('with disable_position_bias_correction one pass decides, and the file has no flipped fields', async () => {
    const job = await evaluated({
      type: 'compare',
      parameters: {
        judge: judge({ system_template: 'x' }),
        model_a: 'a',
        model_b: 'b',
        disable_position_bias_correction: true,
        input_data_file_path: await input(rows),
      },
    });
    expect(job.results).toMatchObject({ A_wins: 1, B_wins: 1, Ties: 1 });
    const out = await resultRows(job.results.result_file_id);
    expect(Object.keys(out[0]).filter((k) => k.startsWith('flipped'))).toEqual([]);
  });

  test('a judge biased to the first position: ties when corrected, all A when not', async () => {
    stub.answer = () => '{"winner": "A"}';
    const ext = judge({ model: 'any-judge', model_source: 'external', external_base_url: stub.url, external_api_token: 'tok', system_template: 'Pick one.' });
    const file = await input(rows);
    const corrected = await evaluated({ type: 'compare', parameters: { judge: ext, model_a: 'a', model_b: 'b', input_data_file_path: file } });
    expect(corrected.results).toMatchObject({ A_wins: 0, B_wins: 0, Ties: 3, judge_fail_count: 0 });
    const single = await evaluated({
      type: 'compare',
      parameters: { judge: ext, model_a: 'a', model_b: 'b', disable_position_bias_correction: true, input_data_file_path: file },
    });
    expect(single.results).toMatchObject({ A_wins: 3, B_wins: 0, Ties: 0 });
  });

  test('an unreadable verdict in either pass is a judge failure, each failed pass counted', async () => {
    stub.answer = (body) => (body.messages.at(-1).content.startsWith('Response A:\nParis') ? 'no idea' : '{"winner": "B"}');
    const ext = judge({ model: 'any-judge', model_source: 'external', external_base_url: stub.url, external_api_token: 'tok', system_template: 'Pick one.' });
    const job = await evaluated({ type: 'compare', parameters: { judge: ext, model_a: 'a', model_b: 'b', input_data_file_path: await input(rows) } });
    // Row 1: original pass unreadable (1 failure). Rows 2 and 3: B first then B again (= A): disagreement, a tie.
    expect(job.results).toMatchObject({ A_wins: 0, B_wins: 0, Ties: 2, judge_fail_count: 1 });
  });
});

describe('the judge elsewhere', () => {
  test('external: its URL and token, num_workers calls at a time, max_tokens, temperature and the rendered system template', async () => {
    stub.requests.length = 0;
    stub.maxInFlight = 0;
    stub.delayMs = 30;
    stub.answer = (body) => (body.messages.at(-1).content.includes('good') ? 'The response is CORRECT.' : '{"label": "incorrect"}');
    const rows = Array.from({ length: 12 }, (_, i) => ({ question: `q${i}`, response: i % 3 === 0 ? 'a good answer' : 'a bad answer' }));
    const job = await evaluated({
      type: 'classify',
      parameters: {
        judge: judge({
          model: 'gpt-judge',
          model_source: 'external',
          external_base_url: `${stub.url}/`,
          external_api_token: 'sk-external',
          num_workers: 3,
          max_tokens: 64,
          temperature: 0.7,
        }),
        labels: ['correct', 'incorrect'],
        pass_labels: ['correct'],
        model_to_evaluate: 'response',
        input_data_file_path: await input(rows),
      },
    });
    stub.delayMs = 0;
    expect(job.results).toMatchObject({
      judge_fail_count: 0,
      invalid_label_count: 0,
      pass_percentage: 100 / 3,
      label_counts: JSON.stringify({ correct: 4, incorrect: 8 }),
    });
    expect(stub.requests).toHaveLength(12);
    expect(stub.maxInFlight).toBe(3);
    const first = stub.requests.find((r) => r.body.messages.at(-1).content === 'a good answer')!;
    expect(first.auth).toBe('Bearer sk-external');
    expect(first.body).toMatchObject({ model: 'gpt-judge', max_tokens: 64, temperature: 0.7 });
    expect(first.body.messages[0]).toEqual({
      role: 'system',
      content: expect.stringMatching(/^You judge answers to: q\d+\n\nClassify the response with exactly one of these labels: "correct", "incorrect"\./),
    });
    // The token is kept to call the judge, never shown.
    expect(job.parameters.judge.external_api_token).toBe('***');
    expect(JSON.stringify((await t.caller.http.get('/v1/evaluation')).body)).not.toContain('sk-external');
  });

  test('a judge failure (the server answers 500) fails the row, not the job; defaults: max_tokens 32768, temperature 0.05', async () => {
    stub.requests.length = 0;
    const file = await input([{ question: 'q', response: 'x' }]);
    const job = await evaluated({
      type: 'classify',
      parameters: {
        judge: judge({ model: 'j', model_source: 'external', external_base_url: stub.url.replace('/v1', '/nowhere'), external_api_token: 't' }),
        labels: ['a', 'b'],
        pass_labels: ['a'],
        model_to_evaluate: 'response',
        input_data_file_path: file,
      },
    });
    expect(job.status).toBe('completed');
    expect(job.results).toMatchObject({ judge_fail_count: 1, pass_percentage: null });
    expect((await resultRows(job.results.result_file_id))[0].judge_error).toMatch(/external server at .* answered 404 \(Not Found\)/);
    expect(stub.requests[0]!.body).toMatchObject({ max_tokens: 32768, temperature: 0.05 });
  });

  test('models under evaluation generate on their own server, num_workers at a time, with their templates; a failed generation is counted, not judged', async () => {
    stub.requests.length = 0;
    stub.maxInFlight = 0;
    stub.delayMs = 20;
    stub.answer = (body) => `Answer to ${body.messages.at(-1).content}`;
    const gen = {
      model: 'gen-a',
      model_source: 'external',
      external_base_url: stub.url,
      external_api_token: 'g',
      num_workers: 2,
      max_tokens: 50,
      temperature: 0.3,
      system_template: 'You answer {{ topic }} questions.',
      input_template: 'Q: {{ question }}',
    };
    const rows = Array.from({ length: 6 }, (_, i) => ({ topic: 'geo', question: `q${i}`, reference: `Answer to Q: q${i}` }));
    const file = await input(rows);
    // The local judge: A ("Answer to Q: q0", F1 1 against the reference) beats B (the bare question, F1 0.4).
    const job = await evaluated({
      type: 'compare',
      parameters: { judge: judge({ system_template: 'Compare.' }), model_a: gen, model_b: 'question', input_data_file_path: file },
    });
    stub.delayMs = 0;
    expect(job.results).toMatchObject({ A_wins: 6, B_wins: 0, Ties: 0, generation_fail_count: 0, judge_fail_count: 0 });
    expect(stub.requests).toHaveLength(6);
    expect(stub.maxInFlight).toBe(2);
    expect(stub.requests.find((r) => r.body.messages.at(-1).content === 'Q: q0')).toEqual({
      auth: 'Bearer g',
      body: {
        model: 'gen-a',
        max_tokens: 50,
        temperature: 0.3,
        stream: false,
        messages: [
          { role: 'system', content: 'You answer geo questions.' },
          { role: 'user', content: 'Q: q0' },
        ],
      },
    });
    const broken = { ...gen, external_base_url: stub.url.replace('/v1', '/nowhere') };
    const failed = await evaluated({
      type: 'compare',
      parameters: { judge: judge({ system_template: 'Compare.' }), model_a: gen, model_b: broken, input_data_file_path: file },
    });
    expect(failed.results).toMatchObject({ A_wins: 0, B_wins: 0, Ties: 0, generation_fail_count: 6, judge_fail_count: 0 });
    expect((await resultRows(failed.results.result_file_id))[0]).toMatchObject({
      generation_error_a: null,
      generation_error_b: expect.stringMatching(/external server at .* answered 404 \(Not Found\)/),
    });
  });

  test('a serverless judge the engine routes send upstream is called there, with the route key', async () => {
    stub.requests.length = 0;
    stub.answer = () => '{"score": 4}';
    const file = await input([{ question: 'q', response: 'r' }]);
    const job = await evaluated({
      type: 'score',
      parameters: { judge: judge({ model: ROUTED }), min_score: 1, max_score: 5, pass_threshold: 3, model_to_evaluate: 'response', input_data_file_path: file },
    });
    expect(job.status_updates.at(-1).message).toBe('Evaluated 1 rows with the upstream judge.');
    expect(job.results.aggregated_scores).toEqual({ mean_score: 4, std_score: 0, pass_percentage: 100 });
    expect(stub.requests[0]).toMatchObject({ auth: 'Bearer routed-key', body: { model: ROUTED } });
  });
});

describe('an external judge that is a second instance of this server', () => {
  let db: ScratchDatabase;
  let judgeServer: ServerProcess;
  const dataDir = mkdtempSync(join(tmpdir(), 'platform-judge-'));
  beforeAll(async () => {
    db = await scratchDatabase();
    // Its serverless rate limits off: each judge call reserves its max_tokens (32,768 by default), above a new
    // organization's token allowance, and a refused call is a judge failure (as the wrong-token test shows).
    judgeServer = await startServerProcess({ DATABASE_URL: db.url, DATA_DIR: dataDir, RATE_LIMITS: 'off' });
  }, 60_000);
  afterAll(async () => {
    await judgeServer?.stop();
    await db?.drop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  test('its local chat engine answers each row; the one label its answer names is the verdict', async () => {
    const file = await input([
      { question: 'q1', response: 'correct' },
      { question: 'q2', response: 'incorrect' },
      { question: 'q3', response: 'correct' },
    ]);
    const job = await evaluated({
      type: 'classify',
      parameters: {
        judge: judge({
          model: JUDGE,
          model_source: 'external',
          external_base_url: `${judgeServer.url}/v1`,
          external_api_token: judgeServer.key,
          num_workers: 2,
        }),
        labels: ['correct', 'incorrect'],
        pass_labels: ['correct'],
        model_to_evaluate: 'response',
        input_data_file_path: file,
      },
    });
    expect(job.results).toMatchObject({ judge_fail_count: 0, invalid_label_count: 0, label_counts: JSON.stringify({ correct: 2, incorrect: 1 }) });
    expect(job.results.pass_percentage).toBe(200 / 3);
    const out = await resultRows(job.results.result_file_id);
    expect(out[1].judge_answer).toMatch(/^\[local engine\].*not from meta-llama\/Llama-3.3-70B-Instruct-Turbo.*Your last message was: "incorrect"/);
  });

  test('a wrong token: the second instance refuses every call, each a judge failure', async () => {
    const job = await evaluated({
      type: 'classify',
      parameters: {
        judge: judge({ model: JUDGE, model_source: 'external', external_base_url: `${judgeServer.url}/v1`, external_api_token: 'tpk_wrong' }),
        labels: ['correct', 'incorrect'],
        pass_labels: ['correct'],
        model_to_evaluate: 'response',
        input_data_file_path: await input([{ question: 'q', response: 'correct' }]),
      },
    });
    expect(job.results).toMatchObject({ judge_fail_count: 1, label_counts: JSON.stringify({ correct: 0, incorrect: 0 }) });
  });
});

describe('what the input gets wrong ends the job user_error', () => {
  const classify = (file: string, extra: object = {}) => ({
    type: 'classify',
    parameters: { judge: judge(), labels: ['yes', 'no'], pass_labels: ['yes'], model_to_evaluate: 'response', input_data_file_path: file, ...extra },
  });
  test.each([
    ['a line that is not JSON', '{"question": "q", "response": "yes"}\nnot json\n', /Line 2 of the input file is not JSON/],
    ['a line that is not an object', '[1, 2]\n', /Line 1 of the input file is not a JSON object/],
    ['no rows', '\n\n', /no rows/],
    ['a row without the response column', '{"question": "q", "response": "yes"}\n{"question": "q"}\n', /Row 2 has no column 'response'/],
    ['a row without a column the judge template names', '{"response": "yes"}\n', /Row 1: parameters.judge.system_template cannot be rendered/],
  ])('%s', async (_name, content, message) => {
    const job = await evaluated(classify(await input(content)));
    expect(job.status).toBe('user_error');
    expect(job.results.error).toMatch(message);
    expect((await status(job.workflow_id)).body).toEqual({ status: 'user_error', results: { error: job.results.error } });
    expect(job.status_updates.map((u: any) => u.status)).toEqual(['pending', 'queued', 'running', 'user_error']);
  });

  test('the input file deleted after creation', async () => {
    const file = await input([{ question: 'q', response: 'yes' }]);
    const res = await create(classify(file));
    await t.services.db.write((tx) => tx.file.delete({ where: { id: file } }));
    await t.advance(0);
    expect((await status(res.body.workflow_id)).body).toEqual({
      status: 'user_error',
      results: { error: `The input file '${file}' does not exist (any more) in this project.` },
    });
  });
});

describe('the request rules: 400 naming the field, nothing created', () => {
  let file: string;
  beforeAll(async () => {
    file = await input([{ question: 'q', response: 'yes' }]);
  });
  const base = () => ({ judge: judge(), input_data_file_path: file });
  test.each([
    ['classify without labels', 'classify', { pass_labels: ['yes'] }, 'parameters.labels', 'required'],
    ['classify with one label (schema)', 'classify', { labels: ['yes'], pass_labels: ['yes'] }, 'parameters.labels', 'minItems'],
    ['classify with repeated labels', 'classify', { labels: ['yes', 'yes'], pass_labels: ['yes'] }, 'parameters.labels', 'invalid_value'],
    ['classify without pass_labels', 'classify', { labels: ['yes', 'no'] }, 'parameters.pass_labels', 'required'],
    ['a pass label that is not a label', 'classify', { labels: ['yes', 'no'], pass_labels: ['maybe'] }, 'parameters.pass_labels', 'invalid_value'],
    ['score without max_score', 'score', { min_score: 0, pass_threshold: 1 }, 'parameters.max_score', 'required'],
    ['score with min >= max', 'score', { min_score: 5, max_score: 5, pass_threshold: 5 }, 'parameters.min_score', 'invalid_value'],
    ['score with the threshold outside', 'score', { min_score: 0, max_score: 5, pass_threshold: 6 }, 'parameters.pass_threshold', 'invalid_value'],
    ['compare without model_b', 'compare', { model_a: 'a' }, 'parameters.model_b', 'required'],
    ['an empty column name', 'compare', { model_a: '', model_b: 'b' }, 'parameters.model_a', 'invalid_value'],
  ])('%s', async (_name, type, extra, param, code) => {
    const before = await t.services.db.prisma.evaluationJob.count();
    expectError(await create({ type, parameters: { ...base(), ...extra } }), 400, { param, code });
    expect(await t.services.db.prisma.evaluationJob.count()).toBe(before);
  });

  test.each([
    ['a judge that is not a serverless judge model', { model: 'Qwen/Qwen2.5-7B-Instruct' }, 'parameters.judge.model', 'model_not_available'],
    [
      'a dedicated judge that is no endpoint of the project',
      { model_source: 'dedicated', model: 'nobody/none' },
      'parameters.judge.model',
      'model_not_available',
    ],
    ['external without a base URL', { model_source: 'external', external_api_token: 't' }, 'parameters.judge.external_base_url', 'required'],
    [
      'external with a base URL that is not http(s)',
      { model_source: 'external', external_base_url: 'ftp://x', external_api_token: 't' },
      'parameters.judge.external_base_url',
      'invalid_value',
    ],
    ['external without a token', { model_source: 'external', external_base_url: 'http://127.0.0.1:9/v1' }, 'parameters.judge.external_api_token', 'required'],
    ['a malformed template', { system_template: 'Judge {{ question ' }, 'parameters.judge.system_template', 'invalid_template'],
    ['a temperature above 2 (schema)', { temperature: 2.5 }, 'parameters.judge.temperature', 'maximum'],
    ['num_workers 0 (schema)', { num_workers: 0 }, 'parameters.judge.num_workers', 'minimum'],
  ])('%s', async (_name, judgeFields, param, code) => {
    expectError(await create({ type: 'classify', parameters: { ...base(), judge: judge(judgeFields), labels: ['yes', 'no'], pass_labels: ['yes'] } }), 400, {
      param,
      code,
    });
  });

  test('a model to evaluate: its templates and its model are checked too', async () => {
    const model = { model: JUDGE, model_source: 'serverless', max_tokens: 10, temperature: 0, system_template: 's', input_template: '{% if %}' };
    expectError(await create({ type: 'score', parameters: { ...base(), min_score: 0, max_score: 1, pass_threshold: 1, model_to_evaluate: model } }), 400, {
      param: 'parameters.model_to_evaluate.input_template',
      code: 'invalid_template',
    });
    const unknown = { ...model, input_template: '{{ question }}', model: 'nobody/nothing' };
    expectError(await create({ type: 'compare', parameters: { ...base(), model_a: 'a', model_b: unknown } }), 400, {
      param: 'parameters.model_b.model',
      code: 'model_not_available',
    });
  });

  test("an input file that does not exist, or is another project's", async () => {
    expectError(
      await create({ type: 'classify', parameters: { ...base(), labels: ['yes', 'no'], pass_labels: ['yes'], input_data_file_path: 'file-nope' } }),
      400,
      { param: 'parameters.input_data_file_path', code: 'file_not_found' },
    );
    const theirs = await input([{ a: 1 }], t.other);
    expectError(await create({ type: 'classify', parameters: { ...base(), labels: ['yes', 'no'], pass_labels: ['yes'], input_data_file_path: theirs } }), 400, {
      param: 'parameters.input_data_file_path',
      code: 'file_not_found',
    });
  });

  test('an unknown type (schema)', async () => {
    expectError(await create({ type: 'rank', parameters: base() }), 400, { param: 'type' });
  });
});

describe('lists, the model list, and scoping', () => {
  test('newest first, at most limit (0: the default, 10), filtered by status; a bad status or a negative limit is a 400', async () => {
    const caller = await t.newCaller();
    const file = await input([{ question: 'q', response: 'yes' }], caller);
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      t.clock.advance(1000);
      ids.push(
        (
          await create(
            {
              type: 'classify',
              parameters: { judge: judge(), labels: ['yes', 'no'], pass_labels: ['yes'], model_to_evaluate: 'response', input_data_file_path: file },
            },
            caller,
          )
        ).body.workflow_id,
      );
    }
    const list = (q: string) => caller.http.get(`/v1/evaluation${q}`);
    expect((await list('')).body.map((j: any) => j.workflow_id)).toEqual([...ids].reverse());
    expect((await list('?limit=2')).body.map((j: any) => j.workflow_id)).toEqual([ids[2], ids[1]]);
    expect((await list('?limit=1000')).body).toHaveLength(3);
    expect((await list('?status=pending')).body).toHaveLength(3);
    expect((await list('?status=completed')).body).toEqual([]);
    await t.advance(0);
    expect((await list('?status=completed')).body.map((j: any) => j.workflow_id)).toEqual([...ids].reverse());
    expect((await list('?status=completed')).body[0].results.label_counts).toBe(JSON.stringify({ yes: 1, no: 0 }));
    expectError(await list('?status=done'), 400, { param: 'status' });
    expect((await list('?limit=0')).body).toHaveLength(3);
    expectError(await list('?limit=-1'), 400, { code: 'invalid_limit', param: 'limit' });
    // Another project's list does not show them.
    expect((await t.other.http.get('/v1/evaluation')).body.map((j: any) => j.workflow_id)).not.toContain(ids[0]);
  });

  test('the model list: serverless judges, dedicated endpoints of the project, nothing for external', async () => {
    const get = (q = '') => t.caller.http.get(`/v1/evaluation/model-list${q}`);
    const serverless = (await get('?model_source=serverless')).body.model_list;
    expect(serverless).toContain(JUDGE);
    expect(serverless).toContain('Qwen/Qwen3.5-9B');
    expect(serverless).not.toContain('Qwen/Qwen2.5-7B-Instruct');
    expect((await get('?model_source=external')).body).toEqual({ model_list: [] });
    const all = (await get()).body.model_list;
    const dedicated = (await get('?model_source=dedicated')).body.model_list;
    expect(all).toEqual([...serverless, ...dedicated]);
    for (const d of dedicated) expect(d.startsWith(`${t.caller.identity.projectSlug}/`)).toBe(true);
    expectError(await get('?model_source=hub'), 400, { param: 'model_source' });
  });

  test("an unknown id, or another project's job, answers 404", async () => {
    expectError(await details('eval-nope'), 404, { param: 'id' });
    expectError(await status('eval-nope'), 404, { param: 'id' });
    const file = await input([{ question: 'q', response: 'yes' }]);
    const id = (
      await create({
        type: 'classify',
        parameters: { judge: judge(), labels: ['yes', 'no'], pass_labels: ['yes'], model_to_evaluate: 'response', input_data_file_path: file },
      })
    ).body.workflow_id;
    expectError(await t.other.http.get(`/v1/evaluation/${id}`), 404, { param: 'id' });
    expectError(await t.other.http.get(`/v1/evaluation/${id}/status`), 404, { param: 'id' });
  });
});

describe('durability', () => {
  test('a restart with jobs pending and queued: each finishes once', async () => {
    const file = await input([{ question: 'q', response: 'yes' }]);
    const body = {
      type: 'classify',
      parameters: { judge: judge(), labels: ['yes', 'no'], pass_labels: ['yes'], model_to_evaluate: 'response', input_data_file_path: file },
    };
    const a = (await create(body)).body.workflow_id;
    await t.restart();
    const b = (await create(body)).body.workflow_id;
    await t.advance(0);
    for (const id of [a, b]) {
      const job = (await details(id)).body;
      expect(job.status).toBe('completed');
      expect(job.status_updates.map((u: any) => u.status)).toEqual(['pending', 'queued', 'running', 'completed']);
    }
  });

  test('an evaluation that keeps failing is given up: error, with the reason', async () => {
    const file = await input([{ question: 'q', response: 'yes' }]);
    const id = (
      await create({
        type: 'classify',
        parameters: { judge: judge(), labels: ['yes', 'no'], pass_labels: ['yes'], model_to_evaluate: 'response', input_data_file_path: file },
      })
    ).body.workflow_id;
    // Stored parameters no request could give (no labels) make every attempt throw: retried with backoff, then given up.
    const job = await t.services.db.prisma.evaluationJob.findUniqueOrThrow({ where: { id } });
    await t.services.db.write((tx) =>
      tx.evaluationJob.update({ where: { id }, data: { parameters: JSON.stringify({ ...JSON.parse(job.parameters), labels: null }) } }),
    );
    const broken = id;
    for (let i = 0; i < 12; i++) await t.advance(60_000);
    const failed = (await details(broken)).body;
    expect(failed.status).toBe('error');
    expect(failed.results.error).toMatch(/^The evaluation could not be completed: /);
    expect(failed.status_updates.at(-1)).toMatchObject({ status: 'error' });
  });
});
