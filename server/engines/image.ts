// Image generation: the engine interface, the local engine, and the upstream engine (another server's POST
// /images/generations), chosen per model by the engine routes (routes.ts, capability `image`).
//
// The local engine has no model weights: it renders a procedural picture, deterministically, from the request. Its
// palette comes from the colour words of the prompt (less those of the negative prompt, never used) and the mean
// colours of the reference images, filled up with hues hashed from the prompt; fractal value noise (one octave per
// doubling of `steps`) is mapped through it, a few soft discs are laid on top by the seed, and an input image, when
// given, is blended under it. Pixels are computed here; sharp (libvips) encodes them and decodes inputs. The same
// request and seed give the same bytes (sharp's encoders are deterministic for the same version).
import { createHash } from 'node:crypto';
import type Sharp from 'sharp';
import { ApiError } from '../core/errors.ts';
import { onFirstUse } from '../core/packages.ts';
import { offLoop } from './pool.ts';
import type { EngineRoutes, UpstreamRoute } from './routes.ts';
import { upstreamFetch } from './upstream.ts';

// sharp (libvips, a native addon, and what it loads: about 70 ms) is loaded on the first picture, not at start.
const sharpModule = onFirstUse<typeof Sharp>('sharp');
const sharp = (...args: Parameters<typeof Sharp>) => sharpModule()(...args);

export type ImageFormat = 'jpeg' | 'png' | 'webp';
type Rgb = [number, number, number];

export interface ImageRequest {
  /** The catalogue model (canonical id). */
  model: string;
  prompt: string;
  negativePrompt?: string;
  width: number;
  height: number;
  steps: number;
  /** The seed of the first image; image i uses seed + i. */
  seed: number;
  n: number;
  guidanceScale: number;
  format: ImageFormat;
  /** The starting picture's file (image-to-image), already checked by readableImage. */
  image?: Buffer;
  /** Reference images' files, already checked. */
  references: Buffer[];
  /** Whether the caller switched the safety checker off (none runs here either way). */
  safetyCheckerDisabled: boolean;
  /** The request's fields as the caller sent them (what an upstream is sent). */
  body: Record<string, unknown>;
}

export interface ImageResult {
  /** One encoded file per image, in order. */
  images: Buffer[];
  engine: 'local' | 'upstream';
  /** What the engine did not honour, in words. */
  warnings: string[];
}

export interface ImageEngine {
  generate(request: ImageRequest): Promise<ImageResult>;
}

/** Inputs larger than this many pixels are refused before decoding (a decompression bomb). */
export const MAX_INPUT_PIXELS = 40_000_000;

export class UnreadableImage extends Error {}

/** Checks that `bytes` are an image sharp can decode within MAX_INPUT_PIXELS; answers its size. */
export async function readableImage(bytes: Buffer): Promise<{ width: number; height: number; format: string }> {
  try {
    const meta = await sharp(bytes, { limitInputPixels: MAX_INPUT_PIXELS }).metadata();
    if (!meta.width || !meta.height || !meta.format) throw new UnreadableImage('it has no size');
    if (meta.width * meta.height > MAX_INPUT_PIXELS) throw new UnreadableImage(`it is over ${MAX_INPUT_PIXELS / 1e6} megapixels`);
    // Decoding the whole picture finds truncated or corrupt data that the header alone does not show.
    await sharp(bytes, { limitInputPixels: MAX_INPUT_PIXELS }).raw().toBuffer();
    return { width: meta.width, height: meta.height, format: meta.format };
  } catch (err) {
    if (err instanceof UnreadableImage) throw err;
    throw new UnreadableImage('it is not a PNG, JPEG, WebP, GIF or TIFF image that can be read');
  }
}

