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

/** The signature of `METHOD path` until `expires` (Unix seconds). */
const sign = async (services: Pick<Services, 'config' | 'db'>, what: string, expires: number) =>
  createHmac('sha256', await signingKey(services))
    .update(`${what} ${expires}`)
    .digest('base64url');

/**
 * A URL of this server that works without a key for `ttlMs` from now (whole seconds, rounded down): `path` (which may
 * carry a query, signed with it) with `expires` and `signature`, which authorise exactly `method` on it. Other
 * modules hand out downloads with it; their check is checkSignature over the same `METHOD path`.
 */
export async function signedUrl(services: Pick<Services, 'clock' | 'config' | 'db'>, origin: string, method: string, path: string, ttlMs: number) {
  const expires = Math.floor((services.clock.now() + ttlMs) / 1000);
  const query = new URLSearchParams({ expires: String(expires), signature: await sign(services, `${method} ${path}`, expires) });
  return { url: `${origin}${path}${path.includes('?') ? '&' : '?'}${query}`, expiresAt: expires * 1000 };
}

/**
 * Checks a signed URL's `signature` (403 `invalid_signature`) and `expires` (403 `signature_expired`) for `METHOD
 * path`; `again` tells the caller how to get a new URL.
 */
export async function checkSignature(services: Services, what: string, query: Record<string, unknown>, again: string): Promise<void> {
  const expires = Number(query.expires);
  const given = query.signature;
  const want = Buffer.from(await sign(services, what, expires));
  if (typeof given !== 'string' || given.length === 0)
    throw forbidden(`The URL has no signature: use the URL ${again} answered, as given.`, 'invalid_signature', 'signature');
  if (!(given.length === want.length && timingSafeEqual(Buffer.from(given), want)))
    throw forbidden(`The URL's signature is not valid for it and its expiry: use the URL ${again} answered, as given.`, 'invalid_signature', 'signature');
  if (services.clock.now() >= expires * 1000)
    throw forbidden(`The URL expired at ${new Date(expires * 1000).toISOString()}: ask ${again} for a new one.`, 'signature_expired', 'expires');
}

/** The upload URL of file `id`, on `origin`, valid for the file's UPLOADING duration from now. */
export async function uploadUrl(services: Pick<Services, 'clock' | 'config' | 'db'>, origin: string, id: string): Promise<string> {
  return (await signedUrl(services, origin, 'PUT', `/v1/files/${encodeURIComponent(id)}/content`, fileMachine.delayMs(AWAITING_BYTES, services.config)!)).url;
}

/**
 * Checks a PUT to an upload URL before any of its bytes are read: the signature (403 `invalid_signature`), its
 * expiry (403 `signature_expired`), then the file (404 when gone, 409 when its bytes have arrived). Answers the
 * identity the upload acts as: the file's project (no key: the signature authorises).
 */
export async function verifyUpload(services: Services, request: { params: Record<string, string>; query: Record<string, unknown> }): Promise<Identity> {
  const { id } = request.params;
  await checkSignature(services, `PUT /v1/files/${encodeURIComponent(id)}/content`, request.query, 'POST /v1/files');
  const f = await services.db.prisma.file.findUnique({ where: { id } });
  if (!f) throw notFound('file', id);
  if (f.status !== AWAITING_BYTES) throw alreadyUploaded(id);
  return projectIdentity(services, f.projectId);
}

/** Whom a signed request acts as: the project the signed thing belongs to (no key: the signature authorises). */
export async function projectIdentity(services: Pick<Services, 'db'>, projectId: string): Promise<Identity> {
  const project = await services.db.prisma.project.findUniqueOrThrow({ where: { id: projectId }, include: { organization: true } });
  return {
    apiKeyId: '',
    projectId: project.id,
    projectName: project.name,
    projectSlug: project.slug,
    organizationId: project.organizationId,
    organizationName: project.organization.name,
  };
}
