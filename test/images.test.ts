// Image generation (POST /v1/images/generations) on the local engine: each output format decoded (sharp) at the
// asked size, the same request and seed giving the same bytes, n images that differ with their seeds, URLs this
// server serves (authenticated, project-scoped), the prompt's and negative prompt's colours, steps' detail,
// image-to-image by data: and http URL, the limits as 400s that change nothing, the models' checks, the official
// client's images.generate, and an upstream route (another instance of this server).
import { readdirSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { join } from 'node:path';
import sharp from 'sharp';
import Together from 'together-ai';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { offLoopCompleted } from '../server/engines/pool.ts';
import { expectError } from './support/expect.ts';
import { localUrls, startTestPlatform, type TestPlatform } from './support/platform.ts';

const MODEL = 'black-forest-labs/FLUX.1-schnell';
const KONTEXT = 'black-forest-labs/FLUX.1-kontext-pro';
let t: TestPlatform;
let upstream: TestPlatform;
let pictures: Server;
let picturesUrl: string;
let hang = false;

/** A solid picture of one colour, as a PNG file. */
const solid = (rgb: [number, number, number], width = 32, height = 32) =>
  sharp({ create: { width, height, channels: 3, background: { r: rgb[0], g: rgb[1], b: rgb[2] } } })
    .png()
    .toBuffer();
let BLUE: Buffer;

beforeAll(async () => {
  BLUE = await solid([0, 40, 255]);
  // The pictures an image-to-image request fetches by URL (127.0.0.1 is allowed for the tests only).
  pictures = createServer((req, res) => {
    if (hang) return;
    if (req.url === '/blue.png') return res.writeHead(200, { 'Content-Type': 'image/png' }).end(BLUE);
    if (req.url === '/text.txt') return res.writeHead(200, { 'Content-Type': 'text/plain' }).end('not a picture');
    // The upstream that answers nonsense.
    if (req.url === '/v1/images/generations') return res.writeHead(200, { 'Content-Type': 'application/json' }).end('{"data": [{"b64_json": "aGVsbG8="}]}');
    res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => pictures.listen(0, '127.0.0.1', resolve));
  picturesUrl = `http://127.0.0.1:${(pictures.address() as { port: number }).port}`;
  upstream = await startTestPlatform();
  const up = { engine: 'upstream', url: `${upstream.url}/v1`, apiKey: upstream.caller.key } as const;
  t = await startTestPlatform({
    config: {
      urlFetch: localUrls,
      engines: {
        routes: [
          { models: ['black-forest-labs/FLUX.1.1-pro'], capabilities: ['image'], ...up },
          { models: ['black-forest-labs/FLUX.1-schnell-Free'], capabilities: ['image'], ...up, model: 'nope/missing' },
          { models: ['black-forest-labs/FLUX.1-kontext-dev'], capabilities: ['image'], engine: 'upstream', url: `${picturesUrl}/v1`, timeoutMs: 500 },
        ],
      },
    },
  });
}, 120_000);
afterAll(async () => {
  await t?.close();
  await upstream?.close();
  pictures?.closeAllConnections();
  pictures?.close();
});

const generate = (body: object, on: TestPlatform = t) => on.caller.http.post('/v1/images/generations').send({ model: MODEL, ...body });
const ok = async (body: object, on: TestPlatform = t) => {
  const res = await generate(body, on);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body;
};
const bytesOf = (d: { b64_json: string }) => Buffer.from(d.b64_json, 'base64');
/** The first image's file, asked as base64. */
const file = async (body: object) => bytesOf((await ok({ response_format: 'base64', ...body })).data[0]);
const mean = async (f: Buffer) => (await sharp(f).stats()).channels.slice(0, 3).map((c) => c.mean);
const small = { width: 96, height: 64, steps: 4 };
/** How many image files the default project holds on disk. */
const storedFiles = () => {
  try {
    return readdirSync(join(t.config.dataDir, 'images', t.caller.identity.projectId)).length;
  } catch {
    return 0;
  }
};

describe('the pictures', () => {
  test.each([
    ['jpeg', 'jpeg'],
    ['png', 'png'],
    ['webp', 'webp'],
  ] as const)('output_format %s: a %s file of the asked width and height, its EXIF saying the local engine made it', async (format, decoded) => {
    const f = await file({ prompt: 'a red barn', output_format: format, width: 200, height: 120, seed: 7 });
    const meta = await sharp(f).metadata();
    expect(meta).toMatchObject({ format: decoded, width: 200, height: 120 });
    // Decoding every pixel proves the file whole.
    const raw = await sharp(f).raw().toBuffer({ resolveWithObject: true });
    expect(raw.info).toMatchObject({ width: 200, height: 120 });
    expect(meta.exif?.toString('latin1')).toContain('inference-platform local image engine');
  });

  test('the defaults: one 1024x1024 JPEG answered as a URL, with the seed drawn, the engine and what it did not honour', async () => {
    const body = await ok({ prompt: 'a teal lighthouse at sunset' });
    expect(body).toMatchObject({ object: 'list', model: MODEL, engine: 'local' });
    expect(body.id).toMatch(/^imagegen_/);
    expect(body.data).toHaveLength(1);
    expect(body.data[0]).toMatchObject({ index: 0, type: 'url', seed: body.seed });
    expect(Number.isInteger(body.seed)).toBe(true);
    expect(body.warnings.join(' ')).toMatch(/no model weights.*No safety checker/s);
    const res = await t.caller.http.get(new URL(body.data[0].url).pathname).buffer(true);
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe('image/jpeg');
    expect(await sharp(res.body).metadata()).toMatchObject({ format: 'jpeg', width: 1024, height: 1024 });
  });

  test('the same request with the same seed gives the same bytes; another seed, another picture', async () => {
    const a = await file({ prompt: 'green hills', ...small, seed: 42, output_format: 'png' });
    const b = await file({ prompt: 'green hills', ...small, seed: 42, output_format: 'png' });
    const c = await file({ prompt: 'green hills', ...small, seed: 43, output_format: 'png' });
    expect(a.equals(b)).toBe(true);
    expect(a.equals(c)).toBe(false);
  });

  test('without a seed, one is drawn and returned: sent again, it gives the same picture', async () => {
    const first = await ok({ prompt: 'purple fog', ...small, response_format: 'base64' });
    const again = await ok({ prompt: 'purple fog', ...small, response_format: 'base64', seed: first.seed });
    expect(bytesOf(again.data[0]).equals(bytesOf(first.data[0]))).toBe(true);
    const other = await ok({ prompt: 'purple fog', ...small, response_format: 'base64' });
    expect(other.seed).not.toBe(first.seed);
  });

  test('n images differ, image i rendered with seed + i (that seed alone gives it again)', async () => {
    const body = await ok({ prompt: 'orange waves', ...small, n: 3, seed: 1000, response_format: 'b64_json' });
    expect(body.data.map((d: { index: number; seed: number; type: string }) => [d.index, d.seed, d.type])).toEqual([
      [0, 1000, 'b64_json'],
      [1, 1001, 'b64_json'],
      [2, 1002, 'b64_json'],
    ]);
    const files = body.data.map(bytesOf);
    expect(new Set(files.map((f: Buffer) => f.toString('base64'))).size).toBe(3);
    // Each picture was rendered and encoded on a worker thread, not on the event loop (issue 28 §4: 2048x2048 with
    // n = 4 once held /healthz 0.5 to 1.8 s; the latency itself is measured by `npm run trials`, TRIALS=faults).
    const before = offLoopCompleted();
    await ok({ prompt: 'orange waves', ...small, n: 2, seed: 7, response_format: 'base64' });
    expect(offLoopCompleted() - before).toBe(2);
    expect((await file({ prompt: 'orange waves', ...small, seed: 1002 })).equals(files[2])).toBe(true);
  });

  test("the prompt's colour words colour the picture; a colour the negative prompt names is left out", async () => {
    const [r, g, b] = await mean(await file({ prompt: 'red', ...small, seed: 3, output_format: 'png' }));
    expect(r).toBeGreaterThan(g! + 60);
    expect(r).toBeGreaterThan(b! + 60);
    const [r2, g2, b2] = await mean(await file({ prompt: 'red blue', negative_prompt: 'no red please', ...small, seed: 3, output_format: 'png' }));
    expect(b2).toBeGreaterThan(r2! + 60);
    expect(b2).toBeGreaterThan(g2!);
  });

  test('more steps, finer detail: more octaves of noise, more change from one pixel to the next', async () => {
    /** The mean absolute difference between horizontally adjacent pixels' values (all channels). */
    const roughness = async (f: Buffer) => {
      const { data, info } = await sharp(f).raw().toBuffer({ resolveWithObject: true });
      let sum = 0;
      for (let y = 0; y < info.height; y++)
        for (let x = 1; x < info.width; x++)
          for (let c = 0; c < 3; c++) sum += Math.abs(data[(y * info.width + x) * 3 + c]! - data[(y * info.width + x - 1) * 3 + c]!);
      return sum / (info.height * (info.width - 1) * 3);
    };
    const one = await file({ prompt: 'teal stone', width: 256, height: 256, steps: 1, seed: 9, output_format: 'png' });
    const many = await file({ prompt: 'teal stone', width: 256, height: 256, steps: 50, seed: 9, output_format: 'png' });
    expect(await roughness(many)).toBeGreaterThan((await roughness(one)) * 2);
  });
});

describe('URLs', () => {
  test('served to the project with the key, under its content type; another project or no key cannot read it', async () => {
    const body = await ok({ prompt: 'snow', ...small, n: 2, output_format: 'webp', seed: 5 });
    const base64 = await ok({ prompt: 'snow', ...small, n: 2, output_format: 'webp', seed: 5, response_format: 'base64' });
    for (const [i, d] of body.data.entries()) {
      expect(d.url).toMatch(new RegExp(`^${t.url}/v1/images/image_[0-9a-z]+/content$`));
      const path = new URL(d.url).pathname;
      const res = await t.caller.http.get(path).buffer(true);
      expect(res.status).toBe(200);
      expect(res.headers['content-type']).toBe('image/webp');
      expect(Buffer.from(res.body).equals(bytesOf(base64.data[i]))).toBe(true);
      expectError(await t.other.http.get(path), 404, { code: 'not_found', param: 'id' });
      expectError(await t.http.get(path), 401, { code: 'missing_api_key' });
    }
    expectError(await t.caller.http.get('/v1/images/image_01jq0000000000000000000000/content'), 404, { code: 'not_found', param: 'id' });
    expectError(await t.caller.http.get('/v1/images/image%01/content'), 400, { code: 'invalid_characters', param: 'id' });
    const rows = await t.services.db.prisma.generatedImage.findMany({ where: { generationId: body.id }, orderBy: { index: 'asc' } });
    expect(rows.map((r) => [r.index, r.seed, r.format, r.width, r.height])).toEqual([
      [0, '5', 'webp', 96, 64],
      [1, '6', 'webp', 96, 64],
    ]);
  });

  test('a base64 answer stores nothing', async () => {
    const before = await t.services.db.prisma.generatedImage.count();
    await ok({ prompt: 'ivory', ...small, response_format: 'base64' });
    expect(await t.services.db.prisma.generatedImage.count()).toBe(before);
  });
});

describe('image-to-image', () => {
  test('a data: URL: the input shows through the picture (a blue input under a red prompt), weighed by guidance_scale', async () => {
    const dataUrl = `data:image/png;base64,${BLUE.toString('base64')}`;
    const plain = await mean(await file({ model: KONTEXT, prompt: 'red', ...small, seed: 11, output_format: 'png' }));
    const over = await mean(await file({ model: KONTEXT, prompt: 'red', image_url: dataUrl, ...small, seed: 11, output_format: 'png' }));
    const strong = await mean(await file({ model: KONTEXT, prompt: 'red', image_url: dataUrl, guidance_scale: 9, ...small, seed: 11, output_format: 'png' }));
    expect(over[2]! - plain[2]!).toBeGreaterThan(100);
    expect(over[2]).toBeGreaterThan(over[0]!);
    // More guidance, more of the prompt's red.
    expect(strong[0]).toBeGreaterThan(over[0]! + 50);
  });

  test('an http URL is fetched (an allowed host) and used; reference images put their colour in the palette', async () => {
    const body = await ok({
      model: KONTEXT,
      prompt: 'red',
      image_url: `${picturesUrl}/blue.png`,
      ...small,
      seed: 11,
      output_format: 'png',
      response_format: 'base64',
    });
    expect(body.warnings.join(' ')).not.toContain('guidance_scale');
    const [r, , b] = await mean(bytesOf(body.data[0]));
    expect(b).toBeGreaterThan(r!);
    const [r2, , b2] = await mean(
      await file({ model: KONTEXT, prompt: 'a field', reference_images: [`${picturesUrl}/blue.png`], ...small, seed: 2, output_format: 'png' }),
    );
    expect(b2).toBeGreaterThan(r2!);
  });

  test('inputs that cannot be used answer 400 naming the field, and change nothing', async () => {
    const before = await t.services.db.prisma.generatedImage.count();
    const filesBefore = storedFiles();
    const cases: [object, string, string][] = [
      [{ image_url: `data:image/png;base64,${BLUE.toString('base64')}` }, 'image_url', 'model_not_available'],
      [{ model: KONTEXT, image_url: 'ftp://example.com/a.png' }, 'image_url', 'invalid_image_url'],
      [{ model: KONTEXT, image_url: `${picturesUrl}/text.txt` }, 'image_url', 'invalid_image'],
      [{ model: KONTEXT, image_url: `${picturesUrl}/missing.png` }, 'image_url', 'image_unreachable'],
      [{ model: KONTEXT, reference_images: [`${picturesUrl}/blue.png`, 'data:text/plain,hello'] }, 'reference_images.1', 'invalid_image'],
      [{ reference_images: [`${picturesUrl}/blue.png`] }, 'reference_images', 'model_not_available'],
    ];
    for (const [body, param, code] of cases) expectError(await generate({ prompt: 'x', ...small, ...body }), 400, { param, code });
    expect(await t.services.db.prisma.generatedImage.count()).toBe(before);
    expect(storedFiles()).toBe(filesBefore);
  });

  test('a private address is refused without the tests allowance, as audio URLs are', async () => {
    const strict = await startTestPlatform();
    try {
      const res = await generate({ model: KONTEXT, prompt: 'x', ...small, image_url: `${picturesUrl}/blue.png` }, strict);
      expectError(res, 400, { param: 'image_url', code: 'image_unreachable' });
      expect(res.body.error.message).toContain('public internet address');
    } finally {
      await strict.close();
    }
  });
});

describe('bad input', () => {
  test('each limit is a 400 naming its field; nothing is rendered or stored', async () => {
    const before = await t.services.db.prisma.generatedImage.count();
    const filesBefore = storedFiles();
    const cases: [object, string, string?][] = [
      [{ prompt: '   ' }, 'prompt'],
      [{ prompt: 'x'.repeat(10_001) }, 'prompt'],
      [{ negative_prompt: 'x'.repeat(10_001) }, 'negative_prompt'],
      [{ width: 63 }, 'width'],
      [{ width: 2049 }, 'width'],
      [{ height: 10_000 }, 'height'],
      [{ n: 0 }, 'n'],
      [{ n: 5 }, 'n'],
      [{ steps: 0 }, 'steps'],
      [{ steps: 51 }, 'steps'],
      [{ guidance_scale: -1 }, 'guidance_scale'],
      [{ guidance_scale: 20.5 }, 'guidance_scale'],
      [{ seed: Number.MAX_SAFE_INTEGER, n: 2 }, 'seed'],
      [{ image_loras: [{ path: 'https://example.com/lora', scale: 1 }] }, 'image_loras', 'lora_not_supported'],
      [{ model: KONTEXT, reference_images: ['a', 'b', 'c', 'd', 'e'] }, 'reference_images'],
      [{ output_format: 'gif' }, 'output_format', 'enum'],
      [{ response_format: 'file' }, 'response_format', 'enum'],
      [{ width: 100.5 }, 'width', 'type'],
    ];
    for (const [body, param, code] of cases) {
      const res = await generate({ prompt: 'a picture', ...body });
      expectError(res, 400, { param, ...(code ? { code } : {}) });
    }
    expect(await t.services.db.prisma.generatedImage.count()).toBe(before);
    expect(storedFiles()).toBe(filesBefore);
  });

  test('the models: an unknown one 404, one that does not make images 400 model_not_available', async () => {
    expectError(await generate({ model: 'nope/nothing', prompt: 'x' }), 404, { code: 'model_not_found', param: 'model' });
    expectError(await generate({ model: 'meta-llama/Llama-3.3-70B-Instruct-Turbo', prompt: 'x' }), 400, { code: 'model_not_available', param: 'model' });
    expectError(await generate({ prompt: 'x', model: undefined }), 400, { param: 'model' });
  });
});

describe('the official client (together-ai), unchanged but for baseURL', () => {
  test('images.generate: base64 and url', async () => {
    const together = new Together({ apiKey: t.caller.key, baseURL: `${t.url}/v1`, maxRetries: 0 });
    const b64 = await together.images.generate({
      model: MODEL,
      prompt: 'cat floating in space, cinematic',
      width: 128,
      height: 96,
      steps: 2,
      response_format: 'base64',
    });
    expect(b64.object).toBe('list');
    expect(await sharp(Buffer.from(b64.data[0]!.b64_json, 'base64')).metadata()).toMatchObject({ format: 'jpeg', width: 128, height: 96 });
    const url = await together.images.generate({ model: MODEL, prompt: 'cat floating in space', width: 64, height: 64, n: 2, output_format: 'png' });
    expect(url.data).toHaveLength(2);
    const res = await fetch(url.data[1]!.url, { headers: { Authorization: `Bearer ${t.caller.key}` } });
    expect(res.status).toBe(200);
    expect(await sharp(Buffer.from(await res.arrayBuffer())).metadata()).toMatchObject({ format: 'png', width: 64, height: 64 });
  });
});

describe('an upstream route', () => {
  test('another server renders (asked for base64 with the seed); this server serves the URL and says engine upstream', async () => {
    const request = { model: 'black-forest-labs/FLUX.1.1-pro', prompt: 'a blue boat', ...small, seed: 77, output_format: 'png' };
    const body = await ok(request);
    expect(body).toMatchObject({ engine: 'upstream', seed: 77, warnings: [] });
    expect(body.data[0]).not.toHaveProperty('seed');
    expect(body.data[0].url).toMatch(new RegExp(`^${t.url}/v1/images/`));
    const served = await t.caller.http.get(new URL(body.data[0].url).pathname).buffer(true);
    // The upstream (this server's own local engine there) rendered exactly what it renders for that seed.
    const there = await ok({ ...request, response_format: 'base64' }, upstream);
    expect(Buffer.from(served.body).equals(bytesOf(there.data[0]))).toBe(true);
  });

  test('an upstream refusal is passed on; nonsense is a 502; silence past the route timeout a 504', async () => {
    expectError(await generate({ model: 'black-forest-labs/FLUX.1-schnell-Free', prompt: 'x', ...small }), 404, { code: 'upstream_refused' });
    expectError(await generate({ model: 'black-forest-labs/FLUX.1-kontext-dev', prompt: 'x', ...small }), 502, { code: 'upstream_failed' });
    hang = true;
    try {
      expectError(await generate({ model: 'black-forest-labs/FLUX.1-kontext-dev', prompt: 'x', ...small }), 504, { code: 'upstream_timeout' });
    } finally {
      hang = false;
      pictures.closeAllConnections();
    }
  });
});
