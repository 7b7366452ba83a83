// Fixtures (spec/tags/control.yaml applyFixtures, FIXTURES_FILE), used as a CI suite would: a fixed key made by
// the fixture, then read back through the official client.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createPlatformClient, type PlatformClient } from '@inference-platform/client';
import Together from 'together-ai';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { loadConfig } from '../server/core/config.ts';
import { expectError } from './support/expect.ts';
import { startTestPlatform, TEST_CONTROL_KEY, type TestPlatform } from './support/platform.ts';

const ulid = (tail: string) => `01jq${'0'.repeat(22 - tail.length)}${tail}`;
const SECRET = 'ci-fixed-key-0123456789abcdef';
const document = {
  organizations: [
    {
      id: `org_${ulid('a1')}`,
      name: 'Acme',
      projects: [
        {
          id: `proj_${ulid('a2')}`,
          name: 'Research',
          slug: 'research',
          api_keys: [{ id: `key_${ulid('a3')}`, name: 'ci', secret: SECRET }],
          files: [
            { id: `file-${ulid('a4')}`, filename: 'eval.jsonl', purpose: 'eval' as const, content: '{"text": "fixture row"}\n' },
            { filename: 'train.jsonl', purpose: 'fine-tune' as const, content: '{"text": "a"}\n{"text": "b"}\n' },
          ],
        },
        { name: 'Research' },
      ],
    },
  ],
};

let t: TestPlatform;
let control: PlatformClient;
const auth = { Authorization: `Bearer ${TEST_CONTROL_KEY}` };

beforeAll(async () => {
  t = await startTestPlatform();
  control = createPlatformClient({ baseUrl: t.url, apiKey: TEST_CONTROL_KEY });
});
afterAll(() => t?.close());

describe('applyFixtures', () => {
  test('makes organizations, projects, a key with the given secret and files with content, with the given ids', async () => {
    const { data, error } = await control.POST('/_control/fixtures', { body: document });
    expect(error).toBeUndefined();
    expect(data).toMatchObject({
      object: 'fixtures',
      organizations: [`org_${ulid('a1')}`],
      projects: [`proj_${ulid('a2')}`, expect.stringMatching(/^proj_/)],
      api_keys: [`key_${ulid('a3')}`],
      files: [`file-${ulid('a4')}`, expect.stringMatching(/^file-/)],
    });
    const who = await t.http.get('/v1/whoami').set('Authorization', `Bearer ${SECRET}`);
    expect(who.body).toMatchObject({
      api_key_id: `key_${ulid('a3')}`,
      project_id: `proj_${ulid('a2')}`,
      project_slug: 'research',
      organization_id: `org_${ulid('a1')}`,
      organization_name: 'Acme',
    });
    // The second project's slug is derived from its name, as the CLI derives it.
    const second = data!.projects[1]!;
    expect((await t.services.db.prisma.project.findUniqueOrThrow({ where: { id: second } })).slug).toBe('research-2');

    const client = new Together({ apiKey: SECRET, baseURL: `${t.url}/v1` });
    const listed = await client.files.list();
    expect(listed.data.map((f) => [f.id, f.filename, f.purpose]).sort()).toEqual(
      [
        [`file-${ulid('a4')}`, 'eval.jsonl', 'eval'],
        [data!.files[1], 'train.jsonl', 'fine-tune'],
      ].sort(),
    );
    const content = await client.files.content(`file-${ulid('a4')}`);
    expect(await content.text()).toBe('{"text": "fixture row"}\n');
    expect(
      (await client.chat.completions.create({ model: 'meta-llama/Llama-3.3-70B-Instruct-Turbo', messages: [{ role: 'user', content: 'hi' }], max_tokens: 3 }))
        .choices,
    ).toHaveLength(1);
    // The secret is stored only as its hash.
    const keyRow = await t.services.db.prisma.apiKey.findUniqueOrThrow({ where: { id: `key_${ulid('a3')}` } });
    expect(Object.values(keyRow).map(String)).not.toContain(SECRET);
    expect(keyRow.hash).not.toContain(SECRET);
  });

  test('applied twice: 409 naming the first id taken, and nothing of the second application is made', async () => {
    const before = await t.services.db.prisma.organization.count();
    const again = { organizations: [{ name: 'Made first, then undone' }, ...document.organizations] };
    expectError(await t.http.post('/_control/fixtures').set(auth).send(again), 409, { code: 'id_taken', param: 'organizations.1.id' });
    expect(await t.services.db.prisma.organization.count()).toBe(before);
    const secretAgain = { organizations: [{ name: 'Other', projects: [{ name: 'P', api_keys: [{ name: 'copy', secret: SECRET }] }] }] };
    expectError(await t.http.post('/_control/fixtures').set(auth).send(secretAgain), 409, {
      code: 'secret_taken',
      param: 'organizations.0.projects.0.api_keys.0.secret',
    });
    const slugAgain = { organizations: [{ name: 'Other', projects: [{ name: 'P', slug: 'research' }] }] };
    expectError(await t.http.post('/_control/fixtures').set(auth).send(slugAgain), 409, { code: 'slug_taken', param: 'organizations.0.projects.0.slug' });
    expect(await t.services.db.prisma.organization.count()).toBe(before);
  });

  test('a bad id form, a file type its purpose refuses, a short secret: 400 naming the field, nothing made', async () => {
    const before = await t.services.db.prisma.project.count();
    expectError(
      await t.http
        .post('/_control/fixtures')
        .set(auth)
        .send({ organizations: [{ name: 'X', projects: [{ name: 'Y', id: 'proj_nope' }] }] }),
      400,
      {
        param: 'organizations.0.projects.0.id',
      },
    );
    expectError(
      await t.http
        .post('/_control/fixtures')
        .set(auth)
        .send({
          organizations: [{ name: 'X', projects: [{ name: 'Y', files: [{ filename: 'a.csv', purpose: 'fine-tune', file_type: 'csv', content: 'a,b\n' }] }] }],
        }),
      400,
      { code: 'unsupported_file_type', param: 'organizations.0.projects.0.files.0.file_type' },
    );
    expectError(
      await t.http
        .post('/_control/fixtures')
        .set(auth)
        .send({ organizations: [{ name: 'X', projects: [{ name: 'Y', api_keys: [{ name: 'k', secret: 'short' }] }] }] }),
      400,
      {
        param: 'organizations.0.projects.0.api_keys.0.secret',
      },
    );
    expect(await t.services.db.prisma.project.count()).toBe(before);
  });
});

