// Tag Models (seed 2.7, rule 4, section 9): the model catalogue, uploads of models and adapters, and their jobs.
// An upload is a Model row (`ml_...`, status pending) and a ModelUploadJob that the durable runner moves through
// one transition table: Queued -> Running -> Complete | Failed. Nothing is fetched (the server is offline); see the
// tag's description in spec/tags/models.yaml for what "upload" means here.
import type { Model, ModelUploadJob } from '../../generated/prisma/sqlite/client/client.ts';
import type { AppOptions } from '../app.ts';
import type { Clock } from '../clock.ts';
import { duration, type Config } from '../config.ts';
import type { Db, Tx } from '../db/index.ts';
import { ApiError, badRequest, conflict } from '../errors.ts';
import type { ModuleHandlers, RequestBody } from '../handlers.ts';
import { newId } from '../ids.ts';
import { enqueue, type Runner } from '../runner.ts';
import type { SeedContext } from '../seed.ts';
import { seedData } from '../seed.ts';
import { wire } from '../wire/index.ts';
import { owned } from '../scope.ts';

interface ModelSeed {
  models: Array<{
    id: string;
    displayName?: string;
    organization?: string;
    type: string;
    architecture?: string;
    serverless: boolean;
    minGpuMemory?: number;
    contextLength?: number;
    license?: string;
    link?: string;
    capabilities?: string[];
    pricing: Record<string, number>;
    description?: string;
  }>;
}

/** Seeder: serverless models and base architectures (prisma/seed/models.json); catalogue rows have no project. */
export async function seedModels({ tx, clock }: SeedContext): Promise<void> {
  const created = BigInt(Math.floor(clock.now() / 1000));
  for (const m of seedData<ModelSeed>('models').models) {
    await tx.model.create({
      data: {
        id: m.id,
        projectId: null,
        name: m.id,
        type: m.type,
        modelType: 'model',
        architecture: m.architecture ?? null,
        serverless: m.serverless,
        minGpuMemory: m.minGpuMemory ?? null,
        contextLength: m.contextLength ?? null,
        organization: m.organization ?? null,
        displayName: m.displayName ?? null,
        license: m.license ?? null,
        link: m.link ?? null,
        capabilities: JSON.stringify(m.capabilities ?? []),
        pricing: JSON.stringify(m.pricing),
        description: m.description ?? null,
        status: 'ready',
        created,
      },
    });
  }
}

/** A model the project can use: a catalogue model, or one of its own uploads that has completed. */
export function findModel(db: Db | Tx, projectId: string, id: string): Promise<Model | null> {
  return db.model.findFirst({ where: { id, OR: [{ projectId: null }, { projectId, status: 'ready' }] } });
}

const capabilities = (m: Model): string[] => JSON.parse(m.capabilities);

// ---- Sources -------------------------------------------------------------------------------------------------

export type SourceKind = 'huggingface' | 's3' | 'gcs' | 'url';

export interface Source {
  kind: SourceKind;
  /** The repository's or path's segments (bucket first for object storage). */
  segments: string[];
}

const REPO_PART = /^(?!.*(?:--|\.\.))[A-Za-z0-9](?:[A-Za-z0-9._-]{0,94}[A-Za-z0-9])?$/;
const S3_BUCKET = /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/;
const GCS_BUCKET = /^[a-z0-9][a-z0-9._-]{1,61}[a-z0-9]$/;

