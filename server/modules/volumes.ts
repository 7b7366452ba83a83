// Tag Volumes (seed 2.13): read-only storage volumes with versioned content, mounted by deployments.
// `attachVolumes` / `detachVolumes` are how deployments (v2) mount and release them, inside their own transaction.
import type { Volume, VolumeVersion } from '../../generated/prisma/sqlite/client/client.ts';
import type { Database, Tx } from '../db/index.ts';
import { conflict, notFound } from '../errors.ts';
import type { ModuleHandlers } from '../handlers.ts';
import { newId } from '../ids.ts';
import { seedData, type SeedContext } from '../seed.ts';
import { wire } from '../wire/index.ts';
import { owned, ownedOrNull } from '../scope.ts';

type Reader = Database['prisma'] | Tx;

/** A volume by id, else by name, in the project; absent and other-project are the same 404. */
async function findVolume(db: Reader, projectId: string, ref: string, param = 'id'): Promise<Volume> {
  return (await ownedOrNull(db.volume, projectId, { id: ref })) ?? owned(db.volume, projectId, { name: ref }, { what: 'volume', id: ref, param });
}

async function volumeView(db: Reader, v: Volume, version?: number) {
  const [versions, mounts] = await Promise.all([
    db.volumeVersion.findMany({ where: { volumeId: v.id }, orderBy: { version: 'asc' } }),
    db.volumeMount.findMany({ where: { volumeId: v.id } }),
  ]);
  const wanted = version ?? v.currentVersion;
  const shown = versions.find((x) => x.version === wanted);
  if (!shown) throw notFound('version of volume', `${v.id}@${wanted}`, 'version');
  return wire.volume(v, versions, mounts, shown);
}

async function refuseTakenName(tx: Tx, projectId: string, name: string, except?: string) {
  const taken = await tx.volume.findFirst({ where: { projectId, name, ...(except ? { id: { not: except } } : {}) } });
  if (taken) throw conflict(`A volume named '${name}' already exists in this project.`, 'volume_name_taken', 'name');
}

async function createVolumeRow(
  tx: Tx,
  now: number,
  projectId: string,
  input: { name: string; type: string; content: { type?: string; source_prefix: string; files?: unknown[] } },
): Promise<Volume> {
  const id = newId('vol', now);
  const volume = await tx.volume.create({
    data: { id, projectId, name: input.name, type: input.type, currentVersion: 1, createdAt: BigInt(now), updatedAt: BigInt(now) },
  });
  await tx.volumeVersion.create({
    data: {
      volumeId: id,
      version: 1,
      contentType: input.content.type ?? 'files',
      sourcePrefix: input.content.source_prefix,
      files: JSON.stringify(input.content.files ?? []),
      createdAt: BigInt(now),
    },
  });
  return volume;
}

export async function seedVolumes({ tx, clock, projectId }: SeedContext): Promise<void> {
  const { volumes } = seedData<{ volumes: { name: string; type: string; content: { type: string; source_prefix: string; files: unknown[] } }[] }>('storage');
  for (const v of volumes) await createVolumeRow(tx, clock.now(), projectId, v);
}

/**
 * Mounts volumes (ids or names of the project's volumes) on a deployment, each at its current version. An unknown
 * ref is a 404 (param `volumes` unless the caller names its own field). Mounting a volume the deployment already mounts keeps its version.
 */
export async function attachVolumes(tx: Tx, projectId: string, deploymentId: string, refs: string[], param = 'volumes'): Promise<string[]> {
  const ids: string[] = [];
  for (const ref of refs) {
    const v = await findVolume(tx, projectId, ref, param);
    await tx.volumeMount.upsert({
      where: { volumeId_deploymentId: { volumeId: v.id, deploymentId } },
      create: { volumeId: v.id, deploymentId, projectId, version: v.currentVersion },
      update: {},
    });
    ids.push(v.id);
  }
  return ids;
}

/** Releases every volume a deployment mounts (when it is deleted). */
export async function detachVolumes(tx: Tx, deploymentId: string): Promise<void> {
  await tx.volumeMount.deleteMany({ where: { deploymentId } });
}

const sameContent = (current: VolumeVersion, next: { type?: string; source_prefix: string }) =>
  current.contentType === (next.type ?? 'files') && current.sourcePrefix === next.source_prefix;

export const volumesHandlers = {
  listVolumes: async ({ db, identity }) => {
    const volumes = await db.prisma.volume.findMany({ where: { projectId: identity.projectId }, orderBy: [{ createdAt: 'asc' }, { id: 'asc' }] });
    return { object: 'list' as const, data: await Promise.all(volumes.map((v) => volumeView(db.prisma, v))) };
  },

  createVolume: async ({ db, clock, identity, body }) => {
    const volume = await db.write(async (tx) => {
      await refuseTakenName(tx, identity.projectId, body.name);
      return createVolumeRow(tx, clock.now(), identity.projectId, { name: body.name, type: body.type, content: body.content });
    });
    return volumeView(db.prisma, volume);
  },

  getVolume: async ({ db, identity, params, query }) => volumeView(db.prisma, await findVolume(db.prisma, identity.projectId, params.id), query.version),

  updateVolume: async ({ db, clock, identity, params, body }) => {
    const volume = await db.write(async (tx) => {
      const v = await findVolume(tx, identity.projectId, params.id);
      if (body.name !== undefined && body.name !== v.name) await refuseTakenName(tx, identity.projectId, body.name, v.id);
      const now = BigInt(clock.now());
      let currentVersion = v.currentVersion;
      if (body.content) {
        const current = (await tx.volumeVersion.findUnique({ where: { volumeId_version: { volumeId: v.id, version: v.currentVersion } } }))!;
        // Only a content change makes a version; deployments keep the version they mounted.
        if (!sameContent(current, body.content)) {
          currentVersion += 1;
          await tx.volumeVersion.create({
            data: { volumeId: v.id, version: currentVersion, contentType: body.content.type ?? 'files', sourcePrefix: body.content.source_prefix, createdAt: now },
          });
        }
      }
      return tx.volume.update({
        where: { id: v.id },
        data: { name: body.name ?? v.name, type: body.type ?? v.type, currentVersion, updatedAt: now },
      });
    });
    return volumeView(db.prisma, volume);
  },

  deleteVolume: async ({ db, identity, params }) => {
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
  },
} satisfies ModuleHandlers;
