// Secrets that container deployments take environment variables from (module containers): the references are
// written and released inside the deployment's own transaction, and a secret in use cannot be deleted.
import type { Secret } from '../../../generated/prisma/sqlite/client/client.ts';
import { badRequest, conflict } from '../../core/errors.ts';
import type { Db, Tx } from '../../db/index.ts';
import { ownedOrNull } from '../../http/scope.ts';

/** A secret by id, else by name, in the project, or null (another project's is absent too). */
export async function findSecretOrNull(db: Db | Tx, projectId: string, ref: string): Promise<Secret | null> {
  return (await ownedOrNull(db.secret, projectId, { id: ref })) ?? ownedOrNull(db.secret, projectId, { name: ref });
}

/**
 * Makes `deploymentId` use exactly these secrets (`refs`: ids or names, with the param each came from); an unknown
 * one is a 400 `secret_not_found` naming its param. Answers each ref's secret id, in order.
 */
export async function useSecrets(tx: Tx, projectId: string, deploymentId: string, refs: { ref: string; param: string }[]): Promise<string[]> {
  const ids: string[] = [];
  for (const { ref, param } of refs) {
    const s = await findSecretOrNull(tx, projectId, ref);
    if (!s) throw badRequest(`No secret '${ref}' in this project: create it first (POST /v1/deployments/secrets).`, param, 'secret_not_found');
    ids.push(s.id);
  }
  await tx.secretUse.deleteMany({ where: { deploymentId } });
  for (const secretId of new Set(ids)) await tx.secretUse.create({ data: { secretId, deploymentId, projectId } });
  return ids;
}

/** Releases every secret a deployment uses (when it is deleted). */
export async function releaseSecrets(tx: Tx, deploymentId: string): Promise<void> {
  await tx.secretUse.deleteMany({ where: { deploymentId } });
}

/** The current names of secrets, by id (a deployment shows its references by name, never a value). */
export async function secretNames(db: Db | Tx, ids: string[]): Promise<Map<string, string>> {
  if (!ids.length) return new Map();
  const rows = await db.secret.findMany({ where: { id: { in: [...new Set(ids)] } }, select: { id: true, name: true } });
  return new Map(rows.map((r) => [r.id, r.name]));
}

/** Refuses deleting a secret a deployment uses (409 `secret_in_use`). */
export async function refuseInUse(tx: Tx, secret: Secret): Promise<void> {
  const uses = await tx.secretUse.findMany({ where: { secretId: secret.id }, select: { deploymentId: true } });
  if (!uses.length) return;
  const by = uses
    .map((u) => u.deploymentId)
    .sort()
    .join(', ');
  throw conflict(`Secret '${secret.name}' is used by ${by}; change or delete those deployments first.`, 'secret_in_use', 'id');
}