/** Reads a `model_source` (syntax only: nothing is fetched), or answers why it is not one. */
export function parseSource(raw: string): Source | string {
  if (/\s/.test(raw)) return 'it contains whitespace';
  const repo = raw.split('/');
  if (!raw.includes(':')) {
    if (repo.length === 2 && repo.every((p) => REPO_PART.test(p))) return { kind: 'huggingface', segments: repo };
    return 'a hub repository is `org/name` (letters, digits, `.`, `_`, `-`)';
  }
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return 'it is neither a hub repository nor a URL';
  }
  const path = url.pathname.split('/').filter(Boolean).map(decodeURIComponent);
  if (url.protocol === 's3:' || url.protocol === 'gs:') {
    const kind = url.protocol === 's3:' ? 's3' : 'gcs';
    if (!(kind === 's3' ? S3_BUCKET : GCS_BUCKET).test(url.hostname)) return `'${url.hostname}' is not a valid bucket name`;
    if (path.length === 0) return 'it names a bucket but no object path';
    return { kind, segments: [url.hostname, ...path] };
  }
  if (url.protocol === 'http:') return 'plain http is not accepted; use https';
  if (url.protocol !== 'https:') return `the scheme '${url.protocol}' is not supported (hub repository, s3://, gs:// or https://)`;
  if (!url.hostname.includes('.') || url.username || url.password) return 'it is not a public https address';
  if (url.hostname === 'huggingface.co' || url.hostname === 'www.huggingface.co') {
    if (path.length === 2 && path.every((p) => REPO_PART.test(p))) return { kind: 'huggingface', segments: path };
    return 'a hub address is `https://huggingface.co/org/name`';
  }
  if (path.length === 0) return 'the address has no path';
  return { kind: /(^|\.)amazonaws\.com$/.test(url.hostname) ? 's3' : 'url', segments: [url.hostname, ...path] };
}

/** The offline stand-in for fetching: a source resolves unless a segment of it says it does not exist. */
export const resolves = (source: Source) => !source.segments.some((s) => s.toLowerCase().includes('does-not-exist'));

/** The served base architecture a source's name says it fine-tunes (longest match), if any. */
export function architectureOf(source: Source, architectures: string[]): string | undefined {
  const name = source.segments.at(-1)!.toLowerCase().replace(/[_\s]+/g, '-');
  return architectures.filter((a) => name.includes(a)).sort((a, b) => b.length - a.length)[0];
}

// ---- The upload job's state machine --------------------------------------------------------------------------

export type JobStatus = 'Queued' | 'Running' | 'Complete' | 'Failed';

/** The one transition table of upload jobs. Failed from Queued: the runner gave up before the job started. */
export const uploadTransitions: Record<JobStatus, readonly JobStatus[]> = {
  Queued: ['Running', 'Failed'],
  Running: ['Complete', 'Failed'],
  Complete: [],
  Failed: [],
};

/** Moves a job (inside `tx`), appending a status update; refuses a move the table does not allow. */
export async function transitionJob(tx: Tx, clock: Clock, job: ModelUploadJob, to: JobStatus, message: string): Promise<ModelUploadJob> {
  const from = job.status as JobStatus;
  if (!uploadTransitions[from].includes(to)) {
    throw conflict(`An upload job cannot go from ${from} to ${to}.`, 'invalid_state_transition', 'status');
  }
  const now = clock.now();
  const updates = [...JSON.parse(job.statusUpdates), { status: to, message, timestamp: new Date(now).toISOString() }];
  const { count } = await tx.modelUploadJob.updateMany({
    where: { id: job.id, status: from },
    data: { status: to, statusUpdates: JSON.stringify(updates), updatedAt: BigInt(now) },
  });
  if (count === 0) throw conflict(`Upload job ${job.id} is no longer ${from}.`, 'invalid_state_transition', 'status');
  if (to === 'Complete') await tx.model.update({ where: { id: job.modelId }, data: { status: 'ready' } });
  // A failed upload leaves no model behind (its name is free again); the job keeps what was asked.
  if (to === 'Failed') await tx.model.deleteMany({ where: { id: job.modelId, status: 'pending' } });
  return tx.modelUploadJob.findUniqueOrThrow({ where: { id: job.id } });
}

const SOURCE_LABEL: Record<SourceKind, string> = { huggingface: 'the model hub', s3: 'S3', gcs: 'Google Cloud Storage', url: 'the URL' };

