// Upload URLs of signed uploads (POST /v1/files, then PUT /v1/files/{id}/content): the URL's signature is its only
// authorisation, since the official client sends no key with the PUT. HMAC-SHA256 over the file id and the
// expiry, keyed by a key derived from SECRETS_KEY: it survives restarts and is the same in every process sharing the
// database, without a key of its own to configure. The URL expires with the file's UPLOADING state (the same
// duration, rounded down to whole seconds), so a URL never outlives the record it uploads to.
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { Config } from '../../core/config.ts';
import { forbidden, notFound } from '../../core/errors.ts';
import type { Identity } from '../../core/identity.ts';
import { secretsKey } from '../secrets/index.ts';
import type { Services } from '../types.ts';
import { AWAITING_BYTES, fileMachine } from './machine.ts';
import { alreadyUploaded } from './store.ts';

const signingKey = (config: Pick<Config, 'secretsKey'>) => createHmac('sha256', secretsKey(config)).update('inference-platform file upload URLs').digest();

const sign = (config: Pick<Config, 'secretsKey'>, id: string, expires: number) =>
  createHmac('sha256', signingKey(config)).update(`PUT /v1/files/${id}/content ${expires}`).digest('base64url');

/** The upload URL of file `id`, on `origin`, valid for the file's UPLOADING duration from now. */
export function uploadUrl(services: Pick<Services, 'clock' | 'config'>, origin: string, id: string): string {
  const expires = Math.floor((services.clock.now() + fileMachine.delayMs(AWAITING_BYTES, services.config)!) / 1000);
  const query = new URLSearchParams({ expires: String(expires), signature: sign(services.config, id, expires) });
  return `${origin}/v1/files/${encodeURIComponent(id)}/content?${query}`;
}

/**
 * Checks a PUT to an upload URL before any of its bytes are read: the signature (403 `invalid_signature`), its
 * expiry (403 `signature_expired`), then the file (404 when gone, 409 when its bytes have arrived). Answers the
 * identity the upload acts as: the file's project (no key: the signature authorises).
 */
export async function verifyUpload(services: Services, request: { params: Record<string, string>; query: Record<string, unknown> }): Promise<Identity> {
  const { id } = request.params;
  const expires = Number(request.query.expires);
  const given = request.query.signature;
  const want = Buffer.from(sign(services.config, id, expires));
  if (typeof given !== 'string' || given.length === 0)
    throw forbidden('The upload URL has no signature: PUT to the `Location` POST /v1/files answered, as given.', 'invalid_signature', 'signature');
  if (!(given.length === want.length && timingSafeEqual(Buffer.from(given), want))) {
    throw forbidden(
      "The upload URL's signature is not valid for this file and expiry: PUT to the `Location` POST /v1/files answered, as given.",
      'invalid_signature',
      'signature',
    );
  }
  if (services.clock.now() >= expires * 1000)
    throw forbidden(
      `The upload URL expired at ${new Date(expires * 1000).toISOString()}: start the upload again with POST /v1/files.`,
      'signature_expired',
      'expires',
    );
  const f = await services.db.prisma.file.findUnique({ where: { id } });
  if (!f) throw notFound('file', id);
  if (f.status !== AWAITING_BYTES) throw alreadyUploaded(id);
  const project = await services.db.prisma.project.findUniqueOrThrow({ where: { id: f.projectId }, include: { organization: true } });
  return {
    apiKeyId: '',
    projectId: project.id,
    projectName: project.name,
    projectSlug: project.slug,
    organizationId: project.organizationId,
    organizationName: project.organization.name,
  };
}
