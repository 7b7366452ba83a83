// Bad input at the edges of the contract, on whichever database TEST_DATABASE_URL selects: control characters in
// ids, query values and body strings; concurrent creates of one name; query values with reserved characters;
// numbers out of range; HEAD; and requests Node's HTTP parser refuses. Each answers the error envelope naming the
// field, or the same as its well-formed twin, and never a 500.

import { readFileSync } from 'node:fs';
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { type OperationId, operations } from '../generated/operations.ts';
import { expectError } from './support/expect.ts';
import { startTestPlatform, type TestPlatform } from './support/platform.ts';

let t: TestPlatform;
let projectId: string;
let clusterId: string;
let instanceId: string;
let keptSecret: any;
let keptVolume: any;

const SECRETS = '/v1/deployments/secrets';
const VOLUMES = '/v1/deployments/storage/volumes';
const auth = (key = t.caller.key) => ({ Authorization: `Bearer ${key}` });
const remediations = () => `/v1/compute/clusters/${clusterId}/instances/${instanceId}/remediations`;

beforeAll(async () => {
  t = await startTestPlatform();
  projectId = t.caller.identity.projectId;
  clusterId = (await t.http.get('/v1/compute/clusters').set(auth())).body.clusters[0].cluster_id;
  instanceId = (await t.http.get(`/v1/compute/clusters/${clusterId}/instances`).set(auth())).body.instances[0].instance_id;
  keptSecret = (await t.http.post(SECRETS).set(auth()).send({ name: 'KEPT', value: 'v', description: 'kept as it is' })).body;
  keptVolume = (
    await t.http
      .post(VOLUMES)
      .set(auth())
      .send({ name: 'kept-volume', type: 'readOnly', content: { type: 'files', source_prefix: 's3://kept/1/' } })
  ).body;
  expect(keptSecret.id).toMatch(/^sec_/);
  expect(keptVolume.id).toMatch(/^vol_/);
});
afterAll(() => t?.close());

interface RawResponse {
  status: number;
  headers: Record<string, string>;
  /** Everything after the header block, as sent (for HEAD: must be empty). */
  text: string;
  body: any;
}

/** Sends bytes exactly as given over a fresh TCP connection and reads the whole answer (the server closes it). */
function raw(request: string): Promise<RawResponse> {
  const { hostname, port } = new URL(t.url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname);
    const chunks: Buffer[] = [];
    socket.on('data', (c) => chunks.push(c));
    socket.on('error', reject);
    socket.on('close', () => {
      const all = Buffer.concat(chunks).toString('latin1');
      const end = all.indexOf('\r\n\r\n');
      if (end < 0) return reject(new Error(`no complete response: ${JSON.stringify(all)}`));
      const [statusLine, ...lines] = all.slice(0, end).split('\r\n');
      const headers = Object.fromEntries(lines.map((l) => [l.slice(0, l.indexOf(':')).trim().toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]));
      let text = all.slice(end + 4);
      if (/chunked/i.test(headers['transfer-encoding'] ?? '')) {
        let out = '';
        for (let rest = text; ; ) {
          const eol = rest.indexOf('\r\n');
          const size = parseInt(rest.slice(0, eol), 16);
          if (!size) break;
          out += rest.slice(eol + 2, eol + 2 + size);
          rest = rest.slice(eol + 2 + size + 2);
        }
        text = out;
      }
      let body: any;
      try {
        body = text ? JSON.parse(Buffer.from(text, 'latin1').toString('utf8')) : undefined;
      } catch {
        body = undefined;
      }
      resolve({ status: Number(statusLine.split(' ')[1]), headers, text, body });
    });
    socket.write(request, 'latin1');
  });
}

/** A request line and headers, sent as written: nothing in `target` is encoded or re-encoded on the way. */
const rawRequest = (method: string, target: string, key: string | null = t.caller.key) =>
  raw(`${method} ${target} HTTP/1.1\r\nHost: localhost\r\n${key ? `Authorization: Bearer ${key}\r\n` : ''}Connection: close\r\n\r\n`);

// ---------------------------------------------------------------------------------------------------------------
// 1. Control characters

interface ControlCase {
  name: string;
  send: () => Promise<any>;
  param: string;
  /** Proves nothing changed. */
  unchanged?: () => Promise<void>;
}

const secretNamed = async (name: string) => (await t.http.get(SECRETS).set(auth())).body.data.filter((s: any) => s.name === name);
const volumeNamed = async (name: string) => (await t.http.get(VOLUMES).set(auth())).body.data.filter((v: any) => v.name === name);
const volumeContent = (source_prefix: string) => ({ type: 'files', source_prefix });

