// The URLs this server hands out: a signed upload URL cannot be forged from the source code (without SECRETS_KEY
// each database signs with its own random key, made at its first start, shared by every process on it, and the
// start says which key is in use); and the origin of absolute URLs (upload URLs, video URLs, image URLs) comes from the
// request's Host and X-Forwarded-* headers only behind a proxy (TRUST_PROXY), else from PUBLIC_BASE_URL, else from
// the address the connection reached.
import { createHash, createHmac, randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { loadConfig } from '../server/core/config.ts';
import { startTestPlatform, type TestPlatform } from './support/platform.ts';

/** POST /v1/files as the official client sends it (redirect not followed), with extra headers. */
function begin(t: TestPlatform, headers: Record<string, string> = {}) {
  let req = t.caller.http.post('/v1/files').type('form').send({ file_name: 'data.jsonl', file_type: 'jsonl', purpose: 'fine-tune' }).redirects(0);
  for (const [k, v] of Object.entries(headers)) req = req.set(k, v);
  return req;
}

/** PUTs bytes to an upload URL (of `t`), with no key. */
async function put(url: string, content = '{"text": "hello"}\n') {
  const bytes = Buffer.from(content);
  const res = await fetch(url, {
    method: 'PUT',
    headers: { 'Content-Type': 'application/octet-stream', 'Content-Length': String(bytes.length) },
    body: Readable.toWeb(Readable.from([bytes])) as ReadableStream,
    duplex: 'half',
  } as RequestInit);
  return { status: res.status, body: await res.json() };
}

/** The signature anyone could compute before: keyed from a constant in the source when SECRETS_KEY was unset. */
function sourceSignature(id: string, expires: number): string {
  const developmentKey = createHash('sha256').update('inference-platform development secrets key (not secret)').digest();
  const signingKey = createHmac('sha256', developmentKey).update('inference-platform file upload URLs').digest();
  return createHmac('sha256', signingKey).update(`PUT /v1/files/${id}/content ${expires}`).digest('base64url');
}

describe('signed upload URLs without SECRETS_KEY', () => {
  let t: TestPlatform;
  let other: TestPlatform;
  beforeAll(async () => {
    t = await startTestPlatform();
    other = await startTestPlatform();
  });
  afterAll(async () => {
    await t?.close();
    await other?.close();
  });

  test('a URL signed with a key the source code knows is refused; the URL the server made works', async () => {
    const res = await begin(t);
    expect(res.status, JSON.stringify(res.body)).toBe(302);
    const made = new URL(res.headers.location);
    const id = res.headers['x-together-file-id'];
    const expires = Number(made.searchParams.get('expires'));
    const forged = `${t.url}/v1/files/${id}/content?expires=${expires}&signature=${sourceSignature(id, expires)}`;
    const refused = await put(forged);
    expect(refused.status).toBe(403);
    expect(refused.body.error).toMatchObject({ code: 'invalid_signature', param: 'signature' });
    expect((await put(made.href)).status).toBe(200);
  });

  test("the key is the database's: kept across restarts (processes sharing it agree), another database's differs", async () => {
    const res = await begin(t);
    const url = new URL(res.headers.location);
    await t.restart();
    expect((await put(`${t.url}${url.pathname}${url.search}`)).status).toBe(200);
    const key = async (p: TestPlatform) => (await p.services.db.prisma.serverKey.findUniqueOrThrow({ where: { name: 'upload-urls' } })).value;
    expect(Buffer.from(await key(t), 'base64')).toHaveLength(32);
    expect(await key(t)).not.toBe(await key(other));
  });

  test('the start says which key is in use', async () => {
    expect(t.logs.join('')).toContain("SECRETS_KEY is unset: upload URLs are signed with this database's own random key");
    const keyed = await startTestPlatform({ config: { secretsKey: randomBytes(32).toString('base64') } });
    try {
      expect(keyed.logs.join('')).toContain('Keys: upload URLs are signed and secret values encrypted with SECRETS_KEY.');
      const res = await begin(keyed);
      expect((await put(res.headers.location)).status).toBe(200);
    } finally {
      await keyed.close();
    }
  });
});

describe('the origin of the URLs handed out', () => {
  const SPOOFED = { Host: 'evil.example', 'X-Forwarded-Proto': 'https', 'X-Forwarded-Host': 'evil.example:8443' };

  test('by default the headers decide nothing: the address the connection reached', async () => {
    const t = await startTestPlatform();
    try {
      const res = await begin(t, SPOOFED);
      expect(res.headers.location).toMatch(new RegExp(`^${t.url}/v1/files/file-[^/]+/content\\?expires=`));
      // The video's URL too.
      const video = await t.caller.http
        .post('/v2/videos')
        .set(SPOOFED)
        .send({ model: 'Wan-AI/Wan2.2-T2V-A14B', prompt: 'a lighthouse', width: 128, height: 72, seconds: '1', fps: 12 });
      expect(video.status, JSON.stringify(video.body)).toBe(200);
      await t.advance(0);
      const done = await t.caller.http.get(`/v2/videos/${video.body.id}`).set(SPOOFED);
      expect(done.body.outputs.video_url).toBe(`${t.url}/v2/videos/${video.body.id}/content`);
      // A generated image's URL too, and it serves the image.
      const image = await t.caller.http
        .post('/v1/images/generations')
        .set(SPOOFED)
        .send({ model: 'black-forest-labs/FLUX.1-schnell', prompt: 'a lighthouse', width: 64, height: 64, steps: 1, response_format: 'url' });
      expect(image.status, JSON.stringify(image.body)).toBe(200);
      const url: string = image.body.data[0].url;
      expect(url).toMatch(new RegExp(`^${t.url}/v1/images/image_[0-9a-z]+/content$`));
      const served = await t.caller.http.get(new URL(url).pathname);
      expect(served.status).toBe(200);
      expect(served.headers['content-type']).toBe('image/jpeg');
    } finally {
      await t.close();
    }
  });

  test('PUBLIC_BASE_URL, when set, is the origin', async () => {
    const t = await startTestPlatform({ config: { publicBaseUrl: loadConfig({ PUBLIC_BASE_URL: 'https://api.example.com/' }).publicBaseUrl } });
    try {
      expect((await begin(t, SPOOFED)).headers.location).toMatch(/^https:\/\/api\.example\.com\/v1\/files\/file-[^/]+\/content\?/);
      const image = await t.caller.http
        .post('/v1/images/generations')
        .set(SPOOFED)
        .send({ model: 'black-forest-labs/FLUX.1-schnell', prompt: 'a lighthouse', width: 64, height: 64, steps: 1 });
      expect(image.body.data[0].url).toMatch(/^https:\/\/api\.example\.com\/v1\/images\/image_[0-9a-z]+\/content$/);
    } finally {
      await t.close();
    }
  });

  test("TRUST_PROXY on: the proxy's X-Forwarded-Proto and X-Forwarded-Host (else Host) decide", async () => {
    const t = await startTestPlatform({ config: { trustProxy: true } });
    try {
      expect((await begin(t, SPOOFED)).headers.location).toMatch(/^https:\/\/evil\.example:8443\/v1\/files\//);
      expect((await begin(t, { Host: 'api.example.com' })).headers.location).toMatch(/^http:\/\/api\.example\.com\/v1\/files\//);
      // A forwarded scheme that is not http(s), or a host that is no host, is not used.
      expect((await begin(t, { 'X-Forwarded-Proto': 'javascript' })).headers.location).toMatch(new RegExp(`^${t.url}/v1/files/`));
    } finally {
      await t.close();
    }
  });

  test('TRUST_PROXY and PUBLIC_BASE_URL are not both set', () => {
    expect(() => loadConfig({ TRUST_PROXY: 'on', PUBLIC_BASE_URL: 'https://api.example.com' })).toThrow(/TRUST_PROXY=on and PUBLIC_BASE_URL are both set/);
  });
});
