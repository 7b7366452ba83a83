// Fixtures (the Control tag's applyFixtures, and FIXTURES_FILE at start): organizations, projects and API keys with
// given secrets, and the sections each module fills (files with content, queue jobs, videos, fine-tunes, endpoints,
// evaluations: each module's `fixtureSections`, through its own creation code), into new or existing projects, from
// one document, in one transaction; after the commit, the runner's own steps for the states they reach.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { Ajv2020 } from 'ajv/dist/2020.js';
import type { components } from '../../../generated/api.d.ts';
import { instant } from '../../core/clock.ts';
import { ApiError, apiError, idTaken, StartError, taken, within } from '../../core/errors.ts';
import { hashKey } from '../../core/identity.ts';
import { newId } from '../../core/ids.ts';
import { specPath } from '../../core/paths.ts';
import { startLock, type Tx } from '../../db/index.ts';
import type { Runner } from '../../runner/runner.ts';
import type { Context, FixtureList, FixtureSectionName, FixtureSections, Services } from '../types.ts';
import type { ControlPlane } from './plane.ts';

type Fixtures = components['schemas']['Fixtures'];
type Applied = components['schemas']['FixturesApplied'];
type FixtureContents = Omit<components['schemas']['FixtureProjectContents'], 'project'>;
// The runner, when there is one (not yet at start), takes fixtures' fine-tunes to the states training reaches.
type FixtureServices = Pick<Services, 'db' | 'clock' | 'config'> & Partial<Pick<Services, 'runner'>>;

export async function applyFixtures(ctx: Context<'applyFixtures'>, plane: ControlPlane) {
  return apply(ctx, plane.sections, ctx.body as Fixtures);
}

// A project slug derived from its name, as the CLI derives it (accounts.ts slugify, which a module may not import).
const slugOf = (name: string) =>
  name
    .toLowerCase()
    .normalize('NFKD')
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 63)
    .replace(/-+$/, '') || 'project';

/** Applies `doc` in one transaction; `once`, given, runs first in it and may answer false to apply nothing. */
async function apply(services: FixtureServices, sections: FixtureSections, doc: Fixtures): Promise<Applied>;
async function apply(services: FixtureServices, sections: FixtureSections, doc: Fixtures, once: (tx: Tx) => Promise<boolean>): Promise<Applied | null>;
async function apply(services: FixtureServices, sections: FixtureSections, doc: Fixtures, once?: (tx: Tx) => Promise<boolean>): Promise<Applied | null> {
  const { db, clock } = services;
  const ordered = (Object.entries(sections) as [FixtureSectionName, NonNullable<FixtureSections[FixtureSectionName]>][]).sort(
    ([, a], [, b]) => a.order - b.order,
  );
  // Bytes are written to their places first (a file's row may only point at bytes that are there), and removed
  // again if the transaction does not commit.
  const written: string[] = [];
  // What the runner does once the document is committed: fine-tunes trained, videos rendered, in the document's order.
  const after: ((runner: Runner) => Promise<unknown>)[] = [];
  let applied: Applied | null;
  try {
    applied = await db.write(async (tx) => {
      if (once && !(await once(tx))) return null;
      const applied: Applied = {
        object: 'fixtures',
        organizations: [],
        projects: [],
        api_keys: [],
        files: [],
        queue_jobs: [],
        videos: [],
        fine_tunes: [],
        v1_endpoints: [],
        evaluations: [],
        v2_endpoints: [],
        deployments: [],
      };
      const now = instant(clock);
      // A project's contents, made or existing: keys, queue jobs, videos, files, then fine-tunes (which may train on
      // those files), v1 and v2 endpoints, then evaluations (which may read those files and judge with those endpoints).
      const fill = async ({ id: projectId, slug }: { id: string; slug: string }, project: FixtureContents, pat: string) => {
        for (const [k, key] of (project.api_keys ?? []).entries()) {
          const kat = `${pat}.api_keys.${k}`;
          const keyId = key.id ?? newId('key', clock.now());
          if (key.id && (await tx.apiKey.findUnique({ where: { id: key.id } }))) throw idTaken('API key', key.id, `${kat}.id`);
          const hash = hashKey(key.secret);
          if (await tx.apiKey.findUnique({ where: { hash } }))
            throw taken(`An API key with this secret exists already (${kat}.secret).`, 'secret_taken', `${kat}.secret`);
          await tx.apiKey.create({ data: { id: keyId, projectId, name: key.name, hash, prefix: key.secret.slice(0, 10), createdAt: now } });
          applied.api_keys.push(keyId);
        }
        // Then each module's section, by its module's own creation code, in the sections' order.
        for (const [name, section] of ordered) {
          for (const [i, item] of ((project[name] ?? []) as never[]).entries()) {
            const made = await within(`${pat}.${name}.${i}`, () => section.fill({ tx, services, project: { id: projectId, slug }, written }, item));
            for (const [list, ids] of Object.entries(made.ids)) applied[list as FixtureList].push(...ids);
            if (made.after) after.push(made.after);
          }
        }
      };
      for (const [o, org] of (doc.organizations ?? []).entries()) {
        const at = `organizations.${o}`;
        const orgId = org.id ?? newId('org', clock.now());
        if (org.id && (await tx.organization.findUnique({ where: { id: org.id } }))) throw idTaken('organization', org.id, `${at}.id`);
        await tx.organization.create({ data: { id: orgId, name: org.name, createdAt: now } });
        applied.organizations.push(orgId);
        for (const [p, project] of (org.projects ?? []).entries()) {
          const pat = `${at}.projects.${p}`;
          const projectId = project.id ?? newId('proj', clock.now());
          if (project.id && (await tx.project.findUnique({ where: { id: project.id } }))) throw idTaken('project', project.id, `${pat}.id`);
          const slug = await freeSlug(tx, project.slug, project.name, `${pat}.slug`);
          await tx.project.create({ data: { id: projectId, organizationId: orgId, name: project.name, slug, createdAt: now } });
          applied.projects.push(projectId);
          await fill({ id: projectId, slug }, project, pat);
        }
      }
      for (const [p, into] of (doc.projects ?? []).entries()) {
        const pat = `projects.${p}`;
        const ref = into.project;
        const found = await tx.project.findUnique({ where: ref.startsWith('proj_') ? { id: ref } : { slug: ref } });
        if (!found) throw apiError(404, 'not_found', `No project with id or slug '${ref}' was found (${pat}.project).`, `${pat}.project`);
        await fill(found, into, pat);
      }
      return applied;
    });
  } catch (e) {
    await Promise.all(written.map((p) => rm(p, { force: true })));
    throw e;
  }
  if (services.runner) for (const step of after) await step(services.runner);
  return applied;
}

