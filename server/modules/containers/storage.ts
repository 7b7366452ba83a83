// Reads of the project's storage (the DeploymentsStorage tag): a file of the project by its name, handed out as a
// signed URL of this server (never a hosted one, Files' signedUrl over the path, the file's id and the expiry), which
// serves the bytes without an API key until it expires.
import { duration } from '../../core/config.ts';
import { contentGone, notFound } from '../../core/errors.ts';
import type { Identity } from '../../core/identity.ts';
import { storedBytes } from '../../core/stored.ts';
import { reply } from '../../http/reply.ts';
import { checkSignature, findFileIn, findFileNamed, projectIdentity, signedUrl } from '../files/index.ts';
import type { Context, Services, SignedCheck } from '../types.ts';

/** How long a storage URL works: `DURATION_STORAGE_URL_MS`, default an hour. */
const urlLifetimeMs = (services: Pick<Services, 'config'>) => duration(services.config, 'storage_url', 3_600_000);

/** What a storage URL authorises: reading file `fileId` under `filename`. */
const readOf = (filename: string, fileId: string) =>
  `/v1/deployments/storage/${encodeURIComponent(filename)}/content?${new URLSearchParams({ file_id: fileId })}`;

/** The signed URL of the project's newest file named `filename` (404 naming `filename` when there is none). */
async function storageUrl(ctx: Context<'getDeploymentStorageFile'> | Context<'getDeploymentStorageFileUrl'>): Promise<string> {
  const { filename } = ctx.params;
  const f = await findFileNamed(ctx.db.prisma, ctx.identity.projectId, filename);
  if (!f) throw notFound("file in this project's storage", filename, 'filename');
  return (await signedUrl(ctx, ctx.origin, 'GET', readOf(filename, f.id), urlLifetimeMs(ctx))).url;
}

export async function getDeploymentStorageFile(ctx: Context<'getDeploymentStorageFile'>) {
  const url = await storageUrl(ctx);
  return reply.text(JSON.stringify(url), 'application/json', { status: 307, headers: { Location: url } });
}

export async function getDeploymentStorageFileUrl(ctx: Context<'getDeploymentStorageFileUrl'>) {
  return { url: await storageUrl(ctx) };
}

/** The signed read: the signature (403 `invalid_signature`), its expiry (403 `signature_expired`), then the file (404). */
export const verifyStorageRead: SignedCheck = async (services, { params, query }): Promise<Identity> => {
  const fileId = typeof query.file_id === 'string' ? query.file_id : '';
  await checkSignature(services, `GET ${readOf(params.filename!, fileId)}`, query, `GET /v1/deployments/storage/${params.filename}`);
  const f = await services.db.prisma.file.findUnique({ where: { id: fileId } });
  if (!f) throw notFound('file', fileId, 'file_id');
  return projectIdentity(services, f.projectId);
};

export async function readDeploymentStorageFile(ctx: Context<'readDeploymentStorageFile'>) {
  // The signature named this file (verifyStorageRead); it is read in the project the signature acts as.
  const fileId = ctx.query.file_id ?? '';
  const f = await findFileIn(ctx.db.prisma, ctx.identity.projectId, fileId);
  if (!f) throw notFound('file', fileId, 'file_id');
  return reply.file(await storedBytes(ctx.config.dataDir, f.path, () => contentGone('file', f.id, 'file_id')), 'application/octet-stream');
}
