// Module `compute`: a cluster's add-ons, known by their name (the platform's AddOnInfo has no other id). No software
// is installed here: an add-on is recorded, configured and listed.
import { instant } from '../../../core/clock.ts';
import { badRequest, invalidTransition, taken } from '../../../core/errors.ts';
import { newId } from '../../../core/ids.ts';
import { keyLock, type Tx } from '../../../db/index.ts';
import type { Timing } from '../../../runner/progress.ts';
import type { Context, Wire } from '../../types.ts';
import { findAddOn, findCluster } from '../rows.ts';
import { addOnWire } from '../wire.ts';

const TYPES = ['dashboard', 'ingress', 'torchpass', 'headlamp', 'slurm_web'];

/** `config` may set only the add-on type's own entry. */
export function checkConfig(type: string, config: Wire<'AddOnConfig'> | undefined, param: string): void {
  const other = Object.keys(config ?? {}).find((k) => k !== type);
  if (other) throw badRequest(`An add-on of type ${type} takes only the '${type}' entry of config, not '${other}'.`, param);
}

/** Checks one add-on request for a cluster of `clusterType` whose add-ons are named `names` (fields under `prefix`). */
export function checkAddOn(body: Wire<'AddOnCreate'>, clusterType: string, names: Set<string>, prefix = ''): void {
  if (!body.name.trim()) throw badRequest('name must not be empty.', `${prefix}name`);
  if (!TYPES.includes(body.add_on_type))
    throw badRequest(`Unknown add_on_type '${body.add_on_type}'; the types are ${TYPES.join(', ')}.`, `${prefix}add_on_type`);
  if (body.add_on_type === 'slurm_web' && clusterType !== 'SLURM') throw badRequest('slurm_web is an add-on of SLURM clusters only.', `${prefix}add_on_type`);
  checkConfig(body.add_on_type, body.config, `${prefix}config`);
  if (names.has(body.name)) throw taken(`The cluster already has an add-on named '${body.name}'.`, 'add_on_exists', `${prefix}name`);
  names.add(body.name);
}

export async function insertAddOn(tx: Tx, timing: Timing, cluster: { id: string; projectId: string }, body: Wire<'AddOnCreate'>) {
  return tx.clusterAddOn.create({
    data: {
      id: newId('addon', timing.clock.now()),
      projectId: cluster.projectId,
      clusterId: cluster.id,
      name: body.name,
      addOnType: body.add_on_type,
      // Absent, the add-on is enabled.
      config: JSON.stringify(body.config ?? { [body.add_on_type]: { enabled: true } }),
      createdAt: instant(timing.clock),
    },
  });
}

/** A cluster being torn down takes no add-on changes. */
function open<C extends { state: string }>(cluster: C, event: string): C {
  if (cluster.state === 'Deleting') throw invalidTransition('cluster', cluster.state, event);
  return cluster;
}

const order = [{ createdAt: 'asc' as const }, { id: 'asc' as const }];

export async function listClusterAddOns({ db, identity, params }: Context<'listClusterAddOns'>) {
  const cluster = await findCluster(db.prisma, identity.projectId, params.cluster_id);
  return { add_ons: (await db.prisma.clusterAddOn.findMany({ where: { clusterId: cluster.id }, orderBy: order })).map(addOnWire) };
}

export async function createClusterAddOn(ctx: Context<'createClusterAddOn'>) {
  const { db, identity, params, body } = ctx;
  return addOnWire(
    await db.write(async (tx) => {
      const cluster = open(await findCluster(tx, identity.projectId, params.cluster_id), 'add an add-on');
      // Names are unique within the cluster: concurrent creates on it take turns.
      await keyLock(db, tx, `cluster-add-ons/${cluster.id}`);
      const names = new Set((await tx.clusterAddOn.findMany({ where: { clusterId: cluster.id }, select: { name: true } })).map((a) => a.name));
      checkAddOn(body, cluster.clusterType, names);
      return insertAddOn(tx, ctx, cluster, body);
    }),
  );
}

export async function getClusterAddOn({ db, identity, params }: Context<'getClusterAddOn'>) {
  return addOnWire(await findAddOn(db.prisma, identity.projectId, params.cluster_id, params.addon_id));
}

export async function updateClusterAddOn({ db, identity, params, body }: Context<'updateClusterAddOn'>) {
  return addOnWire(
    await db.write(async (tx) => {
      const a = await findAddOn(tx, identity.projectId, params.cluster_id, params.addon_id);
      open(await findCluster(tx, identity.projectId, params.cluster_id), 'update an add-on');
      if (body.config === undefined) return a;
      checkConfig(a.addOnType, body.config, 'config');
      return tx.clusterAddOn.update({ where: { id: a.id }, data: { config: JSON.stringify(body.config) } });
    }),
  );
}

export async function deleteClusterAddOn({ db, identity, params }: Context<'deleteClusterAddOn'>) {
  await db.write(async (tx) => {
    const a = await findAddOn(tx, identity.projectId, params.cluster_id, params.addon_id);
    open(await findCluster(tx, identity.projectId, params.cluster_id), 'remove an add-on');
    await tx.clusterAddOn.delete({ where: { id: a.id } });
  });
  return {};
}
