// Module `models`: the model list, uploads of models and adapters, and their jobs.
import { randomUUID } from 'node:crypto';
import type { Model } from '../../../generated/prisma/sqlite/client/client.ts';
import { instant, iso } from '../../core/clock.ts';
import { badRequest, taken } from '../../core/errors.ts';
import { checkNameCharacters } from '../../http/input.ts';
import { owned } from '../../http/scope.ts';
import { uniquely } from '../../http/unique.ts';
import { enter } from '../../runner/progress.ts';
import type { Context } from '../types.ts';
import { createUploadedModel, nameKey } from './catalogue.ts';
import { uploadJobMachine } from './machine.ts';
import { planUpload } from './upload.ts';
import { jobWire, modelInfoWire, modelUploadWire } from './wire.ts';

const byId = (a: Model, b: Model) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
const oldestFirst = (a: Model, b: Model) => (a.createdAt < b.createdAt ? -1 : a.createdAt > b.createdAt ? 1 : byId(a, b));

export async function listModels({ db, query, identity }: Context<'listModels'>) {
  const deployable = query.dedicated === true ? { minGpuMemory: { not: null } } : {};
  const [catalogue, uploads] = await Promise.all([
    db.prisma.model.findMany({ where: { projectId: null, ...deployable } }),
    db.prisma.model.findMany({ where: { projectId: identity.projectId, status: 'ready', ...deployable } }),
  ]);
  // Sorted here, not by the database, so SQLite and PostgreSQL (whose collation may ignore case) agree.
  return [
    ...catalogue.sort(byId).map((m) => modelInfoWire(m)),
    ...uploads.sort(oldestFirst).map((m) => modelInfoWire(m, { organization: identity.organizationName })),
  ];
}

const nameTaken = (name: string) => taken(`This project already has a model named '${name}'.`, 'model_name_taken', 'model_name');

export async function uploadModel(ctx: Context<'uploadModel'>) {
  const { db, clock, body, identity } = ctx;
  checkNameCharacters(body.model_name, 'model_name');
  if (body.model_name.trim() === '') throw badRequest("'model_name' must name the model: it is empty or only spaces.", 'model_name', 'invalid_model_name');
  // POST /v1/models takes any hub repository or object-storage source; only v2 model creation requires a served base.
  const plan = await planUpload(db.prisma, body, { requireServedArchitecture: false });
  const adapter = body.model_type === 'adapter';
  return uniquely(
    () =>
      db.write(async (tx) => {
        if (await tx.model.findFirst({ where: { projectId: identity.projectId, nameKey: nameKey(body.model_name) } })) throw nameTaken(body.model_name);
        const model = await createUploadedModel(tx, clock, identity.projectId, {
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
        });
        const now = instant(clock);
        const job = await tx.modelUploadJob.create({
          data: {
            id: `job-${randomUUID()}`,
            projectId: identity.projectId,
            modelId: model.id,
            type: adapter ? 'adapter_upload' : 'model_upload',
            status: 'Queued',
            statusUpdates: JSON.stringify([{ status: 'Queued', message: 'Upload job queued.', timestamp: iso(now) }]),
            // `hf_token` is used for the fetch only and never stored.
            args: JSON.stringify({
              ...(body.description !== undefined ? { description: body.description } : {}),
              modelName: body.model_name,
              modelSource: body.model_source,
            }),
            createdAt: now,
            updatedAt: now,
          },
        });
        await enter(tx, ctx, uploadJobMachine, { id: job.id, projectId: job.projectId, state: job.status });
        return modelUploadWire(job, model);
      }),
    () => nameTaken(body.model_name),
  );
}

export async function listJobs({ db, identity }: Context<'listJobs'>) {
  const jobs = await db.prisma.modelUploadJob.findMany({ where: { projectId: identity.projectId }, orderBy: [{ createdAt: 'desc' }, { id: 'desc' }] });
  return { data: jobs.map(jobWire) };
}

export async function getJob({ db, params, identity }: Context<'getJob'>) {
  return jobWire(await owned(db.prisma.modelUploadJob, identity.projectId, { id: params.jobId }, { what: 'job', id: params.jobId, param: 'jobId' }));
}
