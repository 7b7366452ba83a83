// Fixtures, third part (spec/tags/control.yaml applyFixtures): evaluations in given states, checked in the
// document's transaction (a file of the same document); used as a CI suite would, through the typed client and HTTP.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createPlatformClient, type PlatformClient } from '@inference-platform/client';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { loadConfig } from '../server/core/config.ts';
import { expectError } from './support/expect.ts';
import { startTestPlatform, TEST_CONTROL_KEY, type TestPlatform } from './support/platform.ts';

const ulid = (tail: string) => `01js${'0'.repeat(22 - tail.length)}${tail}`;

let t: TestPlatform;
let control: PlatformClient;
const auth = { Authorization: `Bearer ${TEST_CONTROL_KEY}` };

beforeAll(async () => {
  t = await startTestPlatform();
  control = createPlatformClient({ baseUrl: t.url, apiKey: TEST_CONTROL_KEY });
});
afterAll(() => t?.close());

describe('evaluations in given states', () => {
  const JUDGE = 'meta-llama/Llama-3.3-70B-Instruct-Turbo';
  const INPUT = `file-${ulid('e1')}`;
  const secret = 'evaluation-fixture-key-0123456789';
  const rows = ['yes', 'No, it is not.', 'Yes, yes.', 'It depends.'].map((response) => JSON.stringify({ question: 'Well?', response })).join('\n');
  const parameters = (input = INPUT) => ({
    judge: { model: JUDGE, model_source: 'serverless' as const, system_template: 'You judge answers to: {{ question }}' },
    labels: ['yes', 'no'],
    pass_labels: ['yes'],
    model_to_evaluate: 'response',
    input_data_file_path: input,
  });

  test('completed with results, running, queued, pending, error, user_error: on a file of the same document', async () => {
    const p = parameters();
    const { data, error } = await control.POST('/_control/fixtures', {
      body: {
        organizations: [
          {
            name: 'Evaluating',
            projects: [
              {
                name: 'Evals',
                api_keys: [{ name: 'ci', secret }],
                files: [{ id: INPUT, filename: 'rows.jsonl', purpose: 'eval', content: `${rows}\n` }],
                evaluations: [
                  { id: `eval-${ulid('e2')}`, type: 'classify', parameters: p, status: 'completed' },
                  { type: 'classify', parameters: p, status: 'running' },
                  { type: 'classify', parameters: p, status: 'queued' },
                  { type: 'classify', parameters: p },
                  { type: 'classify', parameters: p, status: 'error', error: 'The judge fell over.' },
                  { type: 'classify', parameters: p, status: 'user_error' },
                ],
              },
            ],
          },
        ],
      },
    });
    expect(error).toBeUndefined();
    const ids = data!.evaluations;
    expect(ids[0]).toBe(`eval-${ulid('e2')}`);
    for (const id of ids) expect(id).toMatch(/^eval-[0-7][0-9a-hjkmnp-tv-z]{25}$/);
    const get = async (id: string) => (await t.http.get(`/v1/evaluation/${id}`).set('Authorization', `Bearer ${secret}`)).body;
    const jobs = await Promise.all(ids.map(get));
    expect(jobs.map((j) => j.status)).toEqual(['completed', 'running', 'queued', 'pending', 'error', 'user_error']);
    expect(jobs[0].status_updates.map((u: { status: string }) => u.status)).toEqual(['pending', 'queued', 'running', 'completed']);
    // Two of the four rows say yes; 'It depends.' gives no label, so it is not counted.
    expect(jobs[0].results).toMatchObject({ pass_percentage: 200 / 3, invalid_label_count: 1, result_file_id: expect.stringMatching(/^file-/) });
    expect(jobs[4].results).toEqual({ error: 'The judge fell over.' });
    expect(jobs[4].status_updates.map((u: { status: string }) => u.status)).toEqual(['pending', 'queued', 'running', 'error']);
    expect(jobs[5].results).toEqual({ error: 'The evaluation failed.' });
    // The others are left to the runner: they complete in their own time, as any.
    await t.advance(0);
    expect((await Promise.all(ids.slice(1, 4).map(get))).map((j) => j.status)).toEqual(['completed', 'completed', 'completed']);
  });

  test('parameters the module refuses, a file of another project, a taken id: the field inside the document, nothing made', async () => {
    const before = await t.services.db.prisma.evaluationJob.count();
    const files = await t.services.db.prisma.file.count();
    const body = (evaluation: object) => ({
      projects: [
        {
          project: 'default',
          files: [{ id: `file-${ulid('e3')}`, filename: 'own.jsonl', purpose: 'eval', content: `${rows}\n` }],
          evaluations: [{ type: 'classify', parameters: parameters(`file-${ulid('e3')}`) }, evaluation],
        },
      ],
    });
    const { labels: _, ...unlabelled } = parameters(`file-${ulid('e3')}`);
    expectError(
      await t.http
        .post('/_control/fixtures')
        .set(auth)
        .send(body({ type: 'classify', parameters: unlabelled })),
      400,
      {
        param: 'projects.0.evaluations.1.parameters.labels',
      },
    );
    // The first test's file is another project's, not this one's.
    expectError(
      await t.http
        .post('/_control/fixtures')
        .set(auth)
        .send(body({ type: 'classify', parameters: parameters() })),
      400,
      {
        code: 'file_not_found',
        param: 'projects.0.evaluations.1.parameters.input_data_file_path',
      },
    );
    expectError(
      await t.http
        .post('/_control/fixtures')
        .set(auth)
        .send(body({ id: `eval-${ulid('e2')}`, type: 'classify', parameters: parameters(`file-${ulid('e3')}`) })),
      409,
      { code: 'id_taken', param: 'projects.0.evaluations.1.id' },
    );
    expect(await t.services.db.prisma.evaluationJob.count()).toBe(before);
    expect(await t.services.db.prisma.file.count()).toBe(files);
  });
});

