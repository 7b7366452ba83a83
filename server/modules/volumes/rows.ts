// Volume rows: lookups by id or name, creation with a first version, and the mounts that v2 deployments hold
// (attached and released inside the deployment's own transaction).
import type { Volume } from '../../../generated/prisma/sqlite/client/client.ts';
import { badRequest, taken } from '../../core/errors.ts';
import { newId } from '../../core/ids.ts';
import type { Db, Tx } from '../../db/index.ts';
import { owned, ownedOrNull } from '../../http/scope.ts';

/** A volume by id, else by name, in the project; absent and other-project are the same 404. */
export async function findVolume(db: Db | Tx, projectId: string, ref: string, param = 'id'): Promise<Volume> {
  return (await ownedOrNull(db.volume, projectId, { id: ref })) ?? owned(db.volume, projectId, { name: ref }, { what: 'volume', id: ref, param });
}

export const volumeNameTaken = (name: string) => taken(`A volume named '${name}' already exists in this project.`, 'volume_name_taken', 'name');

export async function refuseTakenName(tx: Tx, projectId: string, name: string, except?: string): Promise<void> {
  if (await tx.volume.findFirst({ where: { projectId, name, ...(except ? { id: { not: except } } : {}) } })) throw volumeNameTaken(name);
}

export interface VolumeContentSpec {
  type?: string;
  /** A path prefix in the project's files or an object-storage URL; absent: the empty prefix (every file). */
  source_prefix?: string;
}

export interface VolumeSpec {
  name: string;
  type: string;
  content: VolumeContentSpec & { files?: unknown[] };
}

/** The stored form of a content: the type defaults to `files`, the source prefix to the empty prefix. */
export const contentOf = (content: VolumeContentSpec) => ({ contentType: content.type ?? 'files', sourcePrefix: content.source_prefix ?? '' });

export async function createVolumeRow(tx: Tx, now: bigint, projectId: string, input: VolumeSpec): Promise<Volume> {
  const volume = await tx.volume.create({
    data: { id: newId('vol', Number(now)), projectId, name: input.name, type: input.type, currentVersion: 1, createdAt: now, updatedAt: now },
  });
  await tx.volumeVersion.create({
    data: {
      volumeId: volume.id,
      version: 1,
      ...contentOf(input.content),
      files: JSON.stringify(input.content.files ?? []),
      createdAt: now,
    },
  });
  return volume;
}

/**
 * Mounts volumes (ids or names of the project's volumes) on a deployment, each at its current version. An unknown
 * ref is a 404 naming `param`. Mounting a volume the deployment already mounts keeps its version.
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

/** A mount a container deployment asks for: a volume (id or name) and optionally its version, with the param it came from. */
export interface MountRequest {
  ref: string;
  version?: number;
  param: string;
}

/**
 * Makes `deploymentId` mount exactly these volumes (container deployments): each at the version asked, else its
 * current one. An unknown volume is a 400 `volume_not_found`, a version it never had a 400
 * `volume_version_not_found`, each naming its param; one volume asked at two versions is a 400 too. Answers each
 * mount's volume id and version, in order.
 */
export async function mountVolumes(tx: Tx, projectId: string, deploymentId: string, mounts: MountRequest[]): Promise<{ volumeId: string; version: number }[]> {
  const out: { volumeId: string; version: number }[] = [];
  for (const m of mounts) {
    const v = (await ownedOrNull(tx.volume, projectId, { id: m.ref })) ?? (await ownedOrNull(tx.volume, projectId, { name: m.ref }));
    if (!v)
      throw badRequest(`No volume '${m.ref}' in this project: create it first (POST /v1/deployments/storage/volumes).`, `${m.param}.name`, 'volume_not_found');
    const version = m.version ?? v.currentVersion;
    if (m.version !== undefined && !(await tx.volumeVersion.findUnique({ where: { volumeId_version: { volumeId: v.id, version } } })))
      throw badRequest(`Volume '${v.name}' has no version ${version}.`, `${m.param}.version`, 'volume_version_not_found');
    const earlier = out.find((o) => o.volumeId === v.id);
    if (earlier && earlier.version !== version)
      throw badRequest(`Volume '${v.name}' is mounted twice at different versions; mount one version.`, `${m.param}.version`, 'volume_version_conflict');
    out.push({ volumeId: v.id, version });
  }
  await tx.volumeMount.deleteMany({ where: { deploymentId } });
  for (const o of new Map(out.map((x) => [x.volumeId, x])).values()) await tx.volumeMount.create({ data: { ...o, deploymentId, projectId } });
  return out;
}

/** The current names of volumes, by id (a deployment shows its mounts by name). */
export async function volumeNames(db: Db | Tx, ids: string[]): Promise<Map<string, string>> {
  if (!ids.length) return new Map();
  const rows = await db.volume.findMany({ where: { id: { in: [...new Set(ids)] } }, select: { id: true, name: true } });
  return new Map(rows.map((r) => [r.id, r.name]));
}