/** Runner kind `model_upload`: one step per state; the item's subject is the job. */
export function registerModelUploads(runner: Runner, { db, clock, config }: AppOptions): void {
  runner.register('model_upload', {
    run: async (item) => {
      const job = await db.prisma.modelUploadJob.findUnique({ where: { id: item.subjectId } });
      if (!job) return {};
      const { modelSource } = JSON.parse(job.args) as { modelSource: string };
      const source = parseSource(modelSource);
      // Checked at upload; a stored source that no longer parses is a server fault: retried, then given up (Failed).
      if (typeof source === 'string') throw new Error(`upload job ${job.id} has an unreadable source: ${source}`);
      if (job.status === 'Queued') {
        return {
          apply: async (tx) => void (await transitionJob(tx, clock, job, 'Running', `Fetching and checking the weights from ${SOURCE_LABEL[source.kind]}.`)),
          againInMs: uploadDuration(config),
        };
      }
      if (job.status === 'Running') {
        const ok = resolves(source);
        const message = ok
          ? 'Upload complete: the model is in the catalogue.'
          : source.kind === 'huggingface'
            ? `Repository not found: ${modelSource}.`
            : `Object not found: ${modelSource}.`;
        return { apply: async (tx) => void (await transitionJob(tx, clock, job, ok ? 'Complete' : 'Failed', message)) };
      }
      return {};
    },
    giveUp: async (item, _error, tx) => {
      const job = await tx.modelUploadJob.findUnique({ where: { id: item.subjectId } });
      if (job && uploadTransitions[job.status as JobStatus].includes('Failed')) {
        await transitionJob(tx, clock, job, 'Failed', 'The upload failed on the server; please upload again.');
      }
    },
  });
}

const queueDuration = (config: Config) => duration(config, 'model_upload_queue', 2_000);
const uploadDuration = (config: Config) => duration(config, 'model_upload', 10_000);

// ---- Upload validation ---------------------------------------------------------------------------------------

type UploadBody = RequestBody<'uploadModel'>;

interface Plan {
  source: Source;
  type: string;
  architecture: string;
  baseModelId: string;
  loraModel: string | null;
  minGpuMemory: number | null;
  contextLength: number | null;
}

/** Checks an upload against the catalogue (seed 2.7, rule 4, section 9) and says what the uploaded model will be. */
async function planUpload(db: Db, body: UploadBody): Promise<Plan> {
  const source = parseSource(body.model_source);
  if (typeof source === 'string') {
    throw badRequest(`'model_source' is not a model hub repository or an object-storage path: ${source}.`, 'model_source', 'invalid_model_source');
  }
  if (body.hf_token !== undefined && source.kind !== 'huggingface') {
    throw badRequest(`'hf_token' applies only to model hub sources; this source is ${source.kind}.`, 'hf_token', 'field_not_applicable');
  }
  const catalogue = await db.model.findMany({ where: { projectId: null, architecture: { not: null } }, orderBy: { id: 'asc' } });

  if ((body.model_type ?? 'model') === 'model') {
    for (const field of ['base_model', 'lora_model'] as const) {
      if (body[field] !== undefined) {
        throw badRequest(`'${field}' applies only to uploads with model_type 'adapter' (rule 4).`, field, 'field_not_applicable');
      }
    }
    const architectures = [...new Set(catalogue.map((m) => m.architecture!))];
    const architecture = architectureOf(source, architectures);
    if (!architecture) {
      throw badRequest(
        `An uploaded model must be a fine-tuned variant of a base architecture this platform serves, named in the source (one of: ${architectures.sort().join(', ')}).`,
        'model_source',
        'unsupported_base_architecture',
      );
    }
    // The base: the architecture's dedicated base model when there is one, else a served model of it.
    const family = catalogue.filter((m) => m.architecture === architecture);
    const base = family.find((m) => !m.serverless) ?? family[0]!;
    return { source, type: base.type, architecture, baseModelId: base.id, loraModel: null, minGpuMemory: base.minGpuMemory, contextLength: base.contextLength };
  }

  if (body.base_model === undefined && body.lora_model === undefined) {
    throw badRequest("An adapter names the model it applies to: 'base_model' (serverless pool) or 'lora_model' (dedicated pool).", 'base_model', 'base_model_required');
  }
  const servedBase = body.base_model === undefined ? undefined : catalogue.find((m) => m.id === body.base_model);
  if (body.base_model !== undefined && !(servedBase?.serverless && capabilities(servedBase).includes('lora'))) {
    const lora = catalogue.filter((m) => m.serverless && capabilities(m).includes('lora')).map((m) => m.id);
    throw badRequest(`'${body.base_model}' is not a served model that runs adapters serverless (one of: ${lora.join(', ')}).`, 'base_model', 'base_model_not_served');
  }
  const pool = body.lora_model === undefined ? undefined : catalogue.find((m) => m.id === body.lora_model);
  if (body.lora_model !== undefined && pool?.minGpuMemory == null) {
    throw badRequest(`'${body.lora_model}' is not a served model that dedicated endpoints run.`, 'lora_model', 'base_model_not_served');
  }
  if (servedBase && pool && servedBase.architecture !== pool.architecture) {
    throw badRequest(
      `'base_model' (${servedBase.architecture}) and 'lora_model' (${pool.architecture}) are different architectures; an adapter fits one.`,
      'lora_model',
      'base_model_mismatch',
    );
  }
  const base = (servedBase ?? pool)!;
  return { source, type: base.type, architecture: base.architecture!, baseModelId: base.id, loraModel: pool?.id ?? null, minGpuMemory: null, contextLength: base.contextLength };
}