const controlCases: ControlCase[] = [
  // Path ids
  { name: 'NUL in a secret id (GET /v1/deployments/secrets/{id})', send: () => t.http.get(`${SECRETS}/KEPT%00`).set(auth()), param: 'id' },
  {
    name: 'NUL in a secret id (DELETE /v1/deployments/secrets/{id})',
    send: () => t.http.delete(`${SECRETS}/KEPT%00x`).set(auth()),
    param: 'id',
    unchanged: async () => expect(await secretNamed('KEPT')).toHaveLength(1),
  },
  { name: 'U+0001 in a volume id (GET /v1/deployments/storage/volumes/{id})', send: () => t.http.get(`${VOLUMES}/kept-volume%01`).set(auth()), param: 'id' },
  {
    name: 'NUL in a volume id (DELETE /v1/deployments/storage/volumes/{id})',
    send: () => t.http.delete(`${VOLUMES}/kept%00volume`).set(auth()),
    param: 'id',
    unchanged: async () => expect(await volumeNamed('kept-volume')).toHaveLength(1),
  },
  { name: 'U+007F in a job id (GET /v1/jobs/{jobId})', send: () => t.http.get('/v1/jobs/job%7F1').set(auth()), param: 'jobId' },
  { name: 'NUL in a cluster id (GET /v1/compute/clusters/{cluster_id})', send: () => t.http.get('/v1/compute/clusters/c%00').set(auth()), param: 'cluster_id' },
  {
    name: 'NUL in a v2 endpoint id (GET /v2/projects/{projectId}/endpoints/{endpointId})',
    send: () => t.http.get(`/v2/projects/${projectId}/endpoints/e%00`).set(auth()),
    param: 'endpointId',
  },
  { name: 'U+001F in a v1 endpoint id (GET /v1/endpoints/{endpointId})', send: () => t.http.get('/v1/endpoints/ep%1F').set(auth()), param: 'endpointId' },
  // Query values
  { name: 'NUL in ?model= (GET /v1/hardware)', send: () => t.http.get('/v1/hardware?model=meta-llama%00').set(auth()), param: 'model' },
  {
    name: 'a tab in ?model= (GET /v1/hardware; tab is allowed only in body strings)',
    send: () => t.http.get('/v1/hardware?model=a%09b').set(auth()),
    param: 'model',
  },
  {
    name: 'NUL in ?referenceModel= (GET /v2/projects/{projectId}/configs)',
    send: () => t.http.get(`/v2/projects/${projectId}/configs?referenceModel=x%00`).set(auth()),
    param: 'referenceModel',
  },
  {
    name: 'NUL in ?after= (GET /v2/projects/{projectId}/endpoints)',
    send: () => t.http.get(`/v2/projects/${projectId}/endpoints?after=%00`).set(auth()),
    param: 'after',
  },
  // Body strings, at any depth
  {
    name: "NUL in a new secret's description (POST /v1/deployments/secrets)",
    send: () => t.http.post(SECRETS).set(auth()).send({ name: 'CTRL_DESC', value: 'v', description: 'a\u0000b' }),
    param: 'description',
    unchanged: async () => expect(await secretNamed('CTRL_DESC')).toEqual([]),
  },
  {
    name: "U+0001 in a new secret's description (POST /v1/deployments/secrets)",
    send: () => t.http.post(SECRETS).set(auth()).send({ name: 'CTRL_SOH', value: 'v', description: 'a\u0001b' }),
    param: 'description',
    unchanged: async () => expect(await secretNamed('CTRL_SOH')).toEqual([]),
  },
  {
    name: "NUL in a new secret's name (POST /v1/deployments/secrets)",
    send: () => t.http.post(SECRETS).set(auth()).send({ name: 'CTRL\u0000NAME', value: 'v' }),
    param: 'name',
    unchanged: async () => expect((await t.http.get(SECRETS).set(auth())).body.data.filter((s: any) => s.name.includes('\u0000'))).toEqual([]),
  },
  {
    name: "U+0007 in a secret's description (PATCH /v1/deployments/secrets/{id})",
    send: () => t.http.patch(`${SECRETS}/${keptSecret.id}`).set(auth()).send({ description: 'bell\u0007' }),
    param: 'description',
    unchanged: async () => expect((await t.http.get(`${SECRETS}/${keptSecret.id}`).set(auth())).body).toEqual(keptSecret),
  },
  {
    name: "NUL in a new volume's content.source_prefix (POST /v1/deployments/storage/volumes)",
    send: () =>
      t.http
        .post(VOLUMES)
        .set(auth())
        .send({ name: 'ctrl-prefix', type: 'readOnly', content: volumeContent('s3://b/\u0000') }),
    param: 'content.source_prefix',
    unchanged: async () => expect(await volumeNamed('ctrl-prefix')).toEqual([]),
  },
  {
    name: "NUL in a new volume's name (POST /v1/deployments/storage/volumes)",
    send: () =>
      t.http
        .post(VOLUMES)
        .set(auth())
        .send({ name: 'ctrl\u0000vol', type: 'readOnly', content: volumeContent('s3://b/') }),
    param: 'name',
    unchanged: async () => expect((await t.http.get(VOLUMES).set(auth())).body.data.filter((v: any) => v.name.includes('\u0000'))).toEqual([]),
  },
  {
    name: "U+001B in a volume's content.source_prefix (PATCH /v1/deployments/storage/volumes/{id})",
    send: () =>
      t.http
        .patch(`${VOLUMES}/${keptVolume.id}`)
        .set(auth())
        .send({ content: volumeContent('s3://kept/\u001b[2J') }),
    param: 'content.source_prefix',
    unchanged: async () => expect((await t.http.get(`${VOLUMES}/${keptVolume.id}`).set(auth())).body).toEqual(keptVolume),
  },
  {
    name: "NUL in a model upload's description (POST /v1/models)",
    send: () => t.http.post('/v1/models').set(auth()).send({ model_name: 'ctrl-model', model_source: 'acme/llama-3.1-8b-ft', description: 'x\u0000' }),
    param: 'description',
    unchanged: async () => {
      expect(JSON.stringify((await t.http.get('/v1/jobs').set(auth())).body)).not.toContain('ctrl-model');
      expect(JSON.stringify((await t.http.get('/v1/models').set(auth())).body)).not.toContain('ctrl-model');
    },
  },
  {
    name: 'NUL in a volume reference inside an array (POST /v2/projects/{projectId}/deploy, volumes.0)',
    send: () =>
      t.http
        .post(`/v2/projects/${projectId}/deploy`)
        .set(auth())
        .send({
          endpointName: 'ctrl-deploy',
          model: 'meta-llama/Meta-Llama-3.1-8B-Instruct',
          config: 'cr_llama_3_1_8b_h100',
          minReplicas: 1,
          maxReplicas: 1,
          volumes: ['model-weights\u0000'],
        }),
    param: 'volumes.0',
    unchanged: async () => expect(JSON.stringify((await t.http.get(`/v2/projects/${projectId}/endpoints`).set(auth())).body)).not.toContain('ctrl-deploy'),
  },
];