describe('queue jobs in given states', () => {
  test('pending, canceled, done with outputs, failed with an error; a built-in chat job is run by its worker', async () => {
    const model = 'acme/fixture-queue';
    const CHAT = 'meta-llama/Llama-3.3-70B-Instruct-Turbo';
    const secret = 'queue-fixture-key-0123456789';
    const { data } = await control.POST('/_control/fixtures', {
      body: {
        organizations: [
          {
            name: 'Queues',
            projects: [
              {
                name: 'Jobs',
                api_keys: [{ name: 'ci', secret }],
                queue_jobs: [
                  { request_id: `req_${ulid('b1')}`, model, payload: { n: 1 }, priority: 5 },
                  { model, payload: { n: 2 }, status: 'canceled' },
                  { model, payload: { n: 3 }, status: 'done', outputs: { answer: 42 } },
                  { model, payload: { n: 4 }, status: 'failed', error: { message: 'GPU fell over', code: 'gpu_lost' } },
                  { model: CHAT, payload: { messages: [{ role: 'user', content: 'hi' }], max_tokens: 3 } },
                ],
              },
            ],
          },
        ],
      },
    });
    const [pending, canceled, done, failed, chat] = data!.queue_jobs;
    expect(pending).toBe(`req_${ulid('b1')}`);
    const client = new Together({ apiKey: secret, baseURL: `${t.url}/v1` });
    const status = (request_id: string, m = model) => client.beta.jig.queue.retrieve({ model: m, request_id });
    expect(await status(pending!)).toMatchObject({ status: 'pending', priority: 5, inputs: { n: 1 } });
    expect(await status(canceled!)).toMatchObject({ status: 'canceled', done_at: expect.any(String) });
    expect(await status(done!)).toMatchObject({ status: 'done', outputs: { answer: 42 } });
    expect(await status(failed!)).toMatchObject({ status: 'failed', info: { error: { message: 'GPU fell over', code: 'gpu_lost' } } });
    expect(await client.beta.jig.queue.metrics({ model })).toEqual({ messages_running: 0, messages_waiting: 1, total_jobs: 1 });
    await t.services.runner.drain();
    expect(await status(chat!, CHAT)).toMatchObject({ status: 'done', outputs: expect.any(Object) });
  });

  test("a job the queue's own checks refuse: 400 naming the field inside the document", async () => {
    const bad = {
      organizations: [
        { name: 'Q', projects: [{ name: 'J', queue_jobs: [{ model: 'meta-llama/Llama-3.3-70B-Instruct-Turbo', payload: { prompt: 'no messages' } }] }] },
      ],
    };
    expectError(await t.http.post('/_control/fixtures').set(auth).send(bad), 400, { param: 'organizations.0.projects.0.queue_jobs.0.payload.messages' });
  });
});