// The official clients retry a 409 by default; asking again cannot free the name, so they are told not to.
const nameTaken = (name: string) =>
  new ApiError(409, 'model_name_taken', `This project already has a model named '${name}'.`, 'model_name', 'invalid_request_error', { 'x-should-retry': 'false' });

const isUniqueViolation = (err: unknown) => (err as { code?: string })?.code === 'P2002';

export const modelsHandlers = {
  listModels: async ({ db, query, identity }) => {
    const dedicated = query.dedicated === true;
    const deployable = dedicated ? { minGpuMemory: { not: null } } : {};
    const [catalogue, uploads] = await Promise.all([
      db.prisma.model.findMany({ where: { projectId: null, ...deployable } }),
      db.prisma.model.findMany({ where: { projectId: identity.projectId, status: 'ready', ...deployable } }),
    ]);
    // Sorted here, not by the database, so SQLite and PostgreSQL (whose collation may ignore case) agree.
    const byId = (a: Model, b: Model) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
    return [
      ...catalogue.sort(byId).map((m) => wire.modelInfo(m)),
      ...uploads.sort(byId).map((m) => wire.modelInfo(m, { organization: identity.organizationName })),
    ];
  },

  uploadModel: async ({ db, clock, config, body, identity }) => {
    const plan = await planUpload(db.prisma, body);
    const adapter = body.model_type === 'adapter';
    const now = clock.now();
    try {
      return await db.write(async (tx) => {
        const taken = await tx.model.findFirst({ where: { projectId: identity.projectId, name: body.model_name } });
        if (taken) throw nameTaken(body.model_name);
        const model = await tx.model.create({
          data: {
            id: newId('ml', now),
            projectId: identity.projectId,
            name: body.model_name,
            type: plan.type,
            modelType: adapter ? 'adapter' : 'model',
            architecture: plan.architecture,
            baseModelId: plan.baseModelId,
            loraModel: plan.loraModel,
            minGpuMemory: plan.minGpuMemory,
            contextLength: plan.contextLength,
            description: body.description ?? null,
            source: body.model_source,
            sourceKind: plan.source.kind,
            status: 'pending',
            created: BigInt(Math.floor(now / 1000)),
          },
        });
        const job = await tx.modelUploadJob.create({
          data: {
            id: newId('job', now),
            projectId: identity.projectId,
            modelId: model.id,
            type: adapter ? 'adapter_upload' : 'model_upload',
            status: 'Queued',
            statusUpdates: JSON.stringify([{ status: 'Queued', message: 'Upload job queued.', timestamp: new Date(now).toISOString() }]),
            args: JSON.stringify({
              ...(body.description !== undefined ? { description: body.description } : {}),
              modelName: body.model_name,
              modelSource: body.model_source,
            }),
            createdAt: BigInt(now),
            updatedAt: BigInt(now),
          },
        });
        await enqueue(tx, clock, { kind: 'model_upload', subjectId: job.id, projectId: identity.projectId, delayMs: queueDuration(config) });
        return wire.modelUpload(job, model);
      });
    } catch (err) {
      // Two uploads of one name racing past the check: the unique index decides.
      if (isUniqueViolation(err)) throw nameTaken(body.model_name);
      throw err;
    }
  },

  listJobs: async ({ db, identity }) => {
    const jobs = await db.prisma.modelUploadJob.findMany({ where: { projectId: identity.projectId }, orderBy: [{ createdAt: 'desc' }, { id: 'desc' }] });
    return { data: jobs.map(wire.job) };
  },

  getJob: async ({ db, params, identity }) => {
    const job = await owned(db.prisma.modelUploadJob, identity.projectId, { id: params.jobId }, { what: 'job', id: params.jobId, param: 'jobId' });
    return wire.job(job);
  },
} satisfies ModuleHandlers;
