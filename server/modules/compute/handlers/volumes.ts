// Module `compute`: the project's cluster shared volumes (`/v1/compute/clusters/storage/volumes`), moved by the
// `shared volume` machine (machine.ts). No bytes are stored: a volume is capacity a cluster mounts.
import { instant } from '../../../core/clock.ts';
import { badRequest } from '../../../core/errors.ts';
import { newId } from '../../../core/ids.ts';
import type { Tx } from '../../../db/index.ts';
import type { Timing } from '../../../runner/progress.ts';
import { transition } from '../../../runner/progress.ts';
import type { Context, Wire } from '../../types.ts';
import { MAX_VOLUME_TIB, region } from '../catalogue.ts';
import { start, volumes } from '../provisioning.ts';
import { findVolume } from '../rows.ts';
import { sharedVolumeWire } from '../wire.ts';

type VolumeRequest = Wire<'SharedVolumeCreate'>;

/** A key acts in its own project: `project_id` may only name it (or be empty). */
export function ownProject(given: string | undefined, projectId: string, param: string): void {
  if (given && given !== projectId) throw badRequest(`project_id must be the caller's project (${projectId}); a key acts in its own project only.`, param);
}

function checkSize(size: number, param: string): void {
  if (!Number.isInteger(size) || size < 1 || size > MAX_VOLUME_TIB)
    throw badRequest(`size_tib must be a whole number of TiB from 1 to ${MAX_VOLUME_TIB}.`, param);
}

/** Checks a volume request (fields named under `prefix`) without writing anything. */
export function checkVolume(body: VolumeRequest, projectId: string, prefix = ''): void {
  if (!body.volume_name.trim()) throw badRequest('volume_name must not be empty.', `${prefix}volume_name`);
  checkSize(body.size_tib, `${prefix}size_tib`);
  region(body.region, `${prefix}region`);
  ownProject(body.project_id, projectId, `${prefix}project_id`);
}

/** Creates a checked volume, `provisioning`, attached to `clusterId` when given (attached for real once provisioned). */
export async function insertVolume(tx: Tx, timing: Timing, projectId: string, body: VolumeRequest, clusterId: string | null = null) {
  const now = instant(timing.clock);
  const row = await tx.clusterSharedVolume.create({
    data: {
      id: newId('vol', timing.clock.now()),
      projectId,
      name: body.volume_name,
      sizeTib: body.size_tib,
      region: body.region,
      status: 'provisioning',
      lifecycleIndependent: body.is_lifecycle_independent ?? false,
      clusterId,
      createdAt: now,
      updatedAt: now,
    },
  });
  await start(tx, timing, row);
  return row;
}

export async function listSharedVolumes({ db, identity, query }: Context<'listSharedVolumes'>) {
  if (query.projectId && query.projectId !== identity.projectId) return { volumes: [] };
  const rows = await db.prisma.clusterSharedVolume.findMany({
    where: { projectId: identity.projectId, status: { not: 'deleted' } },
    orderBy: [{ createdAt: 'asc' }, { id: 'asc' }],
  });
  return { volumes: rows.map(sharedVolumeWire) };
}

export async function createSharedVolume(ctx: Context<'createSharedVolume'>) {
  const { db, identity, body } = ctx;
  checkVolume(body, identity.projectId);
  return sharedVolumeWire(await db.write((tx) => insertVolume(tx, ctx, identity.projectId, body)));
}

export async function getSharedVolume({ db, identity, params }: Context<'getSharedVolume'>) {
  return sharedVolumeWire(await findVolume(db.prisma, identity.projectId, params.volume_id));
}

export async function updateSharedVolume(ctx: Context<'updateSharedVolume'>) {
  const { db, identity, body } = ctx;
  return sharedVolumeWire(
    await db.write(async (tx) => {
      const v = await findVolume(tx, identity.projectId, body.volume_id);
      if (body.size_tib === undefined) return v;
      checkSize(body.size_tib, 'size_tib');
      if (body.size_tib < v.sizeTib) throw badRequest(`A volume only grows: size_tib must be at least its ${v.sizeTib} TiB.`, 'size_tib');
      return transition(tx, ctx, volumes, v, 'resize', { data: { sizeTib: body.size_tib } });
    }),
  );
}

export async function deleteSharedVolume(ctx: Context<'deleteSharedVolume'>) {
  const { db, identity, params } = ctx;
  await db.write(async (tx) => transition(tx, ctx, volumes, await findVolume(tx, identity.projectId, params.volume_id), 'delete'));
  return { success: true as const };
}
