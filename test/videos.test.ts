// Video generation jobs: accepted in_progress, rendered by the runner into a real, playable file (checked with
// ffprobe: container, codecs, size, frame rate, duration, audio), deterministic by seed, served by this server with
// Range support under the job's project, priced by seconds, pixels and steps; the request's rules; a render that
// keeps failing ends `failed` with its error; a restart mid-job loses nothing; and the official client.
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { promisify } from 'node:util';
import Together from 'together-ai';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { costCents } from '../server/modules/videos/rules.ts';
import { expectError } from './support/expect.ts';
import { startTestPlatform, type TestPlatform } from './support/platform.ts';

const ffprobe = (createRequire(import.meta.url)('@ffprobe-installer/ffprobe') as { path: string }).path;
const T2V = 'Wan-AI/Wan2.2-T2V-A14B';
const I2V = 'Wan-AI/Wan2.2-I2V-A14B';
const EDIT = 'kwaivgI/kling-2.1-master';
const SMALL = { width: 128, height: 72, seconds: '1', fps: 12 };

let t: TestPlatform;
beforeAll(async () => {
  t = await startTestPlatform();
});
afterAll(() => t?.close());

const create = (body: object, prefix = 'v2') => t.caller.http.post(`/${prefix}/videos`).send(body);
const get = (id: string, prefix = 'v2') => t.caller.http.get(`/${prefix}/videos/${id}`);
/** The path of a video_url, to fetch with the test's own client. */
const pathOf = (url: string) => new URL(url).pathname;

/** The file as bytes; an error answer (JSON) parsed as usual. */
async function download(url: string, headers: Record<string, string> = {}) {
  return t.caller.http
    .get(pathOf(url))
    .set(headers)
    .buffer(true)
    .parse((res, done) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const bytes = Buffer.concat(chunks);
        done(null, /json/.test(String(res.headers['content-type'])) ? JSON.parse(bytes.toString('utf8')) : bytes);
      });
    });
}

async function probe(bytes: Buffer, ext: string) {
  const file = join(t.config.dataDir, `probe-${createHash('sha1').update(bytes).digest('hex')}.${ext}`);
  writeFileSync(file, bytes);
  const { stdout } = await promisify(execFile)(ffprobe, [
    '-v',
    'error',
    '-show_entries',
    'stream=codec_type,codec_name,width,height,r_frame_rate:format=format_name,duration:format_tags=comment',
    '-of',
    'json',
    file,
  ]);
  return JSON.parse(stdout) as { streams: any[]; format: { format_name: string; duration: string; tags?: { comment?: string } } };
}

/** Creates a job and lets the runner render it. */
async function rendered(body: object, prefix = 'v2') {
  const res = await create(body, prefix);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  await t.advance(0);
  return (await get(res.body.id, prefix)).body;
}

