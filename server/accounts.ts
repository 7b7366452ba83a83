// Organizations, projects and API keys. A key is random, shown once, stored only as its SHA-256 (a fast hash is
// right for 256 bits of randomness: there is nothing to brute-force), and revocable.
import { randomBytes } from 'node:crypto';
import { type Clock, instant } from './core/clock.ts';
import { badRequest, conflict, notFound } from './core/errors.ts';
import { hashKey } from './core/identity.ts';
import { newId } from './core/ids.ts';
import { type Database, startLock, type Tx } from './db/index.ts';
import { KEY_REVOKED_CHANNEL } from './db/keys.ts';

// DNS label: lowercase letters, digits and inner hyphens, at most 63 characters.
const SLUG = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;

/** The slug of the project a first start makes, whose key the server prints. */
export const DEFAULT_PROJECT_SLUG = 'default';

/** The default organization and project, made by the first start or the first CLI command, whichever comes first. */
export async function defaultProject(tx: Tx, clock: Clock): Promise<{ id: string; organizationId: string }> {
  const project = await tx.project.findUnique({ where: { slug: DEFAULT_PROJECT_SLUG } });
  if (project) return project;
  const org = await tx.organization.create({ data: { id: newId('org', clock.now()), name: 'Default Organization', createdAt: instant(clock) } });
  return tx.project.create({
    data: { id: newId('proj', clock.now()), organizationId: org.id, name: 'Default Project', slug: DEFAULT_PROJECT_SLUG, createdAt: instant(clock) },
  });
}

/** What the CLI needs of a start: the default project, under the start lock (a server may be starting beside it). */
export function ensureDefaultProject(db: Database, clock: Clock): Promise<{ id: string; organizationId: string }> {
  return db.write(async (tx) => {
    await startLock(db, tx);
    return defaultProject(tx, clock);
  });
}

export function slugify(name: string): string {
  const slug = name
    .toLowerCase()
    .normalize('NFKD')
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 63)
    .replace(/-+$/, '');
  return slug || 'project';
}

export async function createOrganization(db: Database, clock: Clock, name: string) {
  if (!name.trim()) throw badRequest('An organization needs a name.', 'name');
  return db.write((tx) => tx.organization.create({ data: { id: newId('org', clock.now()), name, createdAt: instant(clock) } }));
}

export async function createProject(db: Database, clock: Clock, input: { organizationId: string; name: string; slug?: string }) {
  if (!input.name.trim()) throw badRequest('A project needs a name.', 'name');
  if (input.slug !== undefined && !SLUG.test(input.slug)) {
    throw badRequest('A project slug is a DNS label: lowercase letters, digits and inner hyphens, at most 63 characters.', 'slug');
  }
  return db.write(async (tx) => {
    if (!(await tx.organization.findUnique({ where: { id: input.organizationId } }))) {
      throw notFound('organization', input.organizationId, 'organization_id');
    }
    const base = input.slug ?? slugify(input.name);
    let slug = base;
    // A derived slug takes the first free suffix; an explicit one must be free as given.
    for (let n = 2; await tx.project.findUnique({ where: { slug } }); n++) {
      if (input.slug !== undefined) throw conflict(`The project slug '${slug}' is taken.`, 'slug_taken', 'slug');
      slug = `${base.slice(0, 63 - String(n).length - 1)}-${n}`;
    }
    return tx.project.create({
      data: { id: newId('proj', clock.now()), organizationId: input.organizationId, name: input.name, slug, createdAt: instant(clock) },
    });
  });
}

export async function insertApiKey(tx: Tx, clock: Clock, projectId: string, name: string, development = false) {
  const secret = `tpk_${randomBytes(32).toString('base64url')}`;
  const key = await tx.apiKey.create({
    data: { id: newId('key', clock.now()), projectId, name, hash: hashKey(secret), prefix: secret.slice(0, 10), createdAt: instant(clock), development },
  });
  return { key, secret };
}

export async function createApiKey(db: Database, clock: Clock, input: { projectId: string; name: string }) {
  return db.write(async (tx) => {
    if (!(await tx.project.findUnique({ where: { id: input.projectId } }))) throw notFound('project', input.projectId, 'project_id');
    return insertApiKey(tx, clock, input.projectId, input.name);
  });
}

export async function listApiKeys(db: Database, projectId?: string) {
  return db.prisma.apiKey.findMany({ where: projectId ? { projectId } : {}, orderBy: { id: 'asc' } });
}

/** Revokes a key. On PostgreSQL every server process is told at commit, and drops it from its cache. */
export async function revokeApiKey(db: Database, clock: Clock, id: string) {
  return db.write(async (tx) => {
    const key = await tx.apiKey.findUnique({ where: { id } });
    if (!key) throw notFound('API key', id);
    const revoked = await tx.apiKey.update({ where: { id }, data: { revokedAt: key.revokedAt ?? instant(clock) } });
    if (db.provider === 'postgresql') await tx.$executeRawUnsafe(`SELECT pg_notify('${KEY_REVOKED_CHANNEL}', $1)`, key.hash);
    return revoked;
  });
}
