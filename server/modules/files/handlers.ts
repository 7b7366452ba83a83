// Module `files`: upload (the multipart body streamed to disk by http/multipart.ts), the signed upload of the
// official client (POST /v1/files, then the PUT of the bytes, streamed to disk by http/raw-body.ts and authorised
// by signature.ts), list, get, delete, content.
import { apiError, badRequest, conflict, contentGone, notFound } from '../../core/errors.ts';
import { storedBytes } from '../../core/stored.ts';
import { reply } from '../../http/reply.ts';
import { owned } from '../../http/scope.ts';
import type { Context } from '../types.ts';
import { holderOf } from './in-use.ts';
import { AWAITING_BYTES } from './machine.ts';
import { checkPurpose, type FileType, type Purpose } from './rules.ts';
import { uploadUrl } from './signature.ts';
import { type NewFile, newFileId, placeFile, receiveBytes, recordFile, recordUpload, removeBytes } from './store.ts';
import { fileColumns, fileWire } from './wire.ts';

/** The fields every upload takes, checked alike (the contract has checked their types). */
function newFile(projectId: string, purpose: Purpose, filename: string, fileType: FileType = 'jsonl'): NewFile {
  if (filename.length < 1 || filename.length > 255) throw badRequest("'file_name' must be 1 to 255 characters.", 'file_name');
  checkPurpose(purpose, fileType);
  return { projectId, purpose, filename, fileType };
}

export async function uploadFile(ctx: Context<'uploadFile'>) {
  const { body, identity } = ctx;
  const upload = ctx.uploads.file;
  if (!upload) throw badRequest("The upload needs a 'file' part.", 'file', 'required');
  const { purpose, filename, fileType } = newFile(identity.projectId, body.purpose as Purpose, body.file_name, body.file_type as FileType | undefined);
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

/** A signed upload's field, from the form body or the query (the official client sends both): both must agree. */
function field(ctx: Context<'createFileUpload'>, name: 'purpose' | 'file_name' | 'file_type'): string | undefined {
  const inBody = (ctx.body as Record<string, string | undefined> | undefined)?.[name];
  const inQuery = ctx.query?.[name];
  if (inBody !== undefined && inQuery !== undefined && inBody !== inQuery) {
    throw badRequest(`'${name}' is given in both the body and the query, with different values.`, name);
  }
  return inBody ?? inQuery;
}

export async function createFileUpload(ctx: Context<'createFileUpload'>) {
  const purpose = field(ctx, 'purpose');
  const filename = field(ctx, 'file_name');
  if (purpose === undefined) throw badRequest("'purpose' is required (a form field or a query parameter).", 'purpose', 'required');
  if (filename === undefined) throw badRequest("'file_name' is required (a form field or a query parameter).", 'file_name', 'required');
  const input = newFile(ctx.identity.projectId, purpose as Purpose, filename, field(ctx, 'file_type') as FileType | undefined);
  const id = newFileId(ctx.clock.now());
  const f = await ctx.db.write((tx) => recordUpload(tx, ctx, id, input));
  return reply.json(fileWire(f), { status: 302, headers: { Location: await uploadUrl(ctx, ctx.origin, id), 'x-together-file-id': id } });
}

export async function putFileContent(ctx: Context<'putFileContent'>) {
  // The signature has been checked (signature.ts: the identity is the file's project) and the body read to disk.
  const upload = ctx.uploads.file!;
  if (upload.bytes === 0) throw badRequest('The file is empty.', 'file', 'empty_file');
  const f = await ctx.db.prisma.file.findFirst({ where: { id: ctx.params.id, projectId: ctx.identity.projectId } });
  if (!f) throw notFound('file', ctx.params.id);
  return fileWire(await receiveBytes(ctx, f, upload.path, upload.bytes));
}

export async function listFiles(ctx: Context<'listFiles'>) {
  // Only the columns the wire shape shows, in the order of the index on (projectId, id).
  const rows = await ctx.db.prisma.file.findMany({
    where: { projectId: ctx.identity.projectId, status: { not: AWAITING_BYTES } },
    select: fileColumns,
    orderBy: { id: 'desc' },
  });
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
    if (holder)
      throw conflict(
        `File '${f.id}' is read by ${holder.what} '${holder.id}', which is ${holder.status}: it can be deleted once the job has ended.`,
        'file_in_use',
        'id',
      );
    const { count } = await tx.file.deleteMany({ where: { id: f.id, projectId: f.projectId } });
    if (count === 0) throw apiError(404, 'not_found', `No file '${f.id}' was found.`, 'id');
  });
  await removeBytes(ctx, f);
  return { id: f.id, deleted: true };
}

export async function getFileContent(ctx: Context<'getFileContent'>) {
  const f = await find(ctx);
  if (f.status === AWAITING_BYTES)
    throw conflict(`File '${f.id}' has no content yet: its bytes have not been uploaded to its upload URL.`, 'file_not_uploaded', 'id');
  const path = await storedBytes(ctx.config.dataDir, f.path, () => contentGone('file', f.id));
  return reply.file(path, f.fileType === 'parquet' ? 'application/octet-stream' : 'text/plain; charset=utf-8');
}