describe('v2 dedicated endpoints and deployments in given states', () => {
  const MODEL = 'meta-llama/Meta-Llama-3.1-8B-Instruct';
  const H100 = 'cr_llama_3_1_8b_h100';
  const secret = 'dedicated-fixture-key-0123456789';
  const request = (name: string, extra: object = {}) => ({ name, model: MODEL, config: H100, autoscaling: { minReplicas: 1, maxReplicas: 1 }, ...extra });

  test('READY (provisioned by the runner), PROVISIONING, FAILED, STOPPED; a deployment serves chat and judges an evaluation', async () => {
    const projectId = `proj_${ulid('d0')}`;
    const { data, error } = await control.POST('/_control/fixtures', {
      body: {
        organizations: [
          {
            name: 'Dedicated',
            projects: [
              {
                id: projectId,
                name: 'Serving',
                slug: 'serving',
                api_keys: [{ name: 'ci', secret }],
                files: [{ id: `file-${ulid('d5')}`, filename: 'rows.jsonl', purpose: 'eval', content: '{"question": "Well?", "response": "yes"}\n' }],
                v2_endpoints: [
                  {
                    id: `ep_${ulid('d1')}`,
                    name: 'serving/chat',
                    deployments: [
                      { id: `dep_${ulid('d2')}`, request: request('live') as never, state: 'DEPLOYMENT_STATE_READY' },
                      { request: request('later') as never },
                      { request: request('broken') as never, state: 'DEPLOYMENT_STATE_FAILED', message: 'The GPU fell over.' },
                      { request: request('parked') as never, state: 'DEPLOYMENT_STATE_STOPPED' },
                    ],
                  },
                ],
                evaluations: [
                  {
                    type: 'classify',
                    parameters: {
                      judge: { model: 'serving/chat/live', model_source: 'dedicated', system_template: 'Judge: {{ question }}' },
                      labels: ['yes', 'no'],
                      pass_labels: ['yes'],
                      model_to_evaluate: 'response',
                      input_data_file_path: `file-${ulid('d5')}`,
                    },
                  },
                ],
              },
            ],
          },
        ],
      },
    });
    expect(error).toBeUndefined();
    expect(data!.v2_endpoints).toEqual([`ep_${ulid('d1')}`]);
    expect(data!.deployments[0]).toBe(`dep_${ulid('d2')}`);
    for (const id of data!.deployments) expect(id).toMatch(/^dep_[0-7][0-9a-hjkmnp-tv-z]{25}$/);
    expect(data!.evaluations).toHaveLength(1);
    const as = { Authorization: `Bearer ${secret}` };
    const endpoint = (await t.http.get(`/v2/projects/${projectId}/endpoints/ep_${ulid('d1')}`).set(as)).body;
    expect(endpoint.name).toBe('serving/chat');
    const deps = await Promise.all(
      data!.deployments.map(async (id) => (await t.http.get(`/v2/projects/${projectId}/endpoints/ep_${ulid('d1')}/deployments/${id}`).set(as)).body),
    );
    expect(deps.map((d) => d.status.state)).toEqual([
      'DEPLOYMENT_STATE_READY',
      'DEPLOYMENT_STATE_PROVISIONING',
      'DEPLOYMENT_STATE_FAILED',
      'DEPLOYMENT_STATE_STOPPED',
    ]);
    expect(deps[2].status.message).toBe('The GPU fell over.');
    expect(deps[0]).toMatchObject({ hardware: expect.any(String), status: { readyReplicas: 1 } });
    // The READY deployment serves at once, addressed by its own name.
    const chat = await t.http
      .post('/v1/chat/completions')
      .set(as)
      .send({ model: 'serving/chat/live', messages: [{ role: 'user', content: 'Hello' }], max_tokens: 8 });
    expect(chat.status, JSON.stringify(chat.body)).toBe(200);
  });

  test('a config the module refuses, a taken id, a taken name: the field inside the document, nothing made', async () => {
    const before = [await t.services.db.prisma.dedicatedEndpoint.count(), await t.services.db.prisma.deployment.count()];
    const body = (endpoint: object) => ({
      projects: [{ project: 'default', v2_endpoints: [{ name: 'fixture-ok', deployments: [{ request: request('d') }] }, endpoint] }],
    });
    expectError(
      await t.http
        .post('/_control/fixtures')
        .set(auth)
        .send(body({ name: 'fixture-bad', deployments: [{ request: request('d', { config: 'cr_nope' }) }] })),
      400,
      { code: 'config_not_found', param: 'projects.0.v2_endpoints.1.deployments.0.request.config' },
    );
    expectError(
      await t.http
        .post('/_control/fixtures')
        .set(auth)
        .send(body({ id: `ep_${ulid('d1')}`, name: 'fixture-2' })),
      409,
      {
        code: 'id_taken',
        param: 'projects.0.v2_endpoints.1.id',
      },
    );
    expectError(
      await t.http
        .post('/_control/fixtures')
        .set(auth)
        .send(body({ name: 'fixture-3', deployments: [{ id: `dep_${ulid('d2')}`, request: request('d') }] })),
      409,
      { code: 'id_taken', param: 'projects.0.v2_endpoints.1.deployments.0.id' },
    );
    expectError(
      await t.http
        .post('/_control/fixtures')
        .set(auth)
        .send(body({ name: 'fixture-ok' })),
      409,
      { param: 'projects.0.v2_endpoints.1.name' },
    );
    expect([await t.services.db.prisma.dedicatedEndpoint.count(), await t.services.db.prisma.deployment.count()]).toEqual(before);
  });
});

