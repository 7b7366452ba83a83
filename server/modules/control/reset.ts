// Reset (the Control tag): the whole platform back to what its first start made, or one project's resources gone,
// in one transaction, then their stored bytes. Every table is named here by what scopes it, so a new table fails
// the control tests until it is placed.
import { readdirSync, rmSync } from 'node:fs';
import { join, resolve, sep } from 'node:path';
import { Prisma } from '../../../generated/prisma/sqlite/client/client.ts';
import { notFound } from '../../core/errors.ts';
import { type Database, quoted as q, type Tx } from '../../db/index.ts';
import { type ControlPlane, LIMIT_PREFIX } from './plane.ts';

type Model = (typeof Prisma.ModelName)[keyof typeof Prisma.ModelName];
// Tables of the platform itself rather than of any project: kept by a project's reset; a platform reset keeps
// ServerKey (signing and control keys, the clock's offset), the control plane's snapshots, settings and processes, and
// the default organization, project and its development keys, and deletes the rest (the bootstrap seeds Hardware, the
// catalogue and SeedRun again; the control plane's rules and journal go).
const PLATFORM: Model[] = [
  'Organization',
  'Project',
  'ApiKey',
  'SeedRun',
  'ServerKey',
  'Hardware',
  'ControlSnapshot',
  'ControlRule',
  'ControlJournalEntry',
  'ControlSetting',
  'ControlProcess',
];
/** What a platform reset keeps of the platform's own tables (the accounts are kept in part, below). */
const KEPT: Model[] = ['Organization', 'Project', 'ApiKey', 'ServerKey', 'ControlSnapshot', 'ControlSetting', 'ControlProcess'];
// Tables scoped through a parent rather than a projectId column: the column naming the parent's id.
const CHILDREN: Partial<Record<Model, { parent: Model; column: string }>> = {
  FineTuneEvent: { parent: 'FineTune', column: 'jobId' },
  FineTuneCheckpoint: { parent: 'FineTune', column: 'jobId' },
  AutoscalerState: { parent: 'Deployment', column: 'deploymentId' },
  VolumeVersion: { parent: 'Volume', column: 'volumeId' },
};
const MODELS = Object.values(Prisma.ModelName) as Model[];

/** Tables neither of the platform nor with their own projectId column nor placed as children: none may be. */
export const unplaced = (columns: (model: Model) => string[]) =>
  MODELS.filter((m) => !PLATFORM.includes(m) && !CHILDREN[m] && !columns(m).includes('projectId'));

// One plain DELETE per table (a child's through a subquery on its parent), rather than the ORM's: no id lists to
// bind (a project of any size), and none of the per-model query planning that made a process's first reset slow
// (tables and columns named by the db layer's `quoted`).

/** Those of `models` holding any row, in their order, found by one query rather than one per table. */
export async function filled<M extends Model>(tx: Tx, models: M[]): Promise<M[]> {
  const probes = models.map((m) => Prisma.sql`SELECT ${Prisma.raw(`'${m}'`)} AS "model" WHERE EXISTS (SELECT 1 FROM ${q(m)})`);
  const rows = await tx.$queryRaw<{ model: M }[]>(Prisma.join(probes, ' UNION ALL ', '', ''));
  const found = new Set(rows.map((r) => r.model));
  return models.filter((m) => found.has(m));
}
const deleteOf = (tx: Tx, model: Model, projectId: string) => {
  const child = CHILDREN[model];
  return tx.$executeRaw(
    child
      ? Prisma.sql`DELETE FROM ${q(model)} WHERE ${q(child.column)} IN (SELECT "id" FROM ${q(child.parent)} WHERE "projectId" = ${projectId})`
      : Prisma.sql`DELETE FROM ${q(model)} WHERE "projectId" = ${projectId}`,
  );
};

/** Deletes one project's resources (children first); answers the rows deleted. */
export async function resetProject(db: Database, dataDir: string, projectId: string): Promise<number> {
  const kinds = storeKinds(db, dataDir);
  const deleted = await db.write(async (tx) => {
    if (!(await tx.project.findUnique({ where: { id: projectId } }))) throw notFound('project', projectId, 'project_id');
    let n = 0;
    for (const model of MODELS) if (CHILDREN[model]) n += await deleteOf(tx, model, projectId);
    for (const model of MODELS) if (!PLATFORM.includes(model) && !CHILDREN[model]) n += await deleteOf(tx, model, projectId);
    return n;
  });
  // Stored bytes live under <DATA_DIR>/<kind>/<projectId>/ (files, videos, ...).
  for (const kind of kinds) rmSync(join(dataDir, kind, projectId), { recursive: true, force: true });
  return deleted;
}

/**
 * Deletes everything but the platform's keys and its default organization, project and development keys, and the
 * control plane's rules, journal and rate limits in every process (the keys taken away are forgotten by every
 * process's key cache, and every process's rate-limit counts start again).
 */
export async function resetPlatform(plane: ControlPlane): Promise<number> {
  const { db, config } = plane;
  const kinds = storeKinds(db, config.dataDir);
  const deleted = await plane.change(
    async (tx) => {
      const project = await tx.project.findUnique({ where: { slug: 'default' } });
      let n = 0;
      // The tables holding rows, each emptied by one plain DELETE (no foreign keys but the accounts', below).
      const tables = MODELS.filter((m) => !KEPT.includes(m));
      for (const model of await filled(tx, tables)) n += await tx.$executeRaw(Prisma.sql`DELETE FROM ${q(model)}`);
      await tx.controlSetting.deleteMany({ where: { name: { startsWith: LIMIT_PREFIX } } });
      n += (await tx.apiKey.deleteMany({ where: project ? { NOT: { projectId: project.id, development: true } } : {} })).count;
      n += (await tx.project.deleteMany({ where: project ? { NOT: { id: project.id } } : {} })).count;
      n += (await tx.organization.deleteMany({ where: project ? { NOT: { id: project.organizationId } } : {} })).count;
      return n;
    },
    ['journal', 'limits', 'keys'],
  );
  // The counts every process shares in Redis (each process has forgotten its own).
  await plane.services.limits.clear(true);
  for (const kind of kinds) rmSync(join(config.dataDir, kind), { recursive: true, force: true });
  await plane.reseed();
  return deleted;
}

/**
 * The folders of DATA_DIR holding stored bytes by project: every folder but `tmp` (uploads in flight) and one
 * holding the SQLite database (DATA_DIR is beside it by default).
 */
export function storeKinds(db: Database, dataDir: string): string[] {
  const database = db.provider === 'sqlite' ? resolve(db.url.replace(/^file:/, '')) : '';
  try {
    return readdirSync(dataDir, { withFileTypes: true })
      .filter((d) => d.isDirectory() && d.name !== 'tmp' && !database.startsWith(`${join(dataDir, d.name)}${sep}`))
      .map((d) => d.name);
  } catch {
    return [];
  }
}