describe('1. control characters answer 400 invalid_characters naming the field, and change nothing', () => {
  for (const c of controlCases) {
    test(`${c.name}: 400 invalid_characters, param ${c.param}${c.unchanged ? ', nothing changed' : ''}`, async () => {
      const res = await c.send();
      expectError(res, 400, { code: 'invalid_characters', param: c.param, type: 'invalid_request_error' });
      await c.unchanged?.();
    });
  }

  test('tab, newline and carriage return are allowed inside body strings', async () => {
    const res = await t.http.post(SECRETS).set(auth()).send({ name: 'CTRL_ALLOWED', value: 'v', description: 'line one\r\n\tline two\n' });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.description).toBe('line one\r\n\tline two\n');
    expect((await t.http.delete(`${SECRETS}/CTRL_ALLOWED`).set(auth())).status).toBe(200);
  });
});

// ---------------------------------------------------------------------------------------------------------------
// 2. Concurrent creates of one name

describe('2. concurrent creates of one name: exactly one 2xx, the rest 409, one row', () => {
  const ROUNDS = 3;
  const statuses = (answers: { status: number }[]) =>
    answers
      .map((r) => r.status)
      .sort((a, b) => a - b)
      .join(' ');

  test('8 concurrent POST /v1/deployments/secrets with the same name: one 200, seven 409 secret_name_taken (param name), one secret', async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const name = `RACE_SECRET_${round}`;
      const answers = await Promise.all(
        Array.from({ length: 8 }, (_, i) =>
          t.http
            .post(SECRETS)
            .set(auth())
            .send({ name, value: `v${i}` }),
        ),
      );
      expect(statuses(answers), JSON.stringify(answers.map((r) => r.body))).toBe('200 409 409 409 409 409 409 409');
      for (const r of answers.filter((r) => r.status !== 200)) expectError(r, 409, { code: 'secret_name_taken', param: 'name' });
      expect(await secretNamed(name)).toHaveLength(1);
    }
  });

  test('8 concurrent POST /v1/deployments/storage/volumes with the same name: one 200, seven 409 volume_name_taken (param name), one volume', async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const name = `race-volume-${round}`;
      const answers = await Promise.all(
        Array.from({ length: 8 }, (_, i) =>
          t.http
            .post(VOLUMES)
            .set(auth())
            .send({ name, type: 'readOnly', content: volumeContent(`s3://race/${i}/`) }),
        ),
      );
      expect(statuses(answers), JSON.stringify(answers.map((r) => r.body))).toBe('200 409 409 409 409 409 409 409');
      for (const r of answers.filter((r) => r.status !== 200)) expectError(r, 409, { code: 'volume_name_taken', param: 'name' });
      expect(await volumeNamed(name)).toHaveLength(1);
    }
  });
});