async function freeSlug(tx: Tx, given: string | undefined, name: string, param: string): Promise<string> {
  if (given !== undefined) {
    if (await tx.project.findUnique({ where: { slug: given } })) throw taken(`The project slug '${given}' is taken (${param}).`, 'slug_taken', param);
    return given;
  }
  const base = slugOf(name);
  let slug = base;
  for (let n = 2; await tx.project.findUnique({ where: { slug } }); n++) slug = `${base.slice(0, 63 - String(n).length - 1)}-${n}`;
  return slug;
}

let validate: ((doc: unknown) => boolean) & { errors?: { instancePath: string; message?: string }[] | null };
/** The contract's check of a document (the API's validator checks a posted one the same way). */
function check(doc: unknown): string | null {
  if (!validate) {
    // Defaults filled in, as the API's validator fills them in a posted document (a fine-tune's request relies on them).
    const ajv = new Ajv2020({ strict: false, allErrors: false, validateSchema: false, useDefaults: true });
    const root = 'https://contract.invalid/openapi.json';
    ajv.addSchema({ ...JSON.parse(readFileSync(specPath, 'utf8')), $id: root });
    validate = ajv.compile({ $ref: `${root}#/components/schemas/Fixtures` });
  }
  if (validate(doc)) return null;
  const error = validate.errors![0]!;
  return `${error.instancePath.slice(1).replaceAll('/', '.') || 'the document'} ${error.message ?? 'is invalid'}`;
}

/**
 * FIXTURES_FILE at start: applied once per database (its content's hash recorded in SeedRun, as a module's seed
 * is), so a restart skips it and a platform reset (which empties SeedRun) applies it again. Refuses the start,
 * naming the variable and the field, when the document is invalid or cannot be applied.
 */
export async function applyFixturesFile(services: FixtureServices, sections: FixtureSections): Promise<void> {
  const file = services.config.control.fixtures;
  if (!file) return;
  const fail = (why: string) => new StartError(`FIXTURES_FILE (${file.path}) cannot be applied: ${why}; fix the file, or unset FIXTURES_FILE.`);
  const problem = check(file.document);
  if (problem) throw fail(problem);
  const module = `fixtures:${createHash('sha256').update(JSON.stringify(file.document)).digest('hex').slice(0, 32)}`;
  try {
    // Recorded in the transaction that applies it, under the start lock: of two starts at once, one applies it.
    await apply(services, sections, file.document as Fixtures, async (tx) => {
      await startLock(services.db, tx);
      if (await tx.seedRun.findUnique({ where: { module } })) return false;
      await tx.seedRun.create({ data: { module, seededAt: instant(services.clock) } });
      return true;
    });
  } catch (e) {
    if (e instanceof ApiError) throw fail(`${e.param ?? 'the document'}: ${e.message}`);
    throw e;
  }
}
