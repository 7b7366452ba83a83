// Reads of the project's storage (the DeploymentsStorage tag): a file of the project by its name, handed out as a
// signed URL of this server (never a hosted one), which serves the bytes without an API key until it expires. The
// signature is Files' (the upload URLs' key) over the file's id, its name and the expiry.
import { timingSafeEqual } from 'node:crypto';
import { duration } from '../../core/config.ts';
import { forbidden, notFound } from '../../core/errors.ts';
import type { Identity } from '../../core/identity.ts';
import { reply } from '../../http/reply.ts';
import { filePath, findFileIn, findFileNamed, signText } from '../files/index.ts';
import type { Context, Services, SignedCheck } from '../types.ts';

/** How long a storage URL works: `DURATION_STORAGE_URL_MS`, default an hour. */
const urlLifetimeMs = (services: Pick<Services, 'config'>) => duration(services.config, 'storage_url', 3_600_000);

const signed = (services: Pick<Services, 'config' | 'db'>, fileId: string, filename: string, expires: number) =>
  signText(services, `GET /v1/deployments/storage ${fileId} ${filename} ${expires}`);

/** The signed URL of the project's newest file named `filename` (404 naming `filename` when there is none). */
async function storageUrl(ctx: Context<'getDeploymentStorageFile'> | Context<'getDeploymentStorageFileUrl'>): Promise<string> {
  const { filename } = ctx.params;
  const f = await findFileNamed(ctx.db.prisma, ctx.identity.projectId, filename);
  if (!f) throw notFound("file in this project's storage", filename, 'filename');
  const expires = Math.floor((ctx.clock.now() + urlLifetimeMs(ctx)) / 1000);
  const query = new URLSearchParams({ file_id: f.id, expires: String(expires), signature: await signed(ctx, f.id, filename, expires) });
  return `${ctx.origin}/v1/deployments/storage/${encodeURIComponent(filename)}/content?${query}`;
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
  const expires = Number(query.expires);
  const given = typeof query.signature === 'string' ? Buffer.from(query.signature) : Buffer.alloc(0);
  const want = Buffer.from(await signed(services, fileId, params.filename!, expires));
  if (!fileId || given.length !== want.length || !timingSafeEqual(given, want))
    throw forbidden(
      "The URL's signature is not valid for this file, name and expiry: use the URL this server handed out, as given.",
      'invalid_signature',
      'signature',
    );
  if (services.clock.now() >= expires * 1000)
    throw forbidden(`The URL expired at ${new Date(expires * 1000).toISOString()}: ask for a new one.`, 'signature_expired', 'expires');
  const f = await services.db.prisma.file.findUnique({ where: { id: fileId } });
  if (!f) throw notFound('file', fileId, 'file_id');
  const project = await services.db.prisma.project.findUniqueOrThrow({ where: { id: f.projectId }, include: { organization: true } });
  return {
    apiKeyId: '',
    projectId: project.id,
    projectName: project.name,
    projectSlug: project.slug,
    organizationId: project.organization.id,
    organizationName: project.organization.name,
  };
};

export async function readDeploymentStorageFile(ctx: Context<'readDeploymentStorageFile'>) {
  // The signature named this file (verifyStorageRead); it is read in the project the signature acts as.
  const fileId = ctx.query.file_id ?? '';
  const f = await findFileIn(ctx.db.prisma, ctx.identity.projectId, fileId);
  if (!f) throw notFound('file', fileId, 'file_id');
  return reply.file(filePath(ctx.config, f), 'application/octet-stream');
}