// ---------------------------------------------------------------------------------------------------------------
// 3. Reserved characters in query values

describe('3. query values: an unencoded / is the same as %2F, and + is a space', () => {
  test('GET /v1/hardware?model=meta-llama/Meta-Llama-3.1-8B-Instruct (slash unencoded on the wire) answers 200, the same as the encoded form', async () => {
    const target = '/v1/hardware?model=meta-llama/Meta-Llama-3.1-8B-Instruct';
    expect(target.split('?')[1]).toContain('/');
    const encoded = await rawRequest('GET', '/v1/hardware?model=meta-llama%2FMeta-Llama-3.1-8B-Instruct');
    expect(encoded.status).toBe(200);
    expect(encoded.body.data.length).toBeGreaterThan(0);
    const plain = await rawRequest('GET', target);
    expect(plain.status, plain.text).toBe(200);
    expect(plain.body.data.map((h: any) => h.id)).toEqual(encoded.body.data.map((h: any) => h.id));
  });

  test('GET /v2/projects/{projectId}/configs?referenceModel=<org>/<name> (slash unencoded) answers 200, the same as the encoded form', async () => {
    const base = `/v2/projects/${projectId}/configs?referenceModel=`;
    const encoded = await rawRequest('GET', `${base}meta-llama%2FMeta-Llama-3.1-8B-Instruct`);
    expect(encoded.status).toBe(200);
    const plain = await rawRequest('GET', `${base}meta-llama/Meta-Llama-3.1-8B-Instruct`);
    expect(plain.status, plain.text).toBe(200);
    expect(plain.body).toEqual(encoded.body);
  });

  test('the spec promises it of every query parameter of every operation: allowReserved is true on each', () => {
    const query = Object.entries<any>(spec.paths).flatMap(([path, item]) =>
      Object.entries<any>(item).flatMap(([method, op]) =>
        (op.parameters ?? [])
          .map(_deref)
          .filter((p: any) => p.in === 'query')
          .map((p: any) => ({ where: `${method.toUpperCase()} ${path} ?${p.name}`, allowReserved: p.allowReserved })),
      ),
    );
    expect(query.length).toBeGreaterThan(40);
    expect(query.filter((q) => q.allowReserved !== true).map((q) => q.where)).toEqual([]);
  });

  test('GET /v1/fine-tunes/models/limits?model_name=meta-llama/... (slash unencoded) answers 200, the same as the encoded form', async () => {
    const base = '/v1/fine-tunes/models/limits?model_name=';
    const encoded = await rawRequest('GET', `${base}meta-llama%2FMeta-Llama-3.1-8B-Instruct-Reference`);
    expect(encoded.status).toBe(200);
    const plain = await rawRequest('GET', `${base}meta-llama/Meta-Llama-3.1-8B-Instruct-Reference`);
    expect(plain.status, plain.text).toBe(200);
    expect(plain.body).toEqual(encoded.body);
  });

  test('order_by=create_time+desc on the remediations list answers 200, the same as create_time%20desc', async () => {
    const encoded = await rawRequest('GET', `${remediations()}?order_by=create_time%20desc`);
    expect(encoded.status).toBe(200);
    const plus = await rawRequest('GET', `${remediations()}?order_by=create_time+desc`);
    expect(plus.status, plus.text).toBe(200);
    expect(plus.body).toEqual(encoded.body);
  });
});

// ---------------------------------------------------------------------------------------------------------------
// 4. Numbers out of range