// Colour words, as a prompt or a negative prompt names them (lower case, whole words).
const COLOURS: Record<string, Rgb> = {
  red: [200, 30, 40],
  crimson: [170, 20, 50],
  scarlet: [230, 40, 20],
  orange: [245, 140, 30],
  amber: [255, 190, 0],
  yellow: [245, 220, 50],
  gold: [212, 175, 55],
  golden: [218, 165, 32],
  green: [40, 160, 60],
  lime: [150, 220, 50],
  forest: [34, 90, 40],
  olive: [110, 120, 40],
  emerald: [40, 170, 110],
  teal: [0, 128, 128],
  cyan: [40, 210, 220],
  turquoise: [64, 224, 208],
  blue: [40, 80, 200],
  navy: [20, 30, 90],
  azure: [40, 140, 240],
  sky: [135, 195, 235],
  ocean: [20, 90, 150],
  sea: [30, 110, 160],
  indigo: [75, 0, 130],
  violet: [140, 80, 200],
  purple: [120, 40, 150],
  magenta: [210, 30, 150],
  pink: [240, 140, 180],
  rose: [230, 90, 120],
  brown: [120, 75, 40],
  tan: [210, 180, 140],
  beige: [230, 220, 190],
  white: [245, 245, 245],
  snow: [250, 250, 255],
  ivory: [255, 250, 235],
  silver: [190, 190, 200],
  grey: [128, 128, 128],
  gray: [128, 128, 128],
  black: [15, 15, 20],
  night: [15, 20, 50],
  dark: [30, 30, 40],
  sunset: [250, 110, 60],
  sunrise: [255, 170, 90],
  fire: [240, 90, 20],
  lava: [200, 50, 10],
  desert: [220, 180, 120],
  sand: [225, 200, 150],
  grass: [90, 170, 60],
  leaf: [70, 150, 50],
  autumn: [200, 100, 30],
  ice: [200, 230, 245],
  cherry: [200, 20, 60],
  lavender: [180, 160, 220],
  coral: [255, 127, 80],
  mint: [150, 230, 180],
  peach: [255, 200, 160],
};

const WORD = /[\p{L}\p{N}]+/gu;
const colourWords = (text: string | undefined): string[] => (text?.toLowerCase().match(WORD) ?? []).filter((w) => w in COLOURS);

/** SHA-256 of the parts: the engine's one source of randomness. */
const digest = (...parts: (string | number)[]) => createHash('sha256').update(parts.join('\u0000')).digest();

/** sfc32, seeded from 16 bytes: a small, fast generator with a long period. */
function generator(seed: Buffer): () => number {
  let a = seed.readUInt32LE(0);
  let b = seed.readUInt32LE(4);
  let c = seed.readUInt32LE(8);
  let d = seed.readUInt32LE(12);
  return () => {
    const t = (((a + b) | 0) + d) | 0;
    d = (d + 1) | 0;
    a = b ^ (b >>> 9);
    b = (c + (c << 3)) | 0;
    c = (c << 21) | (c >>> 11);
    c = (c + t) | 0;
    return (t >>> 0) / 4294967296;
  };
}

function hslToRgb(h: number, s: number, l: number): Rgb {
  const f = (n: number) => {
    const k = (n + h * 12) % 12;
    return Math.round(255 * (l - s * Math.min(l, 1 - l) * Math.max(-1, Math.min(k - 3, 9 - k, 1))));
  };
  return [f(0), f(8), f(4)];
}

const distance = (x: Rgb, y: Rgb) => Math.hypot(x[0] - y[0], x[1] - y[1], x[2] - y[2]);

/**
 * The picture's palette: the references' colours and the prompt's colour words (with darker and lighter shades of
 * them), else hues hashed from the prompt; never a colour near one the negative prompt names.
 */
