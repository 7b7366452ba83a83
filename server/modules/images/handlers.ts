// Module `images`: parse -> the model (a serverless image model) -> the limits -> the image inputs -> the engine ->
// the bytes stored when answered as URLs -> the wire.
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { badRequest, contentGone } from '../../core/errors.ts';
import { newId } from '../../core/ids.ts';
import { storedBytes } from '../../core/stored.ts';
import { insertRows } from '../../db/index.ts';
import { imageEngineFor } from '../../engines/image.ts';
import { reply } from '../../http/reply.ts';
import { owned } from '../../http/scope.ts';
import { capabilities, serverlessModel } from '../models/index.ts';
import type { Context } from '../types.ts';
import { acceptImage, inputImage } from './rules.ts';
import { imageWire, type Rendered } from './wire.ts';

const CONTENT_TYPES: Record<string, string> = { jpeg: 'image/jpeg', png: 'image/png', webp: 'image/webp' };

export async function createImage(ctx: Context<'createImage'>) {
  const { db, identity, body, config, clock } = ctx;
  const model = await serverlessModel(db.prisma, identity.projectId, body.model, 'image');
  const accepted = acceptImage(body);
  const references = body.reference_images ?? [];
  const takesImages = capabilities(model).includes('image-to-image');
  for (const [field, given] of [
    ['image_url', body.image_url !== undefined],
    ['reference_images', references.length > 0],
  ] as const)
    if (given && !takesImages)
      throw badRequest(
        `'${model.id}' does not take image input (${field}); the models whose capabilities include image-to-image do.`,
        field,
        'model_not_available',
      );
  const image = body.image_url === undefined ? undefined : await inputImage(body.image_url, 'image_url', config.urlFetch);
  const referenceFiles: Buffer[] = [];
  for (const [i, ref] of references.entries()) referenceFiles.push(await inputImage(ref, `reference_images.${i}`, config.urlFetch));

  const result = await imageEngineFor(ctx.engines, model.id).generate({
    model: model.id,
    ...accepted,
    image,
    references: referenceFiles,
    safetyCheckerDisabled: body.disable_safety_checker === true,
    body: body as Record<string, unknown>,
  });
  const now = clock.now();
  const rendered: Rendered = { id: newId('imagegen', now), model: model.id, seed: accepted.seed, engine: result.engine, warnings: result.warnings, images: [] };
  if (accepted.responseFormat === 'base64') {
    rendered.images = result.images.map((file) => ({ file }));
    return imageWire(rendered);
  }
  // URL answers: the files first, then their rows in one transaction; a failed write leaves neither.
  const rows = result.images.map((file, index) => {
    const id = newId('image', now);
    return {
      id,
      projectId: identity.projectId,
      generationId: rendered.id,
      index,
      model: model.id,
      format: accepted.format,
      width: accepted.width,
      height: accepted.height,
      seed: String(accepted.seed + index),
      file: join('images', identity.projectId, `${id}.${accepted.format}`),
      bytes: file.length,
      createdAt: BigInt(now),
      content: file,
    };
  });
  try {
    for (const row of rows) {
      mkdirSync(dirname(join(config.dataDir, row.file)), { recursive: true });
      writeFileSync(join(config.dataDir, row.file), row.content);
    }
    await db.write((tx) =>
      insertRows(
        tx,
        'GeneratedImage',
        rows.map(({ content: _, ...row }) => row),
      ),
    );
  } catch (err) {
    for (const row of rows) rmSync(join(config.dataDir, row.file), { force: true });
    throw err;
  }
  rendered.images = rows.map((row) => ({ url: `${ctx.origin}/v1/images/${row.id}/content` }));
  return imageWire(rendered);
}

export async function getImageContent(ctx: Context<'getImageContent'>) {
  const image = await owned(ctx.db.prisma.generatedImage, ctx.identity.projectId, { id: ctx.params.id }, { what: 'image', id: ctx.params.id, param: 'id' });
  return reply.file(await storedBytes(ctx.config.dataDir, image.file, () => contentGone('image', image.id)), CONTENT_TYPES[image.format]);
}
