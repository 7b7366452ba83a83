// Fixtures (the Control tag's applyFixtures, and FIXTURES_FILE at start): organizations, projects, API keys with
// given secrets, files with content, queue jobs, videos and fine-tunes, into new or existing projects, from one
// document, in one transaction, through each module's own creation code (its index's exports): the Files module's
// recordFile after the bytes are at their place, the queue's seedJob, the videos' seedVideo, fine-tuning's
// seedFineTune, dedicated's seedV2Endpoint, evaluation's seedEvaluation (its checks read in the transaction); after
// the commit, the runner's own steps for the states it reaches (trainFineTune, renderVideo, readyDeployment, runEvaluation).
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { Ajv2020 } from 'ajv/dist/2020.js';
import type { components } from '../../../generated/api.d.ts';
import { instant } from '../../core/clock.ts';
import { ApiError, apiError, StartError, taken } from '../../core/errors.ts';
import { hashKey } from '../../core/identity.ts';
import { newId } from '../../core/ids.ts';
import { specPath } from '../../core/paths.ts';
import { startLock, type Tx } from '../../db/index.ts';
import type { Runner } from '../../runner/runner.ts';
import { readyDeployment, seedV2Endpoint } from '../dedicated/index.ts';
import { seedV1Endpoint } from '../endpoints/index.ts';
import { runEvaluation, type SeededEvaluation, seedEvaluation } from '../evaluation/index.ts';
import { checkPurpose, type FileType, fileLocation, recordFile } from '../files/index.ts';
import { type SeededFineTune, seedFineTune, trainFineTune } from '../fine-tuning/index.ts';
import { seedJob } from '../queue/index.ts';
import type { Context, Services } from '../types.ts';
import { renderVideo, seedVideo } from '../videos/index.ts';

type Fixtures = components['schemas']['Fixtures'];
type Applied = components['schemas']['FixturesApplied'];
type FixtureContents = Omit<components['schemas']['FixtureProjectContents'], 'project'>;
// The runner, when there is one (not yet at start), takes fixtures' fine-tunes to the states training reaches.
type FixtureServices = Pick<Services, 'db' | 'clock' | 'config'> & Partial<Pick<Services, 'runner'>>;