export function palette(prompt: string, negativePrompt: string | undefined, references: Rgb[]): Rgb[] {
  const refused = colourWords(negativePrompt).map((w) => COLOURS[w]!);
  const far = (c: Rgb) => refused.every((r) => distance(c, r) > 90);
  const named = [...new Set(colourWords(prompt))].map((w) => COLOURS[w]!);
  const out = [...references, ...named].filter(far).slice(0, 6);
  // Colours given (named or referenced): the palette is theirs, widened with a darker and a lighter shade of each.
  const given = out.length;
  for (let i = 0; out.length < 3 && given > 0 && i < 2 * given; i++) {
    const [r, g, b] = out[i % given]!;
    const k = i < given ? 0.55 : 1.35;
    const shade: Rgb = [Math.min(255, Math.round(r * k)), Math.min(255, Math.round(g * k)), Math.min(255, Math.round(b * k))];
    if (far(shade)) out.push(shade);
  }
  const random = generator(digest('palette', prompt));
  for (let tries = 0; out.length < 3 && tries < 64; tries++) {
    const c = hslToRgb(random(), 0.45 + 0.4 * random(), 0.3 + 0.4 * random());
    if (far(c)) out.push(c);
  }
  // Every hue refused (a negative prompt naming many colours): greys, which it can refuse too, or else plain mid-grey.
  for (const grey of [
    [40, 40, 40],
    [128, 128, 128],
    [215, 215, 215],
  ] as Rgb[])
    if (out.length < 3 && far(grey)) out.push(grey);
  while (out.length < 2) out.push([128, 128, 128]);
  return out;
}

/** Octaves of noise for a number of steps: one per doubling. */
export const octavesFor = (steps: number) => 1 + Math.floor(Math.log2(Math.max(1, steps)));

const smooth = (t: number) => t * t * (3 - 2 * t);

// The picture is computed on a worker thread (localImageEngine); every YIELD_ROWS rows of an octave it still lets
// other work of its thread run, as it did when it ran on the event loop.
const YIELD_ROWS = 64;
const yieldToOthers = () => new Promise<void>((resolve) => setImmediate(resolve));

/**
 * Fractal value noise in [0, 1] over width x height: octave o has a lattice of 2^(o+1) cells across the longer
 * side, each lattice value drawn from `random`, interpolated with smoothstep. Rows are computed with per-column
 * cell indices and weights precomputed, so an octave costs a few operations per pixel.
 */
async function fractalNoise(width: number, height: number, octaves: number, random: () => number): Promise<Float32Array> {
  const out = new Float32Array(width * height);
  const side = Math.max(width, height);
  let amplitude = 1;
  let total = 0;
  for (let o = 0; o < octaves; o++) {
    const cells = 2 ** (o + 1);
    const cell = side / cells;
    const cols = Math.ceil(width / cell) + 2;
    const rows = Math.ceil(height / cell) + 2;
    const lattice = new Float32Array(cols * rows);
    for (let i = 0; i < lattice.length; i++) lattice[i] = random();
    const x0 = new Int32Array(width);
    const wx = new Float32Array(width);
    for (let x = 0; x < width; x++) {
      const fx = x / cell;
      x0[x] = Math.floor(fx);
      wx[x] = smooth(fx - x0[x]!);
    }
    for (let y = 0; y < height; y++) {
      if (y % YIELD_ROWS === YIELD_ROWS - 1) await yieldToOthers();
      const fy = y / cell;
      const y0 = Math.floor(fy);
      const wy = smooth(fy - y0);
      const top = y0 * cols;
      const bottom = top + cols;
      const row = y * width;
      for (let x = 0; x < width; x++) {
        const i = x0[x]!;
        const a = lattice[top + i]!;
        const b = lattice[top + i + 1]!;
        const c = lattice[bottom + i]!;
        const d = lattice[bottom + i + 1]!;
        const w = wx[x]!;
        const upper = a + (b - a) * w;
        const lower = c + (d - c) * w;
        out[row + x]! += amplitude * (upper + (lower - upper) * wy);
      }
    }
    total += amplitude;
    amplitude /= 2;
  }
  for (let i = 0; i < out.length; i++) out[i]! /= total;
  return out;
}

