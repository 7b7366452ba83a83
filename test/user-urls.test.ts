// URLs a caller gives the server to fetch (audio by URL; an evaluation's external server) cannot reach into the
// server's own network: a host that is, or resolves to, a loopback, private, link-local, unique-local or unspecified
// address is refused before any connection (so an open port and a closed one answer alike, and the listening
// server never sees a connection), on every redirect too; hosts of URL_FETCH_ALLOW_HOSTS are fetched anyway; the
// fetch has short time-outs; and nothing an external server answers but its status reaches a result file.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { loadConfig } from '../server/core/config.ts';
import { isPublicAddress } from '../server/engines/user-urls.ts';
import { findFile, readFileContent } from '../server/modules/files/index.ts';
import { storeFile } from '../server/modules/files/store.ts';
import { expectError } from './support/expect.ts';
import { localUrls, startTestPlatform, type TestPlatform } from './support/platform.ts';

/** A local HTTP server that counts the connections it accepts; `handle` answers each request. */
interface Listener {
  server: Server;
  port: number;
  connections: number;
}
async function listener(handle: Parameters<typeof createServer>[1]): Promise<Listener> {
  const l = { server: createServer(handle), port: 0, connections: 0 };
  l.server.on('connection', () => l.connections++);
  await new Promise<void>((r) => l.server.listen(0, '127.0.0.1', r));
  l.port = (l.server.address() as AddressInfo).port;
  return l;
}
async function stop(l?: Listener): Promise<void> {
  if (!l) return;
  l.server.closeAllConnections();
  await new Promise<void>((r) => l.server.close(() => r()));
}

/** A port nothing listens on (taken, then released). */
async function closedPort(): Promise<number> {
  const l = await listener(() => {});
  await stop(l);
  return l.port;
}

// Anything the servers say that must never reach an answer or a result file.
const SECRET = 'INTERNAL-ONLY-7f3a';

let bare: TestPlatform; // URL_FETCH_ALLOW_HOSTS unset: the production default
let local: TestPlatform; // 127.0.0.1 allowed, standing for a public host
let open: Listener;
let inside: Listener;
beforeAll(async () => {
  // `open` answers like an internal service (and redirects, for the allowed platform's redirect tests).
  open = await listener((req, res) => {
    const to = /^\/redirect\?to=(.+)$/.exec(req.url ?? '')?.[1];
    if (to) return void res.writeHead(302, { Location: decodeURIComponent(to) }).end();
    res.writeHead(200, { 'Content-Type': 'text/plain' }).end(`${SECRET} admin console`);
  });
  inside = await listener((_req, res) => void res.writeHead(200).end(SECRET));
  bare = await startTestPlatform();
  local = await startTestPlatform({ config: { urlFetch: { ...localUrls, timeoutMs: 1000 } } });
});
afterAll(async () => {
  await bare?.close();
  await local?.close();
  await stop(open);
  await stop(inside);
});

const transcribe = (t: TestPlatform, url: string) =>
  t.caller.http.post('/v1/audio/transcriptions').field('model', 'openai/whisper-large-v3').field('file', url);

describe('the addresses a user-given URL may reach', () => {
  test('only global unicast addresses: loopback, private, link-local, unique-local, unspecified and the like are refused', () => {
    for (const address of [
      '127.0.0.1',
      '127.255.0.9',
      '10.1.2.3',
      '172.16.0.1',
      '192.168.1.1',
      '169.254.169.254',
      '0.0.0.0',
      '100.64.0.1',
      '224.0.0.1',
      '255.255.255.255',
      '::1',
      '::',
      'fe80::1',
      'fd00::1',
      'fc00::1',
      '::ffff:127.0.0.1',
      '::ffff:10.0.0.1',
      '64:ff9b::7f00:1',
      'ff02::1',
      'not an address',
    ]) {
      expect(isPublicAddress(address), address).toBe(false);
    }
    for (const address of ['8.8.8.8', '1.1.1.1', '93.184.216.34', '2606:4700:4700::1111', '::ffff:8.8.8.8'])
      expect(isPublicAddress(address), address).toBe(true);
  });

  test('URL_FETCH_ALLOW_HOSTS lists hosts as URLs name them; unset, none', () => {
    expect(loadConfig({}).urlFetch).toEqual({ allowHosts: [], connectTimeoutMs: 5000, timeoutMs: 60000 });
    expect(loadConfig({ URL_FETCH_ALLOW_HOSTS: '127.0.0.1, Whisper.Internal,[::1]' }).urlFetch.allowHosts).toEqual(['127.0.0.1', 'whisper.internal', '::1']);
  });
});

