// Module `models`: the model list, uploads of models and adapters, and their jobs.
import type { Model } from '../../../generated/prisma/sqlite/client/client.ts';
import { instant, iso } from '../../core/clock.ts';
import { taken } from '../../core/errors.ts';
import { newId } from '../../core/ids.ts';
import { owned } from '../../http/scope.ts';
import { uniquely } from '../../http/unique.ts';
import { enter } from '../../runner/progress.ts';
import type { Context } from '../types.ts';
import { createUploadedModel } from './catalogue.ts';
import { uploadJobMachine } from './machine.ts';
import { planUpload } from './upload.ts';
import { jobWire, modelInfoWire, modelUploadWire } from './wire.ts';

const byId = (a: Model, b: Model) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);

export async function listModels({ db, query, identity }: Context<'listModels'>) {
  const deployable = query.dedicated === true ? { minGpuMemory: { not: null } } : {};
  const [catalogue, uploads] = await Promise.all([
    db.prisma.model.findMany({ where: { projectId: null, ...deployable } }),
    db.prisma.model.findMany({ where: { projectId: identity.projectId, status: 'ready', ...deployable } }),
  ]);
  // Sorted here, not by the database, so SQLite and PostgreSQL (whose collation may ignore case) agree.
  return [...catalogue.sort(byId).map((m) => modelInfoWire(m)), ...uploads.sort(byId).map((m) => modelInfoWire(m, { organization: identity.organizationName }))];
}

const nameTaken = (name: string) => taken(`This project already has a model named '${name}'.`, 'model_name_taken', 'model_name');

export async function uploadModel(ctx: Context<'uploadModel'>) {
  const { db, clock, body, identity } = ctx;
  const plan = await planUpload(db.prisma, body);
  const adapter = body.model_type === 'adapter';
  return uniquely(
    () =>
      db.write(async (tx) => {
        if (await tx.model.findFirst({ where: { projectId: identity.projectId, name: body.model_name } })) throw nameTaken(body.model_name);
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
            id: newId('job', clock.now()),
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
