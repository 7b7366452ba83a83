// A fine-tuning job's creation, shared by createFineTune and by fixtures (the Control tag's applyFixtures, through
// the index): the request checked against its model and files, the row with its first timed step, and a fixture's
// job moved on through the machine to the state it asks for (by the runner's own steps for the states training
// reaches).
import type { FineTune, Model } from '../../../generated/prisma/sqlite/client/client.ts';
import { instant } from '../../core/clock.ts';
import { apiError, badRequest, idTaken, within } from '../../core/errors.ts';
import { newId } from '../../core/ids.ts';
import type { Database, Db, Tx } from '../../db/index.ts';
import { enter, type Timing } from '../../runner/progress.ts';
import type { Runner } from '../../runner/runner.ts';
import { findFileIn } from '../files/index.ts';
import { findModel } from '../models/index.ts';
import type { FixtureSection, RequestBody } from '../types.ts';
import { fineTuneMachine, moveFineTune, record } from './machine.ts';
import { accept, fineTunable, outputName, pricePerMillion } from './rules.ts';

type Body = RequestBody<'createFineTune'>;

const newFineTuneId = (nowMs: number) => newId('ft', nowMs).replace(/^ft_/, 'ft-');

export async function supportedModel(db: Db | Tx, projectId: string, id: string, param: string): Promise<Model> {
  const model = await findModel(db, projectId, id);
  if (!model) throw apiError(404, 'model_not_found', `No model '${id}' was found.`, param);
  if (!fineTunable(model)) throw badRequest(`${model.id} cannot be fine-tuned: see GET /v1/fine-tunes/models/supported.`, param, 'model_not_supported');
  return model;
}

/** A dataset file of the project, for `field`: absent answers 404; a file of another purpose or known to be invalid, 400. */
async function datasetFile(db: Db | Tx, projectId: string, id: string, field: string) {
  const f = await findFileIn(db, projectId, id);
  if (!f) throw apiError(404, 'file_not_found', `No file '${id}' was found.`, field);
  if (f.purpose !== 'fine-tune') throw badRequest(`File '${id}' was uploaded for '${f.purpose}', not 'fine-tune'.`, field, 'wrong_purpose');
  if (f.status === 'INVALID_FORMAT' || f.status === 'FAILED')
    throw badRequest(`File '${id}' is ${f.status}: see its validation_report.`, field, 'file_invalid');
  return f;
}

/** `from_checkpoint`: a completed job of the project (404 when there is none, 400 when it has not completed). */
export async function checkpointSource(db: Db | Tx, projectId: string, fromCheckpoint: string | undefined): Promise<void> {
  if (!fromCheckpoint) return;
  const [jobId] = fromCheckpoint.split(':');
  const from = await db.fineTune.findFirst({ where: { id: jobId, projectId } });
  if (!from) throw apiError(404, 'checkpoint_not_found', `No fine-tuning job '${jobId}' was found.`, 'from_checkpoint');
  if (from.status !== 'completed')
    throw badRequest(`Job '${jobId}' is ${from.status}: only a completed job's checkpoints can be continued from.`, 'from_checkpoint');
}

/** The request checked against its model, its files and its checkpoint: what the row will hold. */
export async function acceptFineTune(db: Db | Tx, projectId: string, body: Body) {
  const model = await supportedModel(db, projectId, body.model, 'model');
  const accepted = accept(body, model);
  await datasetFile(db, projectId, body.training_file, 'training_file');
  if (body.validation_file) await datasetFile(db, projectId, body.validation_file, 'validation_file');
  await checkpointSource(db, projectId, body.from_checkpoint);
  return { body, model, accepted };
}

