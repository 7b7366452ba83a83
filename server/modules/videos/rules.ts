// The rules of a video request: what each field may be, its default, which media inputs a model's type takes, and
// what a job costs. Everything is checked before anything is stored; a value out of range answers 400 naming it.
import { randomInt } from 'node:crypto';
import type { Model } from '../../../generated/prisma/sqlite/client/client.ts';
import { badRequest } from '../../core/errors.ts';
import type { VideoSpec } from '../../engines/video.ts';
import type { RequestBody } from '../types.ts';

type Body = RequestBody<'createVideo'>;

/** The longest clip, in seconds. */
export const MAX_SECONDS = 10;
export const DEFAULTS = { resolution: '720p', ratio: '16:9', seconds: '5', fps: 24, steps: 30, guidanceScale: 7, outputFormat: 'MP4', quality: 20 } as const;
const SHORT_SIDE: Record<string, number> = { '480p': 480, '720p': 720, '1080p': 1080 };

/** The media fields each model type takes (a model's types are its catalogue `capabilities`). */
const MEDIA_TYPES: Record<string, string[]> = {
  frame_images: ['image-to-video'],
  reference_images: ['reference-to-video'],
  reference_videos: ['reference-to-video'],
  source_video: ['video-edit'],
  frame_videos: ['video-edit'],
  audio_inputs: ['text-to-video', 'image-to-video', 'reference-to-video', 'video-edit'],
};

export interface Accepted {
  spec: VideoSpec;
  /** As asked, e.g. "5". */
  seconds: string;
  media: Record<string, unknown>;
  warnings: string[];
}

/** The nearest even number (the encoders take even sizes). */
const even = (n: number) => Math.round(n / 2) * 2;

function size(body: Body): { width: number; height: number } {
  if ((body.width === undefined) !== (body.height === undefined)) {
    throw badRequest("'width' and 'height' go together: give both, or neither (and 'resolution'/'ratio').", body.width === undefined ? 'width' : 'height');
  }
  if (body.width !== undefined && body.height !== undefined) {
    for (const [field, v] of [
      ['width', body.width],
      ['height', body.height],
    ] as const) {
      if (v < 64 || v > 3840 || v % 2 !== 0) throw badRequest(`'${field}' must be an even number of pixels from 64 to 3840 (got ${v}).`, field);
    }
    return { width: body.width, height: body.height };
  }
  const resolution = body.resolution ?? DEFAULTS.resolution;
  const short = SHORT_SIDE[resolution];
  if (!short) throw badRequest(`'resolution' must be one of ${Object.keys(SHORT_SIDE).join(', ')} (got '${resolution}').`, 'resolution');
  const ratio = body.ratio ?? DEFAULTS.ratio;
  const m = /^(\d{1,3}):(\d{1,3})$/.exec(ratio);
  const [w, h] = m ? [Number(m[1]), Number(m[2])] : [0, 0];
  if (!w || !h || Math.max(w, h) / Math.min(w, h) > 4)
    throw badRequest(`'ratio' must be 'W:H' with whole numbers no more than 4:1 apart, e.g. '16:9' (got '${ratio}').`, 'ratio');
  // The shorter side is the resolution; the longer follows the ratio (even, for the encoders).
  return w >= h ? { width: even((short * w) / h), height: short } : { width: short, height: even((short * h) / w) };
}

/** Checks a request against the model and answers what will be rendered, with every default applied. */
export function accept(body: Body, model: Model): Accepted {
  const warnings: string[] = [];
  const media: Record<string, unknown> = { ...(body.media ?? {}) };
  // The deprecated top-level fields are read as their media.* successors; frame_images also in the requirements'
  // shape, an array holding an array of frame images, flattened.
  for (const field of ['frame_images', 'reference_images'] as const) {
    if (body[field] === undefined) continue;
    if (media[field] !== undefined) throw badRequest(`'${field}' is deprecated and 'media.${field}' is also given: send only 'media.${field}'.`, field);
    media[field] = body[field].flat();
    warnings.push(`'${field}' is deprecated: send it as 'media.${field}'.`);
  }
  const types: string[] = JSON.parse(model.capabilities);
  for (const [field, value] of Object.entries(media)) {
    if (value === undefined) continue;
    const takers = MEDIA_TYPES[field]!;
    if (!takers.some((t) => types.includes(t))) {
      throw badRequest(
        `${model.id} (${types.join(', ')}) does not take media.${field}; it is taken by ${takers.join(' or ')} models.`,
        `media.${field}`,
        'media_not_supported',
      );
    }
  }
  const visualMedia = ['frame_images', 'reference_images', 'reference_videos', 'source_video', 'frame_videos'].some((f) => media[f] !== undefined);
  if (body.prompt === undefined && !visualMedia) throw badRequest("A text-to-video job needs a 'prompt' (or media to start from).", 'prompt', 'required');

  const seconds = body.seconds ?? DEFAULTS.seconds;
  const duration = /^\d+(\.\d+)?$/.test(seconds) ? Number(seconds) : NaN;
  if (!(duration > 0 && duration <= MAX_SECONDS))
    throw badRequest(`'seconds' must be a number of seconds above 0 and at most ${MAX_SECONDS}, as a string (got '${seconds}').`, 'seconds');
  const fps = body.fps ?? DEFAULTS.fps;
  if (fps < 1 || fps > 60) throw badRequest(`'fps' must be from 1 to 60 (got ${fps}).`, 'fps');
  const outputFormat = body.output_format ?? DEFAULTS.outputFormat;
  const quality = body.output_quality ?? DEFAULTS.quality;
  const worst = outputFormat === 'MP4' ? 51 : 63;
  if (quality < 0 || quality > worst)
    throw badRequest(`'output_quality' for ${outputFormat} must be from 0 (best) to ${worst} (got ${quality}).`, 'output_quality');
  const guidanceScale = body.guidance_scale ?? DEFAULTS.guidanceScale;
  if (!(guidanceScale >= 0 && guidanceScale <= 100)) throw badRequest(`'guidance_scale' must be from 0 to 100 (got ${guidanceScale}).`, 'guidance_scale');
  const seed = body.seed ?? randomInt(0, 2 ** 31);
  if (seed < 0 || !Number.isSafeInteger(seed)) throw badRequest(`'seed' must be a non-negative integer (got ${seed}).`, 'seed');
  return {
    spec: {
      prompt: body.prompt ?? '',
      ...size(body),
      seconds: duration,
      fps,
      steps: body.steps ?? DEFAULTS.steps,
      seed,
      guidanceScale,
      outputFormat,
      quality,
      audio: body.generate_audio ?? false,
    },
    seconds,
    media,
    warnings,
  };
}

/** US cents, rounded up: the model's price per second at 1280x720 and 30 steps, scaled by duration, pixels and steps. */
export function costCents(pricePerSecond: number, spec: Pick<VideoSpec, 'seconds' | 'width' | 'height' | 'steps'>): number {
  return Math.ceil(100 * pricePerSecond * spec.seconds * ((spec.width * spec.height) / (1280 * 720)) * (spec.steps / 30) - 1e-9);
}