export async function applyFixtures(ctx: Context<'applyFixtures'>) {
  return apply(ctx, ctx.body as Fixtures);
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
async function apply(services: FixtureServices, doc: Fixtures): Promise<Applied>;
async function apply(services: FixtureServices, doc: Fixtures, once: (tx: Tx) => Promise<boolean>): Promise<Applied | null>;
async function apply(services: FixtureServices, doc: Fixtures, once?: (tx: Tx) => Promise<boolean>): Promise<Applied | null> {
  const { db, clock, config } = services;
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
        for (const [j, job] of (project.queue_jobs ?? []).entries()) {
          const jat = `${pat}.queue_jobs.${j}`;
          if (job.request_id && (await tx.queueJob.findUnique({ where: { id: job.request_id } })))
            throw idTaken('queue job', job.request_id, `${jat}.request_id`);
          const seeded = await within(jat, () => seedJob(tx, services, projectId, { ...job, id: job.request_id }));
          applied.queue_jobs.push(seeded.id);
        }
        for (const [v, video] of (project.videos ?? []).entries()) {
          const vat = `${pat}.videos.${v}`;
          if (video.id && (await tx.video.findUnique({ where: { id: video.id } }))) throw idTaken('video', video.id, `${vat}.id`);
          const made = await within(`${vat}.request`, () => seedVideo(tx, services, projectId, video));
          applied.videos.push(made.id);
          if (video.status === 'completed') after.push((runner) => renderVideo({ db, runner }, made.id));
        }
        for (const [f, file] of (project.files ?? []).entries()) {
          const fat = `${pat}.files.${f}`;
          const fileId = file.id ?? newId('file', clock.now()).replace(/^file_/, 'file-');
          if (file.id && (await tx.file.findUnique({ where: { id: file.id } }))) throw idTaken('file', file.id, `${fat}.id`);
          const fileType = (file.file_type ?? 'jsonl') as FileType;
          await within(fat, async () => checkPurpose(file.purpose, fileType));
          const path = join(config.dataDir, fileLocation(projectId, fileId));
          await mkdir(dirname(path), { recursive: true });
          written.push(path);
          const bytes = Buffer.from(file.content);
          await writeFile(path, bytes);
          await recordFile(tx, services, fileId, { projectId, filename: file.filename, purpose: file.purpose, fileType }, bytes.length);
          applied.files.push(fileId);
        }
        for (const [n, fineTune] of (project.fine_tunes ?? []).entries()) {
          const nat = `${pat}.fine_tunes.${n}`;
          if (fineTune.id && (await tx.fineTune.findUnique({ where: { id: fineTune.id } }))) throw idTaken('fine-tune', fineTune.id, `${nat}.id`);
          const job = await within(`${nat}.request`, () => seedFineTune(tx, services, { id: projectId, slug }, fineTune as SeededFineTune));
          applied.fine_tunes.push(job.id);
          const status = fineTune.status;
          if (status && job.status !== status) after.push((runner) => trainFineTune({ db, runner }, job.id, status));
        }
        for (const [e, endpoint] of (project.v1_endpoints ?? []).entries()) {
          const eat = `${pat}.v1_endpoints.${e}`;
          if (endpoint.id && (await tx.v1Endpoint.findUnique({ where: { id: endpoint.id } }))) throw idTaken('v1 endpoint', endpoint.id, `${eat}.id`);
          const spec = {
            id: endpoint.id,
            displayName: endpoint.display_name,
            model: endpoint.model,
            hardware: endpoint.hardware,
            minReplicas: endpoint.min_replicas ?? 1,
            maxReplicas: endpoint.max_replicas ?? 1,
            state: endpoint.state ?? 'STARTED',
            inactiveTimeout: endpoint.inactive_timeout ?? null,
          };
          const made = await within(eat, () => seedV1Endpoint(tx, clock, projectId, spec));
          applied.v1_endpoints.push(made.id);
        }
        for (const [e, endpoint] of (project.v2_endpoints ?? []).entries()) {
          const eat = `${pat}.v2_endpoints.${e}`;
          if (endpoint.id && (await tx.dedicatedEndpoint.findUnique({ where: { id: endpoint.id } }))) throw idTaken('v2 endpoint', endpoint.id, `${eat}.id`);
          for (const [d, dep] of (endpoint.deployments ?? []).entries())
            if (dep.id && (await tx.deployment.findUnique({ where: { id: dep.id } }))) throw idTaken('deployment', dep.id, `${eat}.deployments.${d}.id`);
          const made = await seedV2Endpoint(tx, services, { id: projectId, slug }, endpoint, eat, within);
          applied.v2_endpoints.push(made.id);
          applied.deployments.push(...made.deployments);
          for (const id of made.toReady) after.push((runner) => readyDeployment({ db, runner }, id));
        }
        for (const [n, evaluation] of (project.evaluations ?? []).entries()) {
          const nat = `${pat}.evaluations.${n}`;
          if (evaluation.id && (await tx.evaluationJob.findUnique({ where: { id: evaluation.id } }))) throw idTaken('evaluation', evaluation.id, `${nat}.id`);
          const job = await within(nat, () => seedEvaluation(tx, services, { projectId, projectSlug: slug }, evaluation as SeededEvaluation));
          applied.evaluations.push(job.id);
          const status = evaluation.status;
          if (status && job.status !== status) after.push((runner) => runEvaluation({ db, runner }, job.id, status));
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

/** Runs a module's own check or creation for the document's item at `at`: its refusal names the item's field. */
async function within<T>(at: string, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (e) {
    if (!(e instanceof ApiError) || e.status >= 500) throw e;
    const param = e.param === null ? at : `${at}.${e.param}`;
    throw new ApiError(e.status, e.code, e.message, param, e.type, e.headers);
  }
}

const idTaken = (what: string, id: string, param: string) => taken(`A ${what} with id '${id}' exists already (${param}).`, 'id_taken', param);

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
export async function applyFixturesFile(services: FixtureServices): Promise<void> {
  const file = services.config.control.fixtures;
  if (!file) return;
  const fail = (why: string) => new StartError(`FIXTURES_FILE (${file.path}) cannot be applied: ${why}; fix the file, or unset FIXTURES_FILE.`);
  const problem = check(file.document);
  if (problem) throw fail(problem);
  const module = `fixtures:${createHash('sha256').update(JSON.stringify(file.document)).digest('hex').slice(0, 32)}`;
  try {
    // Recorded in the transaction that applies it, under the start lock: of two starts at once, one applies it.
    await apply(services, file.document as Fixtures, async (tx) => {
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