describe('videos in given states', () => {
  test('failed with its error code (the official client sees error.code); in_progress, which the runner renders', async () => {
    const secret = 'video-fixture-key-0123456789';
    const T2V = 'Wan-AI/Wan2.2-T2V-A14B';
    const small = { width: 128, height: 72, seconds: '1', fps: 12 };
    const { data, error } = await control.POST('/_control/fixtures', {
      body: {
        organizations: [
          {
            name: 'Videos',
            projects: [
              {
                name: 'Renders',
                api_keys: [{ name: 'ci', secret }],
                videos: [
                  {
                    id: `video_${ulid('c1')}`,
                    request: { model: T2V, prompt: 'a storm', ...small },
                    status: 'failed',
                    error: { code: 'content_policy', message: 'Refused.' },
                  },
                  { request: { model: T2V, prompt: 'a calm sea', ...small } },
                ],
              },
            ],
          },
        ],
      },
    });
    expect(error).toBeUndefined();
    const client = new Together({ apiKey: secret, baseURL: `${t.url}/v2`, maxRetries: 0 });
    const failed = await client.videos.retrieve(`video_${ulid('c1')}`);
    expect(failed).toMatchObject({ status: 'failed', error: { code: 'content_policy', message: 'Refused.' } });
    expect((await client.videos.retrieve(data!.videos[1]!)).status).toBe('in_progress');
    await t.advance(0);
    expect((await client.videos.retrieve(data!.videos[1]!)).status).toBe('completed');
  });

  test('a request the video module refuses: its 404 naming the field inside the document, nothing made', async () => {
    const bad = { organizations: [{ name: 'V', projects: [{ name: 'R', videos: [{ request: { model: 'no/such-video-model', prompt: 'x' } }] }] }] };
    expectError(await t.http.post('/_control/fixtures').set(auth).send(bad), 404, {
      code: 'model_not_found',
      param: 'organizations.0.projects.0.videos.0.request.model',
    });
  });
});

describe('FIXTURES_FILE', () => {
  const file = (name: string, text: string) => {
    const path = join(mkdtempSync(join(tmpdir(), 'fixtures-')), name);
    writeFileSync(path, text);
    return path;
  };
  const withFile = (path: string) => ({ control: { ...loadConfig({ FIXTURES_FILE: path }).control, key: TEST_CONTROL_KEY } });

  test('applied at start once per database (a restart skips it), and again after a platform reset', async () => {
    const yaml = [
      'organizations:',
      '  - name: From a file',
      '    projects:',
      '      - name: CI',
      '        api_keys:',
      `          - { name: ci, secret: ${SECRET} }`,
    ].join('\n');
    const p = await startTestPlatform({ config: withFile(file('fixtures.yaml', yaml)) });
    try {
      const whoami = () => p.http.get('/v1/whoami').set('Authorization', `Bearer ${SECRET}`);
      expect((await whoami()).body).toMatchObject({ organization_name: 'From a file', project_name: 'CI' });
      await p.restart();
      expect((await whoami()).status).toBe(200);
      await p.http.post('/_control/reset').set(auth);
      expect((await whoami()).body).toMatchObject({ organization_name: 'From a file' });
      expect(await p.services.db.prisma.organization.count({ where: { name: 'From a file' } })).toBe(1);
    } finally {
      await p.close();
    }
  });

  test('a document the schema refuses stops the start, naming the variable and the field', async () => {
    const json = JSON.stringify({ organizations: [{ name: 'X', id: 'org_bad' }] });
    await expect(startTestPlatform({ config: withFile(file('fixtures.json', json)) })).rejects.toThrow(
      /^FIXTURES_FILE \(.*\) cannot be applied: organizations\.0\.id must match pattern/,
    );
  });
});
