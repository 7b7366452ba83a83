// Upload URLs of signed uploads (POST /v1/files, then PUT /v1/files/{id}/content): the URL's signature is its only
// authorisation, since the official client sends no key with the PUT. HMAC-SHA256 over the file id and the
// expiry, keyed by a key derived from SECRETS_KEY, or, when SECRETS_KEY is unset, by the database's own random key
// (made by its first start: `ensureUploadKey`), never by anything the source code knows. Either survives restarts
// and is the same in every process sharing the database. The URL expires with the file's UPLOADING state (the same
// duration, rounded down to whole seconds), so a URL never outlives the record it uploads to.
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { type Clock, instant } from '../../core/clock.ts';
import { forbidden, notFound } from '../../core/errors.ts';
import type { Identity } from '../../core/identity.ts';
import type { Database, Tx } from '../../db/index.ts';
import { secretsKey } from '../secrets/index.ts';
import type { Services } from '../types.ts';
import { AWAITING_BYTES, fileMachine } from './machine.ts';
import { alreadyUploaded } from './store.ts';

/** The ServerKey row of the database's own upload-URL key. */
const KEY_NAME = 'upload-urls';

/** Makes the database's random upload-URL key when it has none; run by every start (bootstrap's transaction, under its lock). */
export async function ensureUploadKey(tx: Tx, clock: Clock): Promise<void> {
  if (await tx.serverKey.findUnique({ where: { name: KEY_NAME } })) return;
  await tx.serverKey.create({ data: { name: KEY_NAME, value: randomBytes(32).toString('base64'), createdAt: instant(clock) } });
}

/** The database's own key, read once per process (it never changes). */
const databaseKeys = new WeakMap<Database, Promise<Buffer>>();
function databaseKey(db: Database): Promise<Buffer> {
  let key = databaseKeys.get(db);
  if (!key) {
    key = db.prisma.serverKey.findUniqueOrThrow({ where: { name: KEY_NAME } }).then((row) => Buffer.from(row.value, 'base64'));
    // A failed read (the database away) is not remembered.
    key.catch(() => databaseKeys.delete(db));
    databaseKeys.set(db, key);
  }
  return key;
}

async function signingKey(services: Pick<Services, 'config' | 'db'>): Promise<Buffer> {
  if (!services.config.secretsKey.trim()) return databaseKey(services.db);
  return createHmac('sha256', secretsKey(services.config)).update('inference-platform file upload URLs').digest();
}

const sign = async (services: Pick<Services, 'config' | 'db'>, id: string, expires: number) =>
  createHmac('sha256', await signingKey(services))
    .update(`PUT /v1/files/${id}/content ${expires}`)
    .digest('base64url');

/** The signature of `text` with the key of upload URLs (other modules' signed URLs: container storage reads). */
export const signText = async (services: Pick<Services, 'config' | 'db'>, text: string) =>
  createHmac('sha256', await signingKey(services))
    .update(text)
    .digest('base64url');

/** The upload URL of file `id`, on `origin`, valid for the file's UPLOADING duration from now. */
export async function uploadUrl(services: Pick<Services, 'clock' | 'config' | 'db'>, origin: string, id: string): Promise<string> {
  const expires = Math.floor((services.clock.now() + fileMachine.delayMs(AWAITING_BYTES, services.config)!) / 1000);
  const query = new URLSearchParams({ expires: String(expires), signature: await sign(services, id, expires) });
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
  const want = Buffer.from(await sign(services, id, expires));
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