describe('a job is accepted in progress, then rendered into a real video', () => {
  test('MP4 with audio: in_progress without outputs, then completed with a playable H.264/AAC file of the asked size, rate and duration', async () => {
    const res = await create({ model: T2V, prompt: 'a lighthouse at dusk', ...SMALL, seed: 7, generate_audio: true });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body).toMatchObject({ object: 'video', model: T2V, status: 'in_progress', size: '128x72', seconds: '1', seed: 7, output_format: 'MP4' });
    expect(res.body.id).toMatch(/^video_/);
    expect(res.body.outputs).toBeUndefined();
    expect(res.body.completed_at).toBeUndefined();
    expectError(await download(`http://x/v2/videos/${res.body.id}/content`), 409, { code: 'video_not_ready', param: 'id' });

    await t.advance(0);
    const done = (await get(res.body.id)).body;
    expect(done.status).toBe('completed');
    expect(done.completed_at).toBeGreaterThanOrEqual(done.created_at);
    expect(done.outputs.video_url).toBe(`${t.url}/v2/videos/${res.body.id}/content`);
    expect(done.outputs.cost).toBe(costCents(0.08, { seconds: 1, width: 128, height: 72, steps: 30 }));

    const file = await download(done.outputs.video_url);
    expect(file.status).toBe(200);
    expect(file.headers['content-type']).toBe('video/mp4');
    const info = await probe(file.body, 'mp4');
    expect(info.format.format_name).toContain('mp4');
    expect(Number(info.format.duration)).toBeCloseTo(1, 1);
    expect(info.format.tags?.comment).toMatch(/local video engine/);
    const video = info.streams.find((s) => s.codec_type === 'video');
    expect(video).toMatchObject({ codec_name: 'h264', width: 128, height: 72, r_frame_rate: '12/1' });
    expect(info.streams.find((s) => s.codec_type === 'audio')?.codec_name).toBe('aac');
  });

  test('WEBM without audio: VP9, no audio track', async () => {
    const done = await rendered({ model: T2V, prompt: 'waves', ...SMALL, output_format: 'WEBM' });
    const file = await download(done.outputs.video_url);
    expect(file.headers['content-type']).toBe('video/webm');
    const info = await probe(file.body, 'webm');
    expect(info.format.format_name).toContain('webm');
    expect(info.streams.map((s) => s.codec_name)).toEqual(['vp9']);
  });

  test('defaults: 1280x720 from 720p and 16:9, 5 seconds, 24 fps, MP4; resolution and ratio choose the size', async () => {
    const res = await create({ model: T2V, prompt: 'defaults' });
    expect(res.body).toMatchObject({ size: '1280x720', seconds: '5', output_format: 'MP4' });
    expect(typeof res.body.seed).toBe('number');
    expect((await create({ model: T2V, prompt: 'portrait', resolution: '480p', ratio: '9:16' })).body.size).toBe('480x854');
    expect((await create({ model: T2V, prompt: 'square', resolution: '1080p', ratio: '1:1' })).body.size).toBe('1080x1080');
  });

  test('the same request and seed give the same file; another seed another one; a drawn seed is kept and reported', async () => {
    const body = { model: T2V, prompt: 'determinism', ...SMALL, seed: 12345 };
    const [a, b, c] = [await rendered(body), await rendered(body), await rendered({ ...body, seed: 54321 })];
    const bytes = async (v: any) => (await download(v.outputs.video_url)).body as Buffer;
    const [ba, bb, bc] = [await bytes(a), await bytes(b), await bytes(c)];
    expect(ba.equals(bb)).toBe(true);
    expect(ba.equals(bc)).toBe(false);
    const drawn = await rendered({ model: T2V, prompt: 'determinism', ...SMALL });
    const again = await rendered({ model: T2V, prompt: 'determinism', ...SMALL, seed: drawn.seed });
    expect((await bytes(drawn)).equals(await bytes(again))).toBe(true);
  });

  test('cost grows with seconds, pixels and steps', () => {
    const base = { seconds: 5, width: 1280, height: 720, steps: 30 };
    expect(costCents(0.08, base)).toBe(40);
    expect(costCents(0.08, { ...base, seconds: 10 })).toBe(80);
    expect(costCents(0.08, { ...base, width: 1920, height: 1080 })).toBe(90);
    expect(costCents(0.08, { ...base, steps: 50 })).toBe(67);
  });
});

describe('the video is served by this server', () => {
  test.each(['v2', 'v1'])(
    'under /%s: Range requests answer 206 with the part asked, an unsatisfiable one 416; another project sees nothing',
    async (prefix) => {
      const done = await rendered({ model: T2V, prompt: 'ranges', ...SMALL }, prefix);
      expect(done.outputs.video_url).toBe(`${t.url}/${prefix}/videos/${done.id}/content`);
      const whole = (await download(done.outputs.video_url)).body as Buffer;
      const part = await download(done.outputs.video_url, { Range: 'bytes=10-99' });
      expect(part.status).toBe(206);
      expect(part.headers['content-range']).toBe(`bytes 10-99/${whole.length}`);
      expect((part.body as Buffer).equals(whole.subarray(10, 100))).toBe(true);
      expectError(await download(done.outputs.video_url, { Range: `bytes=${whole.length + 10}-` }), 416, { code: 'range_not_satisfiable' });
      const head = await t.caller.http.head(pathOf(done.outputs.video_url));
      expect(head.status).toBe(200);
      expect(Number(head.headers['content-length'])).toBe(whole.length);
      expectError(await t.other.http.get(pathOf(done.outputs.video_url)), 404, { param: 'id' });
      expectError(await t.other.http.get(`/${prefix}/videos/${done.id}`), 404);
      expectError(await t.caller.http.get(`/${prefix}/videos/${done.id}x/content`), 404);
    },
  );

  test.each(['v2', 'v1'])('under /%s: content before completion is 409 video_not_ready', async (prefix) => {
    const res = await create({ model: T2V, prompt: 'not yet', ...SMALL }, prefix);
    expectError(await t.caller.http.get(`/${prefix}/videos/${res.body.id}/content`), 409, { code: 'video_not_ready' });
  });
});