describe('FIXTURES_FILE', () => {
  test('applied before the runner starts: a READY deployment starts provisioning, a completed evaluation pending; the runner takes them on', async () => {
    const path = join(mkdtempSync(join(tmpdir(), 'fixtures3-')), 'fixtures.json');
    const file = `file-${ulid('f1')}`;
    writeFileSync(
      path,
      JSON.stringify({
        projects: [
          {
            project: 'default',
            files: [{ id: file, filename: 'rows.jsonl', purpose: 'eval', content: '{"response": "yes"}\n' }],
            v2_endpoints: [
              {
                name: 'from-file',
                deployments: [
                  {
                    id: `dep_${ulid('f2')}`,
                    request: { name: 'd', model: 'meta-llama/Meta-Llama-3.1-8B-Instruct', config: 'cr_llama_3_1_8b_h100', autoscaling: { minReplicas: 1 } },
                    state: 'DEPLOYMENT_STATE_READY',
                  },
                ],
              },
            ],
            evaluations: [
              {
                id: `eval-${ulid('f3')}`,
                type: 'classify',
                parameters: {
                  judge: { model: 'meta-llama/Llama-3.3-70B-Instruct-Turbo', model_source: 'serverless', system_template: 'Judge.' },
                  labels: ['yes', 'no'],
                  pass_labels: ['yes'],
                  model_to_evaluate: 'response',
                  input_data_file_path: file,
                },
                status: 'completed',
              },
            ],
          },
        ],
      }),
    );
    const p = await startTestPlatform({ config: { control: { ...loadConfig({ FIXTURES_FILE: path }).control, key: TEST_CONTROL_KEY } } });
    try {
      const states = async () => [
        (await p.services.db.prisma.deployment.findUniqueOrThrow({ where: { id: `dep_${ulid('f2')}` } })).state,
        (await p.services.db.prisma.evaluationJob.findUniqueOrThrow({ where: { id: `eval-${ulid('f3')}` } })).status,
      ];
      expect(await states()).toEqual(['DEPLOYMENT_STATE_PROVISIONING', 'pending']);
      await p.advance(60_000);
      expect(await states()).toEqual(['DEPLOYMENT_STATE_READY', 'completed']);
    } finally {
      await p.close();
    }
  });
});
