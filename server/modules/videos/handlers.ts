// Module `videos`: video generation jobs, rendered by the runner (machine.ts) and served from disk. Each operation
// is served under /v2 (the platform's address) and /v1 (where the official clients send it once their baseURL is
// this server's /v1); the /v1 handlers are the same ones, named for their operation.
import { conflict, contentGone } from '../../core/errors.ts';
import { storedBytes } from '../../core/stored.ts';
import { reply } from '../../http/reply.ts';
import { owned } from '../../http/scope.ts';
import type { Context } from '../types.ts';
import { acceptVideo, insertVideo } from './create.ts';
import { videoWire } from './wire.ts';

async function create(ctx: Context<'createVideo'> | Context<'createVideoV1'>, apiVersion: 'v1' | 'v2') {
  const accepted = await acceptVideo(ctx.db.prisma, ctx.identity.projectId, ctx.body);
  const video = await ctx.db.write((tx) => insertVideo(tx, ctx, ctx.identity.projectId, accepted, apiVersion));
  const { warnings } = accepted.accepted;
  const headers: Record<string, string> = warnings.length ? { Warning: `299 - "${warnings.join(' ')}"` } : {};
  return reply.json(videoWire(video, ctx.origin), { headers });
}

const find = (ctx: Context<'retrieveVideo'> | Context<'getVideoContent'>) =>
  owned(ctx.db.prisma.video, ctx.identity.projectId, { id: ctx.params.id }, { what: 'video', id: ctx.params.id, param: 'id' });

async function content(ctx: Context<'getVideoContent'>) {
  const v = await find(ctx);
  if (v.status !== 'completed' || !v.file)
    throw conflict(`Video '${v.id}' is ${v.status}: it has no content${v.status === 'in_progress' ? ' yet' : ''}.`, 'video_not_ready', 'id');
  const path = await storedBytes(ctx.config.dataDir, v.file, () => contentGone('video', v.id));
  return reply.file(path, v.file.endsWith('.webm') ? 'video/webm' : 'video/mp4');
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
