// Module `volumes`: read-only storage volumes with versioned content, mounted by v2 deployments.
import type { Volume, VolumeVersion } from '../../../generated/prisma/sqlite/client/client.ts';
import { instant } from '../../core/clock.ts';
import { conflict, notFound } from '../../core/errors.ts';
import type { Db, Tx } from '../../db/index.ts';
import { uniquely } from '../../http/unique.ts';
import type { Context } from '../types.ts';
import { createVolumeRow, findVolume, refuseTakenName, volumeNameTaken } from './rows.ts';
import { volumeWire } from './wire.ts';

async function volumeView(db: Db | Tx, v: Volume, version?: number) {
  const [versions, mounts] = await Promise.all([
    db.volumeVersion.findMany({ where: { volumeId: v.id }, orderBy: { version: 'asc' } }),
    db.volumeMount.findMany({ where: { volumeId: v.id } }),
  ]);
  const wanted = version ?? v.currentVersion;
  const shown = versions.find((x) => x.version === wanted);
  if (!shown) throw notFound('version of volume', `${v.id}@${wanted}`, 'version');
  return volumeWire(v, versions, mounts, shown);
}

const sameContent = (current: VolumeVersion, next: { type?: string; source_prefix: string }) =>
  current.contentType === (next.type ?? 'files') && current.sourcePrefix === next.source_prefix;

export async function listVolumes({ db, identity }: Context<'listVolumes'>) {
  const volumes = await db.prisma.volume.findMany({ where: { projectId: identity.projectId }, orderBy: [{ createdAt: 'asc' }, { id: 'asc' }] });
  return { object: 'list' as const, data: await Promise.all(volumes.map((v) => volumeView(db.prisma, v))) };
}

export async function createVolume({ db, clock, identity, body }: Context<'createVolume'>) {
  const volume = await uniquely(
    () =>
      db.write(async (tx) => {
        await refuseTakenName(tx, identity.projectId, body.name);
        return createVolumeRow(tx, instant(clock), identity.projectId, body);
      }),
    () => volumeNameTaken(body.name),
  );
  return volumeView(db.prisma, volume);
}

export async function getVolume({ db, identity, params, query }: Context<'getVolume'>) {
  return volumeView(db.prisma, await findVolume(db.prisma, identity.projectId, params.id), query.version);
}

export async function updateVolume({ db, clock, identity, params, body }: Context<'updateVolume'>) {
  const volume = await uniquely(
    () =>
      db.write(async (tx) => {
        const v = await findVolume(tx, identity.projectId, params.id);
        if (body.name !== undefined && body.name !== v.name) await refuseTakenName(tx, identity.projectId, body.name, v.id);
        const now = instant(clock);
        let currentVersion = v.currentVersion;
        if (body.content) {
          const current = await tx.volumeVersion.findUniqueOrThrow({ where: { volumeId_version: { volumeId: v.id, version: v.currentVersion } } });
          // Only a content change makes a version; deployments keep the version they mounted.
          if (!sameContent(current, body.content)) {
            currentVersion += 1;
            await tx.volumeVersion.create({
              data: { volumeId: v.id, version: currentVersion, contentType: body.content.type ?? 'files', sourcePrefix: body.content.source_prefix, createdAt: now },
            });
          }
        }
        return tx.volume.update({ where: { id: v.id }, data: { name: body.name ?? v.name, type: body.type ?? v.type, currentVersion, updatedAt: now } });
      }),
    () => volumeNameTaken(body.name!),
  );
  return volumeView(db.prisma, volume);
}

export async function deleteVolume({ db, identity, params }: Context<'deleteVolume'>) {
  await db.write(async (tx) => {
    const v = await findVolume(tx, identity.projectId, params.id);
    const mounts = await tx.volumeMount.findMany({ where: { volumeId: v.id } });
    if (mounts.length) {
      const by = [...new Set(mounts.map((m) => m.deploymentId))].sort().join(', ');
      throw conflict(`Volume '${v.name}' is mounted by ${by}; detach it before deleting.`, 'volume_in_use', 'id');
    }
    await tx.volumeVersion.deleteMany({ where: { volumeId: v.id } });
    await tx.volume.delete({ where: { id: v.id } });
  });
  return {};
}
