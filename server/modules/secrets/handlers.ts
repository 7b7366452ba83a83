// Module `secrets`: deployment secrets addressed by id or name; values are write-only (crypto.ts).
import type { Secret } from '../../../generated/prisma/sqlite/client/client.ts';
import { instant } from '../../core/clock.ts';
import { ApiError, taken } from '../../core/errors.ts';
import { newId } from '../../core/ids.ts';
import { type Database, type Db, keyLock, type Tx } from '../../db/index.ts';
import { checkNameCharacters } from '../../http/input.ts';
import { owned, ownedOrNull } from '../../http/scope.ts';
import { uniquely } from '../../http/unique.ts';
import type { Context } from '../types.ts';
import { encryptSecretValue, secretsKey } from './crypto.ts';
import { refuseInUse } from './uses.ts';
import { secretColumns, secretWire } from './wire.ts';

/** A secret by id, else by name, in the project; absent and other-project are the same 404. */
async function findSecret(db: Db | Tx, projectId: string, ref: string): Promise<Secret> {
  return (await ownedOrNull(db.secret, projectId, { id: ref })) ?? owned(db.secret, projectId, { name: ref }, { what: 'secret', id: ref, param: 'id' });
}

// The message names the name, never the value.
const nameTaken = (name: string) => taken(`A secret named '${name}' already exists in this project.`, 'secret_name_taken', 'name');

async function refuseTakenName(tx: Tx, projectId: string, name: string, except?: string) {
  if (await tx.secret.findFirst({ where: { projectId, name, ...(except ? { id: { not: except } } : {}) } })) throw nameTaken(name);
}

/**
 * The most secrets one project holds (the spec's Secrets tag): the platform publishes no limit, and its list is not
 * paged, so the list a project reads (and the storage it takes) stays bounded. A value is bounded by the contract
 * (SecretValue's maxLength).
 */
export const SECRETS_PER_PROJECT = 1_000;

const limitReached = () =>
  new ApiError(
    409,
    'secret_limit_reached',
    `This project holds ${SECRETS_PER_PROJECT.toLocaleString('en-US')} secrets, the most a project may hold: delete one it no longer needs first.`,
    null,
    'invalid_request_error',
    { 'x-should-retry': 'false' },
  );

/** Refuses a new secret in a full project; counted under the project's lock, so two creates cannot both take the last place. */
async function refuseFull(db: Database, tx: Tx, projectId: string) {
  await keyLock(db, tx, `secrets:${projectId}`);
  if ((await tx.secret.count({ where: { projectId } })) >= SECRETS_PER_PROJECT) throw limitReached();
}

export async function listSecrets({ db, identity }: Context<'listSecrets'>) {
  // Only the columns the wire shape shows, in the order of the index on (projectId, createdAt, id).
  const secrets = await db.prisma.secret.findMany({
    where: { projectId: identity.projectId },
    select: secretColumns,
    orderBy: [{ createdAt: 'asc' }, { id: 'asc' }],
  });
  return { object: 'list' as const, data: secrets.map(secretWire) };
}

export async function createSecret({ db, clock, config, identity, body }: Context<'createSecret'>) {
  checkNameCharacters(body.name, 'name');
  const key = secretsKey(config);
  const secret = await uniquely(
    () =>
      db.write(async (tx) => {
        await refuseFull(db, tx, identity.projectId);
        await refuseTakenName(tx, identity.projectId, body.name);
        const now = instant(clock);
        const id = newId('sec', clock.now());
        return tx.secret.create({
          data: {
            id,
            projectId: identity.projectId,
            name: body.name,
            description: body.description ?? null,
            valueEncrypted: encryptSecretValue(key, identity.projectId, id, body.value),
            createdBy: identity.apiKeyId,
            lastUpdatedBy: identity.apiKeyId,
            createdAt: now,
            updatedAt: now,
          },
        });
      }),
    () => nameTaken(body.name),
  );
  return secretWire(secret);
}

export async function getSecret({ db, identity, params }: Context<'getSecret'>) {
  return secretWire(await findSecret(db.prisma, identity.projectId, params.id));
}

export async function updateSecret({ db, clock, config, identity, params, body }: Context<'updateSecret'>) {
  if (body.name !== undefined) checkNameCharacters(body.name, 'name');
  const key = secretsKey(config);
  const secret = await uniquely(
    () =>
      db.write(async (tx) => {
        const s = await findSecret(tx, identity.projectId, params.id);
        if (body.name !== undefined && body.name !== s.name) await refuseTakenName(tx, identity.projectId, body.name, s.id);
        return tx.secret.update({
          where: { id: s.id },
          data: {
            ...(body.name !== undefined ? { name: body.name } : {}),
            ...(body.description !== undefined ? { description: body.description } : {}),
            ...(body.value !== undefined ? { valueEncrypted: encryptSecretValue(key, s.projectId, s.id, body.value) } : {}),
            lastUpdatedBy: identity.apiKeyId,
            updatedAt: instant(clock),
          },
        });
      }),
    () => nameTaken(body.name!),
  );
  return secretWire(secret);
}

export async function deleteSecret({ db, identity, params }: Context<'deleteSecret'>) {
  await db.write(async (tx) => {
    const s = await findSecret(tx, identity.projectId, params.id);
    await refuseInUse(tx, s);
    await tx.secret.delete({ where: { id: s.id } });
  });
  return {};
}