describe('audio by URL', () => {
  test('a loopback URL is refused before connecting: an open port and a closed one answer the same, and the open one sees no connection', async () => {
    const closed = await closedPort();
    const before = open.connections;
    const answers = [];
    for (const url of [
      `http://127.0.0.1:${open.port}/a.wav`,
      `http://127.0.0.1:${closed}/a.wav`,
      `http://localhost:${open.port}/a.wav`,
      `http://localhost:${closed}/a.wav`,
      `http://[::1]:${open.port}/a.wav`,
      `http://0.0.0.0:${open.port}/a.wav`,
      `http://[::ffff:127.0.0.1]:${open.port}/a.wav`,
      'http://169.254.169.254/latest/meta-data/',
      'http://10.0.0.1/a.wav',
      'http://[fd00::1]/a.wav',
    ]) {
      const res = await transcribe(bare, url);
      expectError(res, 400, { code: 'file_unreachable', param: 'file' });
      answers.push({ status: res.status, code: res.body.error.code, message: res.body.error.message.replace(/^The audio at \S+ /, 'The audio at <url> ') });
    }
    expect(new Set(answers.map((a) => JSON.stringify(a))).size).toBe(1);
    expect(answers[0].message).toBe(
      'The audio at <url> cannot be fetched: its host does not resolve to a public internet address, and this server fetches only those.',
    );
    expect(open.connections).toBe(before);
  });

  test('a host of URL_FETCH_ALLOW_HOSTS is fetched; a redirect from it to a private address is refused before connecting', async () => {
    // Fetched: what it answers is not audio (a 400 about the format, after a connection).
    expectError(await transcribe(local, `http://127.0.0.1:${open.port}/a.wav`), 400, { code: 'unsupported_format', param: 'file' });
    const before = inside.connections;
    for (const target of [`http://localhost:${inside.port}/a.wav`, 'http://169.254.169.254/latest/meta-data/', 'http://[::1]/a.wav']) {
      const res = await transcribe(local, `http://127.0.0.1:${open.port}/redirect?to=${encodeURIComponent(target)}`);
      expectError(res, 400, { code: 'file_unreachable', param: 'file' });
      expect(res.body.error.message).toMatch(/its host does not resolve to a public internet address/);
    }
    expect(inside.connections).toBe(before);
  });

  test('the whole fetch has a time limit (URL_FETCH_TIMEOUT_MS)', async () => {
    const silent = await listener(() => {}); // accepts, never answers
    try {
      const res = await transcribe(local, `http://127.0.0.1:${silent.port}/a.wav`);
      expectError(res, 400, { code: 'file_unreachable', param: 'file' });
      expect(res.body.error.message).toMatch(/did not answer within 1 s/);
    } finally {
      await stop(silent);
    }
  });
});

