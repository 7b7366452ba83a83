// Every string a database index holds has a bound. PostgreSQL refuses an index entry over 2704 bytes (a third of
// a page; a long value is compressed first, so what fits depends on the text), an error the server could only
// answer 500, while SQLite takes anything: so every indexed string column a user can write has a maxLength in the
// contract (400 past it), small enough that the index's entry fits at 4 bytes a character, and every other indexed
// string column says why no user can make it long. Read from prisma/models/*.prisma and the generated contract: a
// new index on a string column fails here until it is classified. Then each bound is tried through the API, with
// text that does not compress (4-byte characters), on the database in use.
import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { type OperationId, operations } from '../generated/operations.ts';
import { root } from '../server/core/paths.ts';
import { expectError } from './support/expect.ts';
import { startTestPlatform, TEST_CONTROL_KEY, type TestPlatform } from './support/platform.ts';

const spec = JSON.parse(readFileSync(join(root, 'generated/openapi.json'), 'utf8'));

/** PostgreSQL's largest B-tree entry, in bytes. */
const INDEX_ENTRY_BYTES = 2704;
/** What each indexed column the server writes (an id, a state, a hash) is allowed in the budget, in bytes. */
const SERVER_COLUMN_BYTES = 128;

interface Writer {
  op: OperationId;
  in: 'body' | 'query';
  field: string;
}

/** Indexed string columns a user writes, with every operation field that writes them. */
const USER_WRITTEN: Record<string, Writer[]> = {
  'DedicatedEndpoint.name': [
    { op: 'createV2Endpoint', in: 'body', field: 'name' },
    { op: 'updateV2Endpoint', in: 'body', field: 'name' },
    { op: 'deployModel', in: 'body', field: 'endpointName' },
  ],
  'Deployment.name': [
    { op: 'createDeployment', in: 'body', field: 'name' },
    { op: 'updateDeployment', in: 'body', field: 'name' },
    { op: 'deployModel', in: 'body', field: 'deploymentName' },
  ],
  'QueueJob.model': [{ op: 'submitQueueJob', in: 'body', field: 'model' }],
  'Volume.name': [
    { op: 'createVolume', in: 'body', field: 'name' },
    { op: 'updateVolume', in: 'body', field: 'name' },
  ],
  'Secret.name': [
    { op: 'createSecret', in: 'body', field: 'name' },
    { op: 'updateSecret', in: 'body', field: 'name' },
  ],
  'ContainerDeployment.name': [
    { op: 'createContainerDeployment', in: 'body', field: 'name' },
    { op: 'updateContainerDeployment', in: 'body', field: 'name' },
  ],
  'IdempotencyRecord.key': [{ op: 'createRemediation', in: 'query', field: 'remediation_id' }],
  'ShadowExperiment.name': [{ op: 'createShadowExperiment', in: 'body', field: 'name' }],
  'ControlSnapshot.name': [{ op: 'createSnapshot', in: 'body', field: 'name' }],
  'ShadowTarget.name': [
    { op: 'createShadowTarget', in: 'body', field: 'name' },
    { op: 'updateShadowTarget', in: 'body', field: 'name' },
  ],
};

/**
 * Indexed string columns no user can make long, and why. Columns named `id` or ending in `Id` are ids the server
 * makes, or references to a row's id (the row must exist before it is referenced), and need no entry here.
 */
const SERVER_WRITTEN: Record<string, string> = {
  'Project.slug': 'made by the CLI, a DNS label of at most 63 characters (accounts.ts)',
  'ApiKey.hash': "the key's SHA-256, in hex",
  'SeedRun.module': "a module's name",
  'Model.nameKey': "the SHA-256 (hex) of an upload's model_name, which may be any length",
  'HardwareReservation.ownerKind': 'one of the kinds of owner the server names',
  'ComputeHost.name': 'seeded',
  'ComputeInstance.name': 'seeded',
  'Remediation.state': "a state of the remediation's machine",
  'IdempotencyRecord.operation': 'an operation id',
  'V1Endpoint.name': 'made by the server, `<model name>-<6 hex characters>` (v1 endpoints are not created through the API)',
  'QueueJob.status': "a state of the queue job's machine",
  'RlOperation.status': "a state of the training operation's machine",
  'WorkItem.state': "a state of the runner's items",
  'ServerKey.name': "the name of one of the server's own keys (`upload-urls`, `control-key-sha256`)",
  'ControlRule.kind': '`fault` or `script`',
  'ControlSetting.name':
    "a setting of the control plane (`version`, `epoch:<what>`) or `limit:<organization id>:<model>`, of setRateLimit's organization_id (256) and model (512)",
};

