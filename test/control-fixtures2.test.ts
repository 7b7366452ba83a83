// Fixtures, second part (spec/tags/control.yaml applyFixtures): contents put into projects that exist already,
// fine-tunes in given states, videos; used as a CI suite would, through the typed and the official clients.
import { createPlatformClient, type PlatformClient } from '@inference-platform/client';
import Together from 'together-ai';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { expectError } from './support/expect.ts';
import { startTestPlatform, TEST_CONTROL_KEY, type TestPlatform } from './support/platform.ts';

const ulid = (tail: string) => `01jr${'0'.repeat(22 - tail.length)}${tail}`;

let t: TestPlatform;
let control: PlatformClient;
const auth = { Authorization: `Bearer ${TEST_CONTROL_KEY}` };

beforeAll(async () => {
  t = await startTestPlatform();
  control = createPlatformClient({ baseUrl: t.url, apiKey: TEST_CONTROL_KEY });
});
afterAll(() => t?.close());

describe('contents of projects that exist already', () => {
  test('a key and a file put into the default project (by slug) and into one made by the same document (by id)', async () => {
    const defaultProject = await t.services.db.prisma.project.findUniqueOrThrow({ where: { slug: 'default' } });
    const before = await t.services.db.prisma.project.count();
    const secret = 'default-project-key-0123456789';
    const { data, error } = await control.POST('/_control/fixtures', {
      body: {
        organizations: [{ name: 'Made here', projects: [{ id: `proj_${ulid('a1')}`, name: 'Target' }] }],
        projects: [
          {
            project: 'default',
            api_keys: [{ name: 'ci', secret }],
            files: [{ id: `file-${ulid('a2')}`, filename: 'rows.jsonl', purpose: 'eval', content: '{"text": "x"}\n' }],
          },
          { project: `proj_${ulid('a1')}`, api_keys: [{ id: `key_${ulid('a3')}`, name: 'second', secret: 'target-project-key-0123456789' }] },
        ],
      },
    });
    expect(error).toBeUndefined();
    // Only the document's own project is made; the others are filled.
    expect(data!.projects).toEqual([`proj_${ulid('a1')}`]);
    expect(await t.services.db.prisma.project.count()).toBe(before + 1);
    expect(data!.api_keys).toEqual([expect.stringMatching(/^key_/), `key_${ulid('a3')}`]);
    const who = await t.http.get('/v1/whoami').set('Authorization', `Bearer ${secret}`);
    expect(who.body).toMatchObject({ project_id: defaultProject.id, project_slug: 'default' });
    const client = new Together({ apiKey: secret, baseURL: `${t.url}/v1` });
    expect((await client.files.list()).data.map((f) => f.id)).toContain(`file-${ulid('a2')}`);
    const target = await t.http.get('/v1/whoami').set('Authorization', 'Bearer target-project-key-0123456789');
    expect(target.body).toMatchObject({ project_id: `proj_${ulid('a1')}`, organization_name: 'Made here' });
  });

  test('a project found nowhere: 404 naming the reference, nothing made', async () => {
    const before = await t.services.db.prisma.apiKey.count();
    const res = await t.http
      .post('/_control/fixtures')
      .set(auth)
      .send({ projects: [{ project: 'default', api_keys: [{ name: 'k', secret: 'never-made-key-0123456789' }] }, { project: 'no-such-project' }] });
    expectError(res, 404, { code: 'not_found', param: 'projects.1.project' });
    expect(await t.services.db.prisma.apiKey.count()).toBe(before);
  });
});