describe("an evaluation's external server", () => {
  const JUDGE_PARAMS = { model: 'j', model_source: 'external', external_api_token: 't', system_template: 'Judge.' };
  async function job(t: TestPlatform, external_base_url: string, rows: object[] = [{ response: 'yes' }]) {
    const content = `${rows.map((r) => JSON.stringify(r)).join('\n')}\n`;
    const file = (await storeFile(t.services, { projectId: t.caller.identity.projectId, filename: 'in.jsonl', purpose: 'eval', fileType: 'jsonl' }, content))
      .id;
    return t.caller.http.post('/v1/evaluation').send({
      type: 'classify',
      parameters: {
        judge: { ...JUDGE_PARAMS, external_base_url },
        labels: ['yes', 'no'],
        pass_labels: ['yes'],
        model_to_evaluate: 'response',
        input_data_file_path: file,
      },
    });
  }
  async function finished(t: TestPlatform, external_base_url: string) {
    const res = await job(t, external_base_url);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    await t.advance(0);
    return (await t.caller.http.get(`/v1/evaluation/${res.body.workflow_id}`)).body;
  }
  async function resultText(t: TestPlatform, fileId: string) {
    const f = await findFile(t.services, t.caller.identity.projectId, fileId);
    let text = '';
    for await (const chunk of readFileContent(t.services, f!)) text += chunk;
    return text;
  }

  test('a base URL with a query or fragment (which would choose the path called) or credentials: 400 naming it', async () => {
    const before = open.connections;
    for (const url of [
      `http://127.0.0.1:${open.port}/admin?`,
      `http://127.0.0.1:${open.port}/admin?x=`,
      `http://127.0.0.1:${open.port}/v1#`,
      'https://u:p@api.example.com/v1',
    ]) {
      expectError(await job(local, url), 400, { code: 'invalid_value', param: 'parameters.judge.external_base_url' });
    }
    expect(open.connections).toBe(before);
  });

  test('an address that is not public: 400 at creation; a name resolving to one: the job ends user_error, nothing connected', async () => {
    const before = open.connections;
    for (const url of [`http://127.0.0.1:${open.port}/v1`, 'http://[::1]/v1', 'http://169.254.169.254/v1']) {
      expectError(await job(bare, url), 400, { code: 'url_not_allowed', param: 'parameters.judge.external_base_url' });
    }
    const done = await finished(bare, `http://localhost:${open.port}/v1`);
    expect(done.status).toBe('user_error');
    expect(done.results.error).toBe(
      `The evaluation stopped: The external server at http://localhost:${open.port}/v1 cannot be called: its host does not resolve to a public internet address, and this server fetches only those.`,
    );
    expect(open.connections).toBe(before);
  });

  test('nothing of what it answers but its status reaches the result file: error bodies, a body that is not JSON, one too large', async () => {
    let answer: (res: import('node:http').ServerResponse) => void = () => {};
    const judge = await listener((req, res) => {
      req.resume();
      req.on('end', () => answer(res));
    });
    try {
      const url = `http://127.0.0.1:${judge.port}/v1`;
      const cases: [(res: import('node:http').ServerResponse) => void, RegExp][] = [
        [(res) => res.writeHead(500, { 'Content-Type': 'text/plain' }).end(`${SECRET} stack trace`), /answered 500 \(Internal Server Error\)\.$/],
        [
          (res) => res.writeHead(404, { 'Content-Type': 'application/json' }).end(JSON.stringify({ error: { message: SECRET } })),
          /answered 404 \(Not Found\)\.$/,
        ],
        [(res) => res.writeHead(200, { 'Content-Type': 'text/html' }).end(`<html>${SECRET}</html>`), /answered 200 with a body that is not JSON\.$/],
        [
          (res) => res.writeHead(200, { 'Content-Type': 'application/json' }).end(`"${SECRET}${'x'.repeat(2 * 1024 * 1024)}"`),
          /answer is larger than 1048576 bytes\.$/,
        ],
      ];
      for (const [respond, why] of cases) {
        answer = respond;
        const done = await finished(local, url);
        expect(done.status).toBe('completed');
        expect(done.results.judge_fail_count).toBe(1);
        const text = await resultText(local, done.results.result_file_id);
        expect(JSON.parse(text).judge_error).toMatch(why);
        expect(text).not.toContain(SECRET);
        expect(JSON.stringify(done)).not.toContain(SECRET);
      }
      // Retried statuses: the job's error names the status and the attempts, not the body.
      answer = (res) => res.writeHead(429, { 'Retry-After': '0' }).end(SECRET);
      const done = await finished(local, url);
      expect(done.status).toBe('error');
      expect(done.results.error).toMatch(/answered 429 \(too many requests\) to 5 attempts in a row\.$/);
      expect(JSON.stringify(done)).not.toContain(SECRET);
    } finally {
      await stop(judge);
    }
  });
});
