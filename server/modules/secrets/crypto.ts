// Secret values are write-only: encrypted here (AES-256-GCM, bound to the secret's project and id) before they
// reach the database, and never returned, logged or put in an error message. `decryptSecretValue` is for the
// server's own use (deployments that inject them).
import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';
import type { Secret } from '../../../generated/prisma/sqlite/client/client.ts';
import type { Config } from '../../core/config.ts';

/** The key used when SECRETS_KEY is empty: public knowledge, for development only (the spec says so). */
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