/** Stores an accepted job `pending` (its first event recorded, its first step scheduled). */
export async function insertFineTune(
  tx: Tx,
  timing: Timing,
  owner: { projectId: string; projectSlug: string; userId: string },
  { body, model, accepted }: Awaited<ReturnType<typeof acceptFineTune>>,
  id = newFineTuneId(timing.clock.now()),
): Promise<FineTune> {
  const now = instant(timing.clock);
  const params = { ...accepted, pricePerMillion: pricePerMillion(model, accepted.trainingType.type === 'Full', accepted.trainingMethod.method === 'dpo') };
  const job = await tx.fineTune.create({
    data: {
      id,
      projectId: owner.projectId,
      userId: owner.userId,
      status: 'pending',
      model: model.id,
      trainingFile: body.training_file,
      validationFile: body.validation_file ?? null,
      params: JSON.stringify(params),
      outputName: outputName(owner.projectSlug, model, accepted.suffix, id),
      createdAt: now,
      updatedAt: now,
    },
  });
  await record(tx, timing, id, [{ type: 'job_pending', message: 'Fine-tuning job created.' }]);
  await enter(tx, timing, fineTuneMachine, { id, projectId: job.projectId, state: job.status });
  return job;
}

export type SeededFineTuneStatus = 'pending' | 'queued' | 'running' | 'completed' | 'cancelled' | 'error';
export interface SeededFineTune {
  id?: string;
  request: Body;
  status?: SeededFineTuneStatus;
  error?: string;
}

/**
 * A fixture's job, in the fixture's transaction: created as the API creates it, then cancelled or failed by the
 * machine when `status` says so. `queued`, `running` and `completed` are reached after the commit (trainFineTune).
 */
export async function seedFineTune(tx: Tx, timing: Timing, project: { id: string; slug: string }, input: SeededFineTune): Promise<FineTune> {
  const accepted = await acceptFineTune(tx, project.id, input.request);
  const job = await insertFineTune(tx, timing, { projectId: project.id, projectSlug: project.slug, userId: 'fixtures' }, accepted, input.id);
  if (input.status === 'cancelled')
    return moveFineTune(tx, timing, job, 'cancel', {}, [{ type: 'job_stopped', message: 'Job cancelled before training started.' }]);
  if (input.status === 'error') {
    const error = input.error ?? 'The job failed.';
    return moveFineTune(tx, timing, job, 'fail', { error }, [{ type: 'job_error', level: 'error', message: error }]);
  }
  return job;
}

/**
 * Moves a committed job on by the runner's own steps, now (its files' validation, then queue, start, train,
 * compress, upload), until it is in `status` or in a terminal state (a dataset its validation refuses ends it
 * `error`, as on the platform). Answers the state it is in.
 */
export async function trainFineTune(services: { db: Database; runner: Runner }, id: string, status: SeededFineTuneStatus): Promise<string> {
  const { prisma } = services.db;
  for (;;) {
    const job = await prisma.fineTune.findUniqueOrThrow({ where: { id } });
    if (job.status === status || fineTuneMachine.isTerminal(job.status)) return job.status;
    if (job.status === 'pending') for (const file of [job.trainingFile, job.validationFile]) if (file) await services.runner.runNow('file_validation', file);
    // Nothing ran and nothing moved: a step that waits (another worker holds it); the runner takes it later.
    if (!(await services.runner.runNow(fineTuneMachine.kind, id)) && (await prisma.fineTune.findUniqueOrThrow({ where: { id } })).status === job.status)
      return job.status;
  }
}

/** A fixtures document's fine-tunes (the Control tag's applyFixtures): trained to their status once it has committed. */
export const fineTunesSection: FixtureSection<'fine_tunes'> = {
  order: 4,
  async fill({ tx, services, project }, fineTune) {
    if (fineTune.id && (await tx.fineTune.findUnique({ where: { id: fineTune.id } }))) throw idTaken('fine-tune', fineTune.id, 'id');
    const job = await within('request', () => seedFineTune(tx, services, project, fineTune as SeededFineTune));
    const status = fineTune.status;
    const train = status && job.status !== status;
    return { ids: { fine_tunes: [job.id] }, after: train ? (runner) => trainFineTune({ db: services.db, runner }, job.id, status) : undefined };
  },
};
