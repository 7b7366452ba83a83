// What every start of the server makes sure of: a default organization and project (slug `default`; the CLI makes
// them too, if it opens the database first), and every module's seed, each applied once and recorded in SeedRun (a
// module added later, or a database the CLI made, is seeded on the next start). The server also makes sure a
// development key has been printed once: see `developmentKey`.
import { defaultProject, insertApiKey } from './accounts.ts';
import { type Clock, instant } from './core/clock.ts';
import { type Database, startLock } from './db/index.ts';
import { ensureUploadKey } from './modules/files/index.ts';
import { modules } from './modules/index.ts';

/** An unprinted development key younger than this is another start's, printing it right now: left alone. */
export const DEVELOPMENT_KEY_GRACE_MS = 10_000;

/** Ensures the default organization and project, and seeds every module not seeded yet; answers the default project. */
export async function bootstrap(db: Database, clock: Clock): Promise<{ id: string; organizationId: string }> {
  return db.write(async (tx) => {
    await startLock(db, tx);
    const project = await defaultProject(tx, clock);
    await ensureUploadKey(tx, clock);
    const seeded = new Set((await tx.seedRun.findMany()).map((r) => r.module));
    for (const m of modules) {
      if (!m.seed || seeded.has(m.name)) continue;
      await m.seed({ tx, clock, projectId: project.id, organizationId: project.organizationId });
      await tx.seedRun.create({ data: { module: m.name, seededAt: instant(clock) } });
    }
    return project;
  });
}

/**
 * The development key this start must print: a new key of the default project when none of its development keys
 * was ever printed, else null. Only a key's hash is stored, so a key whose printing did not happen (the start
 * failed in between) cannot be shown again: it is revoked and replaced. Call `markAnnounced` once printed.
 */
export async function developmentKey(db: Database, clock: Clock, projectId: string): Promise<{ id: string; secret: string } | null> {
  return db.write(async (tx) => {
    await startLock(db, tx);
    const keys = await tx.apiKey.findMany({ where: { projectId, development: true } });
    if (keys.some((k) => k.announcedAt !== null)) return null;
    const unprinted = keys.filter((k) => k.revokedAt === null);
    if (unprinted.some((k) => clock.now() - Number(k.createdAt) < DEVELOPMENT_KEY_GRACE_MS)) return null;
    if (unprinted.length) await tx.apiKey.updateMany({ where: { id: { in: unprinted.map((k) => k.id) } }, data: { revokedAt: instant(clock) } });
    const { key, secret } = await insertApiKey(tx, clock, projectId, 'development', true);
    return { id: key.id, secret };
  });
}

export async function markAnnounced(db: Database, clock: Clock, keyId: string): Promise<void> {
  await db.write((tx) => tx.apiKey.update({ where: { id: keyId }, data: { announcedAt: instant(clock) } }));
}
