// Module `volumes`: read-only storage volumes with versioned content, mounted by v2 deployments.
import type { Volume, VolumeVersion } from '../../../generated/prisma/sqlite/client/client.ts';
import { instant } from '../../core/clock.ts';
import { conflict, notFound } from '../../core/errors.ts';
import type { Db, Tx } from '../../db/index.ts';
import { checkNameCharacters } from '../../http/input.ts';
import { uniquely } from '../../http/unique.ts';
import type { Context } from '../types.ts';
import { contentOf, createVolumeRow, findVolume, refuseTakenName, type VolumeContentSpec, volumeNameTaken } from './rows.ts';
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

/** A content is replaced whole: the same type and source prefix (with their defaults) is the same content. */
function sameContent(current: VolumeVersion, next: VolumeContentSpec): boolean {
  const { contentType, sourcePrefix } = contentOf(next);
  return current.contentType === contentType && current.sourcePrefix === sourcePrefix;
}

export async function listVolumes({ db, identity }: Context<'listVolumes'>) {
  const volumes = await db.prisma.volume.findMany({ where: { projectId: identity.projectId }, orderBy: [{ createdAt: 'asc' }, { id: 'asc' }] });
  return { object: 'list' as const, data: await Promise.all(volumes.map((v) => volumeView(db.prisma, v))) };
}

export async function createVolume({ db, clock, identity, body }: Context<'createVolume'>) {
  checkNameCharacters(body.name, 'name');
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
  // An empty name leaves the name as it is, as an absent one (the platform sets no minimum length on a rename).
  const name = body.name === '' || body.name === undefined ? undefined : checkNameCharacters(body.name, 'name');
  const volume = await uniquely(
    () =>
      db.write(async (tx) => {
        const v = await findVolume(tx, identity.projectId, params.id);
        if (name !== undefined && name !== v.name) await refuseTakenName(tx, identity.projectId, name, v.id);
        const now = instant(clock);
        let currentVersion = v.currentVersion;
        if (body.content) {
          const current = await tx.volumeVersion.findUniqueOrThrow({ where: { volumeId_version: { volumeId: v.id, version: v.currentVersion } } });
          // Only a content change makes a version; deployments keep the version they mounted.
          if (!sameContent(current, body.content)) {
            currentVersion += 1;
            await tx.volumeVersion.create({ data: { volumeId: v.id, version: currentVersion, ...contentOf(body.content), createdAt: now } });
          }
        }
        return tx.volume.update({ where: { id: v.id }, data: { name: name ?? v.name, type: body.type ?? v.type, currentVersion, updatedAt: now } });
      }),
    () => volumeNameTaken(name!),
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