/** One picture's pixels (RGB, 8 bits), for the seed of that picture. */
export async function renderPixels(request: ImageRequest, seed: number, colours: Rgb[], base?: Buffer): Promise<Buffer> {
  const { width, height } = request;
  const random = generator(digest('image', request.model, request.prompt, request.negativePrompt ?? '', seed, width, height));
  const noise = await fractalNoise(width, height, octavesFor(request.steps), random);
  // Stretch the noise's range to the whole palette (sums of octaves crowd around the middle).
  let lo = 1;
  let hi = 0;
  for (let i = 0; i < noise.length; i++) {
    lo = Math.min(lo, noise[i]!);
    hi = Math.max(hi, noise[i]!);
  }
  const span = hi - lo || 1;
  const last = colours.length - 1;
  const discs = Array.from({ length: 2 + Math.floor(random() * 4) }, () => ({
    cx: random() * width,
    cy: random() * height,
    r: (0.08 + random() * 0.25) * Math.min(width, height),
    colour: colours[Math.floor(random() * colours.length)]!,
    alpha: 0.35 + random() * 0.4,
  }));
  const weight = base ? Math.min(0.95, Math.max(0.05, request.guidanceScale / 10)) : 1;
  // The noise through the palette.
  const rgb = new Float32Array(width * height * 3);
  for (let p = 0; p < noise.length; p++) {
    const t = ((noise[p]! - lo) / span) * last;
    const k = Math.min(last - 1, Math.floor(t));
    const f = t - k;
    const c0 = colours[k]!;
    const c1 = colours[k + 1]!;
    rgb[p * 3] = c0[0] + (c1[0] - c0[0]) * f;
    rgb[p * 3 + 1] = c0[1] + (c1[1] - c0[1]) * f;
    rgb[p * 3 + 2] = c0[2] + (c1[2] - c0[2]) * f;
  }
  // The discs, each over its bounding box only.
  for (const d of discs) {
    const [x0, x1] = [Math.max(0, Math.floor(d.cx - d.r)), Math.min(width - 1, Math.ceil(d.cx + d.r))];
    const [y0, y1] = [Math.max(0, Math.floor(d.cy - d.r)), Math.min(height - 1, Math.ceil(d.cy + d.r))];
    for (let y = y0; y <= y1; y++) {
      const dy = (y - d.cy) / d.r;
      for (let x = x0; x <= x1; x++) {
        const dx = (x - d.cx) / d.r;
        const squared = dx * dx + dy * dy;
        if (squared >= 1) continue;
        const a = d.alpha * (1 - smooth(Math.sqrt(squared)));
        const q = (y * width + x) * 3;
        rgb[q] = rgb[q]! + (d.colour[0] - rgb[q]!) * a;
        rgb[q + 1] = rgb[q + 1]! + (d.colour[1] - rgb[q + 1]!) * a;
        rgb[q + 2] = rgb[q + 2]! + (d.colour[2] - rgb[q + 2]!) * a;
      }
    }
  }
  // The input image under it, then 8 bits per channel.
  const px = Buffer.allocUnsafe(rgb.length);
  if (base) for (let q = 0; q < rgb.length; q++) px[q] = base[q]! + (rgb[q]! - base[q]!) * weight;
  else for (let q = 0; q < rgb.length; q++) px[q] = rgb[q]!;
  return px;
}

const SOFTWARE = 'inference-platform local image engine';
const DESCRIPTION = 'A procedural picture (noise and discs in colours named by the prompt), not the output of an image model.';

/** Encodes RGB pixels as the asked format, saying in its EXIF what made it. */
export function encode(px: Buffer, width: number, height: number, format: ImageFormat): Promise<Buffer> {
  const image = sharp(px, { raw: { width, height, channels: 3 } }).withExif({ IFD0: { Software: SOFTWARE, ImageDescription: DESCRIPTION } });
  if (format === 'png') return image.png({ compressionLevel: 6 }).toBuffer();
  if (format === 'webp') return image.webp({ quality: 90 }).toBuffer();
  return image.jpeg({ quality: 90 }).toBuffer();
}

