// Module `videos`: rows -> wire shapes.
import type { Video } from '../../../generated/prisma/sqlite/client/client.ts';
import { unixSeconds } from '../../core/clock.ts';
import type { VideoSpec } from '../../engines/video.ts';
import type { Wire } from '../types.ts';

/** `origin` is where the caller reached this server (`http://host:port`): the video is served there. */
export function videoWire(v: Video, origin: string): Wire<'VideoJob'> {
  const spec = (JSON.parse(v.params) as { spec: VideoSpec }).spec;
  const warnings: string[] = JSON.parse(v.warnings);
  return {
    id: v.id,
    object: 'video',
    model: v.model,
    status: v.status as Wire<'VideoJob'>['status'],
    created_at: unixSeconds(v.createdAt),
    ...(v.completedAt !== null && { completed_at: unixSeconds(v.completedAt) }),
    size: `${v.width}x${v.height}`,
    seconds: v.seconds,
    seed: spec.seed,
    output_format: spec.outputFormat,
    ...(warnings.length > 0 && { warnings }),
    ...(v.status === 'failed' && { error: { message: v.errorMessage ?? 'The video could not be rendered.', code: v.errorCode ?? 'render_failed' } }),
    ...(v.status === 'completed' && { outputs: { cost: v.costCents ?? 0, video_url: `${origin}/${v.apiVersion}/videos/${v.id}/content` } }),
  };
}
