// Tag Secrets (seed 2.14, 7.5): deployment secrets addressed by id or name. Values are write-only: encrypted here
// (AES-256-GCM, bound to the secret's project and id) before they reach the database, and never returned, logged or
// put in an error message. `decryptSecretValue` is for the server's own use (deployments that inject them).
import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';
import type { Secret } from '../../generated/prisma/sqlite/client/client.ts';
import type { Config } from '../config.ts';
import type { Database, Tx } from '../db/index.ts';
import { conflict } from '../errors.ts';
import type { ModuleHandlers } from '../handlers.ts';
import { newId } from '../ids.ts';
import { wire } from '../wire/index.ts';
import { owned, ownedOrNull } from '../scope.ts';

/** The key used when SECRETS_KEY is empty: public knowledge, for development only (documented in the spec). */
const DEVELOPMENT_KEY = createHash('sha256').update('inference-platform development secrets key (not secret)').digest();

export function secretsKey(config: Pick<Config, 'secretsKey'>): Buffer {
  const raw = config.secretsKey.trim();
  if (!raw) return DEVELOPMENT_KEY;
  const key = /^[0-9a-f]{64}$/i.test(raw) ? Buffer.from(raw, 'hex') : Buffer.from(raw, 'base64');
  if (key.length !== 32) throw new Error('SECRETS_KEY must be 32 bytes, as base64 or 64 hex digits.');
  return key;
}

const aad = (projectId: string, id: string) => Buffer.from(`${projectId}:${id}`);

export function encryptSecretValue(key: Buffer, projectId: string, id: string, value: string): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  cipher.setAAD(aad(projectId, id));
  const ciphertext = Buffer.concat([cipher.update(value, 'utf8'), cipher.final()]);
  return ['v1', iv.toString('base64'), cipher.getAuthTag().toString('base64'), ciphertext.toString('base64')].join(':');
}

export function decryptSecretValue(key: Buffer, secret: Pick<Secret, 'projectId' | 'id' | 'valueEncrypted'>): string {
  const [version, iv, tag, ciphertext] = secret.valueEncrypted.split(':');
  if (version !== 'v1') throw new Error(`secret ${secret.id}: unknown encryption format`);
  const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64'));
  decipher.setAAD(aad(secret.projectId, secret.id));
  decipher.setAuthTag(Buffer.from(tag, 'base64'));
  return Buffer.concat([decipher.update(Buffer.from(ciphertext, 'base64')), decipher.final()]).toString('utf8');
}

type Reader = Database['prisma'] | Tx;

/** A secret by id, else by name, in the project; absent and other-project are the same 404. */
async function findSecret(db: Reader, projectId: string, ref: string): Promise<Secret> {
  return (await ownedOrNull(db.secret, projectId, { id: ref })) ?? owned(db.secret, projectId, { name: ref }, { what: 'secret', id: ref, param: 'id' });
}

async function refuseTakenName(tx: Tx, projectId: string, name: string, except?: string) {
  const taken = await tx.secret.findFirst({ where: { projectId, name, ...(except ? { id: { not: except } } : {}) } });
  // The message names the name, never the value.
  if (taken) throw conflict(`A secret named '${name}' already exists in this project.`, 'secret_name_taken', 'name');
}

export const secretsHandlers = {
  listSecrets: async ({ db, identity }) => {
    const secrets = await db.prisma.secret.findMany({ where: { projectId: identity.projectId }, orderBy: [{ createdAt: 'asc' }, { id: 'asc' }] });
    return { object: 'list' as const, data: secrets.map(wire.secret) };
  },

  createSecret: async ({ db, clock, config, identity, body }) => {
    const key = secretsKey(config);
    const secret = await db.write(async (tx) => {
      await refuseTakenName(tx, identity.projectId, body.name);
      const now = clock.now();
      const id = newId('sec', now);
      return tx.secret.create({
        data: {
          id,
          projectId: identity.projectId,
          name: body.name,
          description: body.description ?? null,
          valueEncrypted: encryptSecretValue(key, identity.projectId, id, body.value),
          createdBy: identity.apiKeyId,
          lastUpdatedBy: identity.apiKeyId,
          createdAt: BigInt(now),
          updatedAt: BigInt(now),
        },
      });
    });
    return wire.secret(secret);
  },

  getSecret: async ({ db, identity, params }) => wire.secret(await findSecret(db.prisma, identity.projectId, params.id)),

  updateSecret: async ({ db, clock, config, identity, params, body }) => {
    const key = secretsKey(config);
    const secret = await db.write(async (tx) => {
      const s = await findSecret(tx, identity.projectId, params.id);
      if (body.name !== undefined && body.name !== s.name) await refuseTakenName(tx, identity.projectId, body.name, s.id);
      return tx.secret.update({
        where: { id: s.id },
        data: {
          ...(body.name !== undefined ? { name: body.name } : {}),
          ...(body.description !== undefined ? { description: body.description } : {}),
          ...(body.value !== undefined ? { valueEncrypted: encryptSecretValue(key, s.projectId, s.id, body.value) } : {}),
          lastUpdatedBy: identity.apiKeyId,
          updatedAt: BigInt(clock.now()),
        },
      });
    });
    return wire.secret(secret);
  },

  deleteSecret: async ({ db, identity, params }) => {
    await db.write(async (tx) => {
      const s = await findSecret(tx, identity.projectId, params.id);
      await tx.secret.delete({ where: { id: s.id } });
    });
    return {};
  },
} satisfies ModuleHandlers;
