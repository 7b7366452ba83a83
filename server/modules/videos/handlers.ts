// Module `videos`: video generation jobs, rendered by the runner (machine.ts) and served from disk. Each operation
// is served under /v2 (the platform's address) and /v1 (where the official clients send it once their baseURL is
// this server's /v1); the /v1 handlers are the same ones, named for their operation.
import { join } from 'node:path';
import { instant } from '../../core/clock.ts';
import { apiError, badRequest, conflict, withArticle } from '../../core/errors.ts';
import { newId } from '../../core/ids.ts';
import { reply } from '../../http/reply.ts';
import { owned } from '../../http/scope.ts';
import { enter } from '../../runner/progress.ts';
import { findModel } from '../models/index.ts';
import type { Context } from '../types.ts';
import { videoMachine } from './machine.ts';
import { accept } from './rules.ts';
import { videoWire } from './wire.ts';

async function create(ctx: Context<'createVideo'> | Context<'createVideoV1'>, apiVersion: 'v1' | 'v2') {
  const { db, clock, identity, body } = ctx;
  // The body is optional, as on the platform; the job still needs a model.
  if (body?.model === undefined) throw badRequest("A video job needs 'model', a video model of the catalogue.", 'model', 'required');
  const model = await findModel(db.prisma, identity.projectId, body.model);
  if (!model) throw apiError(404, 'model_not_found', `No model '${body.model}' was found.`, 'model');
  if (model.type !== 'video') throw badRequest(`'${body.model}' is ${withArticle(model.type)} model, not a video model.`, 'model', 'model_not_available');
  const accepted = accept(body, model);
  const pricePerSecond = (JSON.parse(model.pricing) as { base?: number }).base ?? 0;
  const video = await db.write(async (tx) => {
    const v = await tx.video.create({
      data: {
        id: newId('video', clock.now()),
        projectId: identity.projectId,
        model: model.id,
        status: 'in_progress',
        params: JSON.stringify({ spec: accepted.spec, media: accepted.media, negativePrompt: body.negative_prompt ?? null, pricePerSecond }),
        width: accepted.spec.width,
        height: accepted.spec.height,
        seconds: accepted.seconds,
        apiVersion,
        warnings: JSON.stringify(accepted.warnings),
        createdAt: instant(clock),
      },
    });
    await enter(tx, ctx, videoMachine, { id: v.id, projectId: v.projectId, state: v.status });
    return v;
  });
  const headers: Record<string, string> = accepted.warnings.length ? { Warning: `299 - "${accepted.warnings.join(' ')}"` } : {};
  return reply.json(videoWire(video, ctx.origin), { headers });
}

const find = (ctx: Context<'retrieveVideo'> | Context<'getVideoContent'>) =>
  owned(ctx.db.prisma.video, ctx.identity.projectId, { id: ctx.params.id }, { what: 'video', id: ctx.params.id, param: 'id' });

async function content(ctx: Context<'getVideoContent'>) {
  const v = await find(ctx);
  if (v.status !== 'completed' || !v.file)
    throw conflict(`Video '${v.id}' is ${v.status}: it has no content${v.status === 'in_progress' ? ' yet' : ''}.`, 'video_not_ready', 'id');
  return reply.file(join(ctx.config.dataDir, v.file), v.file.endsWith('.webm') ? 'video/webm' : 'video/mp4');
}

export async function createVideo(ctx: Context<'createVideo'>) {
  return create(ctx, 'v2');
}

export async function createVideoV1(ctx: Context<'createVideoV1'>) {
  return create(ctx, 'v1');
}

export async function retrieveVideo(ctx: Context<'retrieveVideo'>) {
  return videoWire(await find(ctx), ctx.origin);
}

export async function retrieveVideoV1(ctx: Context<'retrieveVideoV1'>) {
  return retrieveVideo(ctx as unknown as Context<'retrieveVideo'>);
}

export async function getVideoContent(ctx: Context<'getVideoContent'>) {
  return content(ctx);
}

export async function getVideoContentV1(ctx: Context<'getVideoContentV1'>) {
  return content(ctx as unknown as Context<'getVideoContent'>);
}
