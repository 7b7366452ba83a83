// Module `files`: upload (the multipart body streamed to disk by http/multipart.ts), list, get, delete, content.
import { apiError, badRequest, conflict } from '../../core/errors.ts';
import { reply } from '../../http/reply.ts';
import { owned } from '../../http/scope.ts';
import type { Context } from '../types.ts';
import { holderOf } from './in-use.ts';
import { checkPurpose, type FileType, type Purpose } from './rules.ts';
import { filePath, newFileId, placeFile, recordFile, removeBytes } from './store.ts';
import { fileWire } from './wire.ts';

export async function uploadFile(ctx: Context<'uploadFile'>) {
  const { body, identity } = ctx;
  const upload = ctx.uploads.file;
  if (!upload) throw badRequest("The upload needs a 'file' part.", 'file', 'required');
  const purpose = body.purpose as Purpose;
  const fileType = (body.file_type ?? 'jsonl') as FileType;
  const filename = body.file_name;
  if (filename.length < 1 || filename.length > 255) throw badRequest("'file_name' must be 1 to 255 characters.", 'file_name');
  checkPurpose(purpose, fileType);
  if (upload.bytes === 0) throw badRequest('The file is empty.', 'file', 'empty_file');
  const id = newFileId(ctx.clock.now());
  await placeFile(ctx, identity.projectId, id, upload.path);
  try {
    return fileWire(await ctx.db.write((tx) => recordFile(tx, ctx, id, { projectId: identity.projectId, filename, purpose, fileType }, upload.bytes)));
  } catch (e) {
    await removeBytes(ctx, { path: `files/${identity.projectId}/${id}` });
    throw e;
  }
}

export async function listFiles(ctx: Context<'listFiles'>) {
  const rows = await ctx.db.prisma.file.findMany({ where: { projectId: ctx.identity.projectId }, orderBy: { id: 'desc' } });
  return { object: 'list' as const, data: rows.map(fileWire) };
}

const find = (ctx: Context<'retrieveFile'> | Context<'deleteFile'> | Context<'getFileContent'>) =>
  owned(ctx.db.prisma.file, ctx.identity.projectId, { id: ctx.params.id }, { what: 'file', id: ctx.params.id, param: 'id' });

export async function retrieveFile(ctx: Context<'retrieveFile'>) {
  return fileWire(await find(ctx));
}

export async function deleteFile(ctx: Context<'deleteFile'>) {
  const f = await find(ctx);
  await ctx.db.write(async (tx) => {
    // Checked in the transaction that deletes: a job created meanwhile finds the file gone (and is refused, or fails).
    const holder = await holderOf(tx, f.projectId, f.id);
    if (holder) throw conflict(`File '${f.id}' is read by ${holder.what} '${holder.id}', which is ${holder.status}: it can be deleted once the job has ended.`, 'file_in_use', 'id');
    const { count } = await tx.file.deleteMany({ where: { id: f.id, projectId: f.projectId } });
    if (count === 0) throw apiError(404, 'not_found', `No file '${f.id}' was found.`, 'id');
  });
  await removeBytes(ctx, f);
  return { id: f.id, deleted: true };
}

export async function getFileContent(ctx: Context<'getFileContent'>) {
  const f = await find(ctx);
  return reply.file(filePath(ctx.config, f), f.fileType === 'parquet' ? 'application/octet-stream' : 'text/plain; charset=utf-8');
}