async function meanColour(file: Buffer): Promise<Rgb> {
  const { channels } = await sharp(file, { limitInputPixels: MAX_INPUT_PIXELS }).removeAlpha().stats();
  return [Math.round(channels[0]!.mean), Math.round(channels[1]!.mean), Math.round(channels[2]!.mean)];
}

export const localImageEngine: ImageEngine = {
  async generate(request) {
    const { width, height } = request;
    const references = await Promise.all(request.references.map(meanColour));
    const colours = palette(request.prompt, request.negativePrompt, references);
    const base = request.image
      ? await sharp(request.image, { limitInputPixels: MAX_INPUT_PIXELS }).removeAlpha().resize(width, height, { fit: 'cover' }).raw().toBuffer()
      : undefined;
    // Each picture is rendered and encoded on a worker thread (pool.ts: 2048x2048 at 50 steps is about a second of
    // CPU), the pictures of a request in parallel as threads are free.
    const { model, prompt, negativePrompt, steps, guidanceScale, format } = request;
    const task = { request: { model, prompt, negativePrompt, width, height, steps, guidanceScale }, colours, base, format };
    const images = await Promise.all(
      Array.from({ length: request.n }, async (_, i) => Buffer.from(await offLoop<ArrayBuffer>('image', { ...task, seed: request.seed + i }))),
    );
    const warnings = [
      'The local image engine has no model weights: it renders a procedural picture in colours named by the prompt, not a depiction of the prompt.',
    ];
    if (!request.safetyCheckerDisabled) warnings.push('No safety checker runs on this server (the local engine depicts nothing).');
    if (!request.image && request.body.guidance_scale !== undefined) warnings.push('guidance_scale changes nothing without an input image (image_url).');
    return { images, engine: 'local', warnings };
  },
};

const malformed = (route: UpstreamRoute, why: string) =>
  new ApiError(502, 'upstream_failed', `The upstream engine at ${route.url} answered without usable images: ${why}.`, null, 'server_error');

/**
 * Sends the request to another server's POST /images/generations, asking for base64 (this server serves the bytes
 * of a `url` answer itself, never an upstream's URL) and the seed drawn here; each picture is checked readable.
 */
export function upstreamImageEngine(route: UpstreamRoute): ImageEngine {
  return {
    async generate(request) {
      const body = { ...request.body, model: route.model ?? request.model, seed: request.seed, response_format: 'base64' };
      const res = await upstreamFetch(route, '/images/generations', body);
      const answer = (await res.json().catch(() => null)) as { data?: unknown } | null;
      if (!Array.isArray(answer?.data)) throw malformed(route, 'no data list');
      if (answer.data.length !== request.n) throw malformed(route, `${answer.data.length} images for ${request.n} asked`);
      const images: Buffer[] = [];
      for (const [i, d] of (answer.data as { b64_json?: unknown }[]).entries()) {
        if (typeof d?.b64_json !== 'string') throw malformed(route, `data[${i}] has no b64_json`);
        const file = Buffer.from(d.b64_json, 'base64');
        const meta = await sharp(file)
          .metadata()
          .catch(() => null);
        if (!meta || !['jpeg', 'png', 'webp'].includes(meta.format ?? '')) throw malformed(route, `data[${i}] is not a PNG, JPEG or WebP image`);
        images.push(file);
      }
      return { images, engine: 'upstream', warnings: [] };
    },
  };
}

/** The engine that serves `model` (its canonical id): local unless a route sends it upstream. */
export function imageEngineFor(routes: EngineRoutes, model: string): ImageEngine {
  const route = routes.routeFor('image', model);
  return route.engine === 'upstream' ? upstreamImageEngine(route) : localImageEngine;
}