const OUT_OF_RANGE = ['Infinity', '-Infinity', '1e309', 'NaN', '-1'];
// `negative: true`: the platform sets no minimum, so -1 is a value like any other (a version never had, the default
// page size), not out of range; the non-finite values stay refused.
const numericParams = [
  { where: 'GET /v1/deployments/storage/volumes/{id}', param: 'version', negative: true, url: (v: string) => `${VOLUMES}/model-weights?version=${v}` },
  { where: 'GET /v2/projects/{projectId}/endpoints', param: 'limit', url: (v: string) => `/v2/projects/${projectId}/endpoints?limit=${v}` },
  { where: 'GET /v2/projects/{projectId}/configs', param: 'limit', url: (v: string) => `/v2/projects/${projectId}/configs?limit=${v}` },
  { where: 'GET .../remediations', param: 'page_size', negative: true, url: (v: string) => `${remediations()}?page_size=${v}` },
];
const numericCases = numericParams.flatMap((p) => OUT_OF_RANGE.filter((v) => !(v === '-1' && 'negative' in p)).map((value) => ({ ...p, value })));

describe('4. numeric query values outside their range answer 400 naming the parameter', () => {
  for (const c of numericCases) {
    test(`${c.where} ?${c.param}=${c.value}: 400, param ${c.param}`, async () => {
      expectError(await t.http.get(c.url(c.value)).set(auth()), 400, { param: c.param, type: 'invalid_request_error' });
    });
  }
});

// ---------------------------------------------------------------------------------------------------------------
// 5. HEAD

const spec = JSON.parse(readFileSync(new URL('../generated/openapi.json', import.meta.url), 'utf8'));
const _deref = (node: any): any =>
  node?.$ref
    ? _deref(
        node.$ref
          .replace(/^#\//, '')
          .split('/')
          .reduce((n: any, k: string) => n[k], spec),
      )
    : node;
const getOperations = (Object.keys(operations) as OperationId[]).filter((id) => operations[id].method === 'get');

/** A GET operation's path with its parameters filled: real ids where the seed has them, else a made-up id (404). */
function getPath(id: OperationId): string {
  const known: Record<string, string> = { projectId, cluster_id: clusterId, instance_id: instanceId };
  return operations[id].path.replace(/\{(\w+)\}/g, (_, name) => encodeURIComponent(known[name] ?? 'no-such-id'));
}

describe('5. HEAD on every GET operation answers as the GET would, without a body', () => {
  // Sent without a query: an operation with a required query parameter (the queue's status) answers 400 to both.
  test('the operation table has GET operations', () => {
    expect(getOperations.length).toBeGreaterThan(20);
  });

  test.each(getOperations)('HEAD of %s: the status the GET answers, no body', async (id) => {
    const path = getPath(id);
    const get = await rawRequest('GET', path);
    expect(get.status).toBeLessThan(500);
    const head = await rawRequest('HEAD', path);
    expect(head.status, `GET ${path} answered ${get.status}`).toBe(get.status);
    expect(head.text).toBe('');
    // Without a key, the same 401 as the GET.
    const [getAnon, headAnon] = [await rawRequest('GET', path, null), await rawRequest('HEAD', path, null)];
    expect(headAnon.status).toBe(getAnon.status);
    expect(headAnon.text).toBe('');
  });

  test('HEAD /v1/whoami with a valid key: 200, application/json, empty body', async () => {
    const res = await rawRequest('HEAD', '/v1/whoami');
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    expect(res.text).toBe('');
  });
});

// ---------------------------------------------------------------------------------------------------------------
// 6. Requests Node's HTTP parser refuses

describe('6. requests the HTTP parser refuses still get the envelope', () => {
  test('headers over the limit (a 20 KB header): 431 with the envelope, code header_too_large, param null', async () => {
    const res = await raw(`GET /v1/whoami HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${t.caller.key}\r\nX-Padding: ${'a'.repeat(20 * 1024)}\r\n\r\n`);
    expect(res.headers['content-type'] ?? '(no content-type)', `the whole answer: ${JSON.stringify(res.text)}`).toMatch(/application\/json/);
    expectError(res, 431, { code: 'header_too_large', param: null, type: 'invalid_request_error' });
  });

  test('a malformed request line (GARBAGE): 400 with the envelope, code malformed_request', async () => {
    const res = await raw('GARBAGE\r\n\r\n');
    expect(res.headers['content-type'] ?? '(no content-type)', `the whole answer: ${JSON.stringify(res.text)}`).toMatch(/application\/json/);
    expectError(res, 400, { code: 'malformed_request', type: 'invalid_request_error' });
  });
});
