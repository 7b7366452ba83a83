// Module `images`: the rules of a generation request (the platform publishes no limits; these are this server's,
// in the spec's createImage description): its numbers' ranges, the model's image inputs, and fetching them.
import { randomInt } from 'node:crypto';
import type { UrlFetchPolicy } from '../../core/config.ts';
import { badRequest } from '../../core/errors.ts';
import type { ImageFormat } from '../../engines/image.ts';
import { readableImage, UnreadableImage } from '../../engines/image.ts';
import { downloadUserUrl } from '../../engines/user-urls.ts';
import type { RequestBody } from '../types.ts';

export const LIMITS = {
  promptChars: 10_000,
  size: { min: 64, max: 2048 },
  n: { min: 1, max: 4 },
  steps: { min: 1, max: 50 },
  guidance: { min: 0, max: 20 },
  references: 4,
  inputBytes: 20 * 1024 * 1024,
};
/** A drawn seed's range (the one a caller gives may be any safe integer). */
const DRAWN_SEED_MAX = 2 ** 31 - 1;

export interface AcceptedImage {
  prompt: string;
  negativePrompt?: string;
  width: number;
  height: number;
  n: number;
  steps: number;
  seed: number;
  guidanceScale: number;
  format: ImageFormat;
  responseFormat: 'base64' | 'url';
}

/** `value` within `range`, else 400 naming `param`; `what` is the value as the caller sent it (`width`, `size's width`). */
const inRange = (value: number, range: { min: number; max: number }, param: string, what: string, unit = '') => {
  if (value < range.min || value > range.max) throw badRequest(`${what} is ${value}; it must be from ${range.min} to ${range.max}${unit}.`, param);
  return value;
};

/**
 * `size` (`<width>x<height>`, or `auto`: the default), as the OpenAI-shaped clients send it. It decides the width and
 * height when given: the contract's defaults fill `width` and `height` in, so one given beside it cannot be told from
 * a default.
 */
function sizeOf(body: RequestBody<'createImage'>): { width: number; height: number } | undefined {
  if (body.size === undefined) return undefined;
  const m = /^([1-9][0-9]{0,5})x([1-9][0-9]{0,5})$/.exec(body.size);
  if (!m && body.size !== 'auto')
    throw badRequest(`size is '${body.size}'; give it as <width>x<height> in pixels, e.g. 1024x768 (or auto).`, 'size', 'invalid_size');
  return m ? { width: Number(m[1]), height: Number(m[2]) } : { width: 1024, height: 1024 };
}

/** The request's values with every default applied, each checked against its range (400 naming the field). */
export function acceptImage(body: RequestBody<'createImage'>): AcceptedImage {
  if (body.prompt.trim() === '') throw badRequest('prompt is empty: describe the picture in at least one character that is not white space.', 'prompt');
  if (body.prompt.length > LIMITS.promptChars)
    throw badRequest(`prompt is ${body.prompt.length} characters long; at most ${LIMITS.promptChars} are read.`, 'prompt');
  if (body.negative_prompt !== undefined && body.negative_prompt.length > LIMITS.promptChars)
    throw badRequest(`negative_prompt is ${body.negative_prompt.length} characters long; at most ${LIMITS.promptChars} are read.`, 'negative_prompt');
  const n = inRange(body.n ?? 1, LIMITS.n, 'n', 'n (the number of images)');
  const size = sizeOf(body);
  const width = inRange(size?.width ?? body.width ?? 1024, LIMITS.size, size ? 'size' : 'width', size ? "size's width" : 'width', ' pixels');
  const height = inRange(size?.height ?? body.height ?? 1024, LIMITS.size, size ? 'size' : 'height', size ? "size's height" : 'height', ' pixels');
  const steps = inRange(body.steps ?? 20, LIMITS.steps, 'steps', 'steps');
  const guidanceScale = inRange(body.guidance_scale ?? 3.5, LIMITS.guidance, 'guidance_scale', 'guidance_scale');
  // Image i is rendered with seed + i, which must stay an exact integer.
  const seed = body.seed ?? randomInt(0, DRAWN_SEED_MAX + 1);
  if (!Number.isSafeInteger(seed) || seed > Number.MAX_SAFE_INTEGER - (n - 1))
    throw badRequest(
      `seed must be a whole number from ${-Number.MAX_SAFE_INTEGER} to ${Number.MAX_SAFE_INTEGER - (n - 1)} (image i is rendered with seed + i).`,
      'seed',
    );
  if (body.image_loras?.length)
    throw badRequest('No model on this server applies LoRAs to images: send image_loras empty or leave it out.', 'image_loras', 'lora_not_supported');
  if (body.reference_images && body.reference_images.length > LIMITS.references)
    throw badRequest(`reference_images holds ${body.reference_images.length} images; at most ${LIMITS.references} are read.`, 'reference_images');
  return {
    prompt: body.prompt,
    negativePrompt: body.negative_prompt,
    width,
    height,
    n,
    steps,
    seed,
    guidanceScale,
    format: body.output_format ?? 'jpeg',
    responseFormat: body.response_format === 'url' || body.response_format === undefined ? 'url' : 'base64',
  };
}

const mb = (bytes: number) => `${Math.round(bytes / 1024 / 1024)} MB`;

/** The bytes of a `data:` URL (base64 or percent-encoded). */
function dataUrlBytes(url: string, param: string): Buffer {
  const comma = url.indexOf(',');
  if (comma < 0) throw badRequest(`${param} is a data: URL without a comma before its data.`, param, 'invalid_image_url');
  const meta = url.slice(5, comma);
  const data = url.slice(comma + 1);
  try {
    return meta.endsWith(';base64') ? Buffer.from(data, 'base64') : Buffer.from(decodeURIComponent(data), 'latin1');
  } catch {
    throw badRequest(`${param} is a data: URL whose data cannot be decoded.`, param, 'invalid_image_url');
  }
}

/** Fetches an http(s) URL under the policy (engines/user-urls.ts), at most LIMITS.inputBytes. */
async function download(url: URL, param: string, policy: UrlFetchPolicy): Promise<Buffer> {
  const unreachable = (why: string) => badRequest(`The image at ${url.href} (${param}) cannot be fetched: ${why}.`, param, 'image_unreachable');
  const chunks: Uint8Array[] = [];
  await downloadUserUrl(
    url,
    policy,
    LIMITS.inputBytes,
    { unreachable, tooLarge: () => unreachable(`it is over the ${mb(LIMITS.inputBytes)} limit of an input image`) },
    (c) => chunks.push(c),
  );
  return Buffer.concat(chunks);
}

/** An input image (`image_url` or `reference_images.<i>`): fetched or decoded from its data: URL, and checked readable. */
export async function inputImage(value: string, param: string, policy: UrlFetchPolicy): Promise<Buffer> {
  let bytes: Buffer;
  if (value.startsWith('data:')) bytes = dataUrlBytes(value, param);
  else {
    let url: URL | undefined;
    try {
      url = new URL(value);
    } catch {
      url = undefined;
    }
    if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:'))
      throw badRequest(`${param} must be an http(s) URL of an image, or a data: URL of one.`, param, 'invalid_image_url');
    bytes = await download(url, param, policy);
  }
  if (bytes.length > LIMITS.inputBytes) throw badRequest(`${param} is over the ${mb(LIMITS.inputBytes)} limit of an input image.`, param, 'image_unreachable');
  try {
    await readableImage(bytes);
  } catch (err) {
    if (err instanceof UnreadableImage) throw badRequest(`${param} is not a usable image: ${err.message}.`, param, 'invalid_image');
    throw err;
  }
  return bytes;
}