describe('the request rules (400 naming the field, nothing created)', () => {
  const bad = [
    [{ prompt: '' }, 'prompt'],
    [{ prompt: 'x'.repeat(32_001) }, 'prompt'],
    [{ steps: 9 }, 'steps'],
    [{ steps: 51 }, 'steps'],
    [{ width: 128 }, 'height'],
    [{ height: 72 }, 'width'],
    [{ width: 127, height: 72 }, 'width'],
    [{ width: 128, height: 8000 }, 'height'],
    [{ resolution: '4k' }, 'resolution'],
    [{ ratio: 'wide' }, 'ratio'],
    [{ ratio: '10:1' }, 'ratio'],
    [{ seconds: '11' }, 'seconds'],
    [{ seconds: '0' }, 'seconds'],
    [{ seconds: 'five' }, 'seconds'],
    [{ fps: 0 }, 'fps'],
    [{ fps: 61 }, 'fps'],
    [{ output_quality: 52 }, 'output_quality'],
    [{ output_format: 'WEBM', output_quality: 64 }, 'output_quality'],
    [{ output_format: 'AVI' }, 'output_format'],
    [{ guidance_scale: -1 }, 'guidance_scale'],
    [{ seed: -5 }, 'seed'],
  ] as const;
  test.each(bad.map(([over, param]) => [JSON.stringify(over).slice(0, 60), over, param] as const))('%s: 400 naming %s', async (_label, over, param) => {
    const before = await t.services.db.prisma.video.count();
    expectError(await create({ model: T2V, prompt: 'rules', ...over }), 400, { param });
    expect(await t.services.db.prisma.video.count()).toBe(before);
  });

  test('without a body, the job still needs a model', async () => {
    for (const prefix of ['v2', 'v1']) expectError(await t.caller.http.post(`/${prefix}/videos`), 400, { param: 'model' });
  });

  test('a text-to-video job needs a prompt', async () => {
    expectError(await create({ model: T2V }), 400, { param: 'prompt', code: 'required' });
  });

  test('the model must be a video model of the catalogue', async () => {
    for (const prefix of ['v2', 'v1'])
      expectError(await create({ model: 'nope/nothing', prompt: 'x' }, prefix), 404, { param: 'model', code: 'model_not_found' });
    expectError(await create({ model: 'meta-llama/Meta-Llama-3.1-8B-Instruct', prompt: 'x' }), 400, { param: 'model', code: 'model_not_available' });
  });

  test("media fields follow the model's type", async () => {
    const image = { input_image: 'https://example.invalid/first.png', frame: 'first' };
    expectError(await create({ model: T2V, prompt: 'x', media: { source_video: 'https://example.invalid/in.mp4' } }), 400, {
      param: 'media.source_video',
      code: 'media_not_supported',
    });
    expectError(await create({ model: T2V, prompt: 'x', media: { frame_images: [image] } }), 400, { param: 'media.frame_images' });
    expect((await create({ model: I2V, ...SMALL, media: { frame_images: [image] } })).status).toBe(200);
    expect((await create({ model: EDIT, ...SMALL, media: { source_video: { video: 'https://example.invalid/in.mp4' } } })).status).toBe(200);
  });

  test('the deprecated top-level frame_images is read as media.frame_images, with a warning; given both ways it is refused', async () => {
    const image = { input_image: 'data:image/png;base64,iVBORw0KGgo=', frame: 0 };
    const res = await create({ model: I2V, ...SMALL, frame_images: [image] });
    expect(res.status).toBe(200);
    expect(res.body.warnings).toEqual(["'frame_images' is deprecated: send it as 'media.frame_images'."]);
    expect(res.headers.warning).toMatch(/^299 - "'frame_images' is deprecated/);
    expectError(await create({ model: I2V, ...SMALL, frame_images: [image], media: { frame_images: [image] } }), 400, { param: 'frame_images' });
  });

  test("the deprecated frame_images in the requirements' shape (an array holding an array of frame images) is read the same, flattened", async () => {
    const first = { input_image: 'data:image/png;base64,iVBORw0KGgo=', frame: 0 };
    const last = { input_image: 'https://example.invalid/last.png', frame: 'last' };
    const res = await create({ model: I2V, ...SMALL, frame_images: [[first, last]] });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.warnings).toEqual(["'frame_images' is deprecated: send it as 'media.frame_images'."]);
    expect(res.headers.warning).toMatch(/^299 - "'frame_images' is deprecated/);
    const row = await t.services.db.prisma.video.findUniqueOrThrow({ where: { id: res.body.id } });
    expect(JSON.parse(row.params).media).toEqual({ frame_images: [first, last] });
    expectError(await create({ model: I2V, ...SMALL, frame_images: [[first], [last]], media: { frame_images: [first] } }), 400, { param: 'frame_images' });
    expectError(await create({ model: T2V, prompt: 'x', frame_images: [[first]] }), 400, { code: 'media_not_supported' });
  });
});

describe('failure and durability', () => {
  test('a render that keeps failing ends the job failed, with its error, and no content', async () => {
    const broken = await startTestPlatform({ config: { ffmpegPath: '/nonexistent/ffmpeg' } });
    try {
      const res = await broken.caller.http.post('/v2/videos').send({ model: T2V, prompt: 'doomed', ...SMALL });
      for (let i = 0; i < broken.config.runner.maxFailures; i++) await broken.advance(60_000);
      const job = (await broken.caller.http.get(`/v2/videos/${res.body.id}`)).body;
      expect(job.status).toBe('failed');
      expect(job.error.code).toBe('render_failed');
      expect(job.error.message).toMatch(/could not be rendered/);
      expect(job.outputs).toBeUndefined();
      expectError(await broken.caller.http.get(`/v2/videos/${res.body.id}/content`), 409, { code: 'video_not_ready' });
    } finally {
      await broken.close();
    }
  });

  test('a job accepted before a restart is rendered after it', async () => {
    const p = await startTestPlatform();
    try {
      const res = await p.caller.http.post('/v2/videos').send({ model: T2V, prompt: 'survivor', ...SMALL });
      await p.restart();
      await p.advance(0);
      expect((await p.caller.http.get(`/v2/videos/${res.body.id}`)).body.status).toBe('completed');
    } finally {
      await p.close();
    }
  });
});

describe('the official together-ai client', () => {
  test.each(['v2', 'v1'])('videos.create and videos.retrieve with baseURL .../%s, then the download', async (prefix) => {
    const client = new Together({ apiKey: t.caller.key, baseURL: `${t.url}/${prefix}`, maxRetries: 0 });
    const job = await client.videos.create({ model: T2V, prompt: 'through the SDK', width: 128, height: 72, seconds: '1', fps: 12, output_format: 'MP4' });
    expect(job.status).toBe('in_progress');
    await t.advance(0);
    const done = await client.videos.retrieve(job.id);
    expect(done.status).toBe('completed');
    const res = await fetch(done.outputs!.video_url, { headers: { Authorization: `Bearer ${t.caller.key}` } });
    expect(res.status).toBe(200);
    expect((await probe(Buffer.from(await res.arrayBuffer()), 'mp4')).streams.find((s) => s.codec_type === 'video')?.codec_name).toBe('h264');
  });
});