/** Each model's String columns and its indexes (lists of column names), from prisma/models/. */
function readModels() {
  const models = new Map<string, { strings: Set<string>; indexes: string[][] }>();
  const dir = join(root, 'prisma/models');
  for (const file of readdirSync(dir).filter((f) => f.endsWith('.prisma'))) {
    const text = readFileSync(join(dir, file), 'utf8').replace(/\/\/.*$/gm, '');
    for (const [, name, body] of text.matchAll(/^model\s+(\w+)\s*\{([\s\S]*?)^\}/gm)) {
      const strings = new Set<string>();
      const indexes: string[][] = [];
      for (const line of body!.split('\n').map((l) => l.trim())) {
        const field = /^(\w+)\s+(\w+)(\??)(.*)$/.exec(line);
        if (field && !line.startsWith('@@')) {
          if (field[2] === 'String') strings.add(field[1]!);
          if (/@(id|unique)\b/.test(field[4]!)) indexes.push([field[1]!]);
        }
        const block = /^@@(id|unique|index)\(\[([^\]]*)\]/.exec(line);
        if (block) indexes.push(block[2]!.split(',').map((c) => c.trim().replace(/\(.*$/, '')));
      }
      models.set(name!, { strings, indexes });
    }
  }
  return models;
}

/** A contract node with its $refs followed. */
function resolve(node: any): any {
  let n = node;
  while (n?.$ref)
    n = n.$ref
      .split('/')
      .slice(1)
      .reduce((o: any, k: string) => o[k], spec);
  return n;
}

/** The schema an operation gives a writer's field. */
function fieldSchema(w: Writer) {
  const { path, method } = operations[w.op];
  const op = spec.paths[path][method];
  if (w.in === 'query') return resolve(op.parameters.map(resolve).find((p: any) => p.in === 'query' && p.name === w.field)?.schema);
  return resolve(resolve(resolve(op.requestBody).content['application/json'].schema).properties?.[w.field]);
}

const models = readModels();
const indexed = [...models].flatMap(([model, m]) =>
  [...new Set(m.indexes.flat())].filter((c) => m.strings.has(c) && c !== 'id' && !c.endsWith('Id')).map((c) => `${model}.${c}`),
);

describe('every indexed string column is bounded (read from the models and the contract)', () => {
  test("each is either written by users (and listed with its writers) or said to be the server's", () => {
    expect(indexed.sort()).toEqual([...Object.keys(USER_WRITTEN), ...Object.keys(SERVER_WRITTEN)].sort());
  });

  test.each(Object.entries(USER_WRITTEN))('%s: every writer has a maxLength, and every index holding it fits an entry', (column, writers) => {
    const [model, name] = column.split('.') as [string, string];
    const bounds = writers.map((w) => {
      const schema = fieldSchema(w);
      expect(schema?.type, `${w.op} ${w.field}`).toBe('string');
      expect(schema.maxLength, `${w.op} ${w.field} has no maxLength`).toBeTypeOf('number');
      return schema.maxLength as number;
    });
    for (const index of models.get(model)!.indexes.filter((i) => i.includes(name))) {
      const bytes = index.reduce((sum, c) => sum + (c === name ? Math.max(...bounds) * 4 : SERVER_COLUMN_BYTES), 0);
      expect(bytes, `${model}(${index.join(', ')})`).toBeLessThanOrEqual(INDEX_ENTRY_BYTES);
    }
  });
});

/** `n` characters of 4 bytes each in UTF-8, random, so that PostgreSQL cannot compress them. */
const incompressible = (n: number) =>
  [
    ...randomBytes(n * 2)
      .toString('hex')
      .match(/.{4}/g)!,
  ]
    .map((h) => String.fromCodePoint(0x20000 + Number.parseInt(h, 16)))
    .join('');

describe('each bound through the API: at the bound stored, one past it 400 naming the field (never a 500)', () => {
  let t: TestPlatform;
  beforeAll(async () => {
    t = await startTestPlatform();
  });
  afterAll(() => t?.close());
  const v2 = () => `/v2/projects/${t.caller.identity.projectId}`;

  test("a v2 endpoint name: 100 characters; also with the project slug; the issue's 3,000 characters", async () => {
    const http = t.caller.http;
    expect((await http.post(`${v2()}/endpoints`).send({ name: incompressible(100) })).status).toBe(200);
    expect((await http.post(`${v2()}/endpoints`).send({ name: `${t.caller.identity.projectSlug}/${incompressible(100)}` })).status).toBe(200);
    expectError(await http.post(`${v2()}/endpoints`).send({ name: incompressible(101) }), 400, { code: 'maxLength', param: 'name' });
    expectError(await http.post(`${v2()}/endpoints`).send({ name: `${t.caller.identity.projectSlug}/${incompressible(101)}` }), 400, {
      code: 'maxLength',
      param: 'name',
    });
    expectError(await http.post(`${v2()}/endpoints`).send({ name: incompressible(3000) }), 400, { code: 'maxLength', param: 'name' });
    const endpoint = (await http.post(`${v2()}/endpoints`).send({ name: 'renamed-later' })).body.id;
    expect((await http.patch(`${v2()}/endpoints/${endpoint}`).send({ name: incompressible(100) })).status).toBe(200);
    expectError(await http.patch(`${v2()}/endpoints/${endpoint}`).send({ name: incompressible(101) }), 400, { param: 'name' });
  });

  test('a deployment name: 100 characters', async () => {
    const http = t.caller.http;
    const endpoint = (await http.post(`${v2()}/endpoints`).send({ name: 'deployments-here' })).body.id;
    const deploy = (name: string) =>
      http.post(`${v2()}/endpoints/${endpoint}/deployments`).send({
        name,
        model: 'meta-llama/Meta-Llama-3.1-8B-Instruct',
        config: 'cr_llama_3_1_8b_h100',
        autoscaling: { minReplicas: 0, maxReplicas: 1 },
      });
    const ok = await deploy(incompressible(100));
    expect(ok.status, JSON.stringify(ok.body)).toBe(200);
    expectError(await deploy(incompressible(101)), 400, { code: 'maxLength', param: 'name' });
  });

  test('a snapshot name: 100 characters (letters, digits, . _ -, so 1 byte each)', async () => {
    const auth = { Authorization: `Bearer ${TEST_CONTROL_KEY}` };
    const name = (n: number) => randomBytes(n).toString('hex').slice(0, n);
    expect(
      (
        await t.http
          .post('/_control/snapshots')
          .set(auth)
          .send({ name: name(100) })
      ).status,
    ).toBe(200);
    expectError(
      await t.http
        .post('/_control/snapshots')
        .set(auth)
        .send({ name: name(101) }),
      400,
      { code: 'maxLength', param: 'name' },
    );
  });

  test('a shadow experiment name: 256 characters', async () => {
    const http = t.caller.http;
    const endpoint = (await http.post(`${v2()}/endpoints`).send({ name: 'shadowed-here' })).body.id;
    const create = (name: string) =>
      http.post(`${v2()}/endpoints/${endpoint}/shadowExperiments`).send({ name, source: { endpoint: { sampling: { uniform: { rate: 1 } } } } });
    const ok = await create(incompressible(256));
    expect(ok.status, JSON.stringify(ok.body)).toBe(200);
    expectError(await create(incompressible(257)), 400, { code: 'maxLength', param: 'name' });
  });

  test('a queue: 256 characters', async () => {
    expect((await t.caller.http.post('/v1/queue/submit').send({ model: incompressible(256), payload: {} })).status).toBe(200);
    expectError(await t.caller.http.post('/v1/queue/submit').send({ model: incompressible(257), payload: {} }), 400, { param: 'model' });
  });

  test('a volume name, created or changed: 100 characters', async () => {
    const create = (name: string) =>
      t.caller.http.post('/v1/deployments/storage/volumes').send({ name, type: 'readOnly', content: { type: 'files', source_prefix: '' } });
    const volume = await create(incompressible(100));
    expect(volume.status, JSON.stringify(volume.body)).toBe(200);
    expectError(await create(incompressible(101)), 400, { code: 'maxLength', param: 'name' });
    expect((await t.caller.http.patch(`/v1/deployments/storage/volumes/${volume.body.id}`).send({ name: incompressible(100) })).status).toBe(200);
    expectError(await t.caller.http.patch(`/v1/deployments/storage/volumes/${volume.body.id}`).send({ name: incompressible(101) }), 400, {
      code: 'maxLength',
      param: 'name',
    });
  });

  test('a secret name: 100 characters', async () => {
    expect((await t.caller.http.post('/v1/deployments/secrets').send({ name: incompressible(100), value: 'v' })).status).toBe(200);
    expectError(await t.caller.http.post('/v1/deployments/secrets').send({ name: incompressible(101), value: 'v' }), 400, {
      code: 'maxLength',
      param: 'name',
    });
  });

  test('a remediation idempotency key: 255 characters', async () => {
    const cluster = (await t.caller.http.get('/v1/compute/clusters')).body.clusters[0];
    const instance = cluster.gpu_worker_nodes.find((n: { node_id: string }) => n.node_id === 'gpu-node-1-vm1').instance_id;
    const remediate = (key: string) =>
      t.caller.http
        .post(`/v1/compute/clusters/${cluster.cluster_id}/instances/${instance}/remediations`)
        .query({ remediation_id: key })
        .send({ mode: 'REMEDIATION_MODE_REBOOT_VM' });
    const ok = await remediate(incompressible(255));
    expect(ok.status, JSON.stringify(ok.body)).toBe(200);
    expectError(await remediate(incompressible(256)), 400, { code: 'maxLength', param: 'remediation_id' });
  });
});
