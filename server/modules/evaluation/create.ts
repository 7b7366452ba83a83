// Creating an evaluation job: its acceptance checks (read through the database, or through a fixture document's
// transaction, which sees the document's own files and endpoints), its row, and the states fixtures put it in.
import { instant } from '../../core/clock.ts';
import type { Config } from '../../core/config.ts';
import { badRequest, idTaken } from '../../core/errors.ts';
import type { Identity } from '../../core/identity.ts';
import { newId } from '../../core/ids.ts';
import type { Database, Db, Tx } from '../../db/index.ts';
import { enter, type Timing, transition } from '../../runner/progress.ts';
import type { Runner } from '../../runner/runner.ts';
import { resolveTarget } from '../inference/index.ts';
import type { FixtureSection } from '../types.ts';
import { inputExists } from './dataset.ts';
import { evaluationMachine, evaluations, type StatusUpdate } from './machine.ts';
import { accept, type EvaluationType, type Parameters } from './rules.ts';

type Project = Pick<Identity, 'projectId' | 'projectSlug'>;
export interface EvaluationRequest {
  type: EvaluationType;
  parameters: Parameters;
}
type Source = Database | Tx;
const readerOf = (s: Source): Db | Tx => ('provider' in s && 'write' in s ? s.prisma : (s as Tx));

/** The serverless models that judge: the catalogue's serverless chat models with the `judge` capability. */
export async function serverlessJudges(db: Db | Tx): Promise<string[]> {
  const chat = await db.model.findMany({
    where: { projectId: null, serverless: true, type: 'chat' },
    select: { id: true, capabilities: true },
    orderBy: { id: 'asc' },
  });
  return chat.filter((m) => (JSON.parse(m.capabilities) as string[]).includes('judge')).map((m) => m.id);
}

/** createEvaluationJob's checks (400 naming `parameters.<field>`), read through `source`. */
export async function acceptEvaluation(source: Source, config: Pick<Config, 'urlFetch'>, project: Project, body: EvaluationRequest): Promise<void> {
  const p = body.parameters;
  const db = readerOf(source);
  await accept(
    body.type,
    p,
    async (kind, model, role) => {
      if (kind === 'serverless' && role === 'judge') return (await serverlessJudges(db)).includes(model);
      if ((kind === 'dedicated') !== model.startsWith(`${project.projectSlug}/`)) return false;
      // A model exists for the caller when inference could address it (a 503 "not ready now" still exists).
      return resolveTarget(source, project, model, 'chat').then(
        () => true,
        (err) => err?.status === 503,
      );
    },
    config.urlFetch,
  );
  if (!(await inputExists(db, project.projectId, p.input_data_file_path))) {
    throw badRequest(
      `No file '${p.input_data_file_path}' exists in this project: upload the input with POST /v1/files/upload.`,
      'parameters.input_data_file_path',
      'file_not_found',
    );
  }
}

/** Stores an accepted job, `pending`, its first step scheduled, in the caller's transaction. */
export async function insertEvaluation(tx: Tx, timing: Timing, projectId: string, body: EvaluationRequest, id?: string) {
  const now = instant(timing.clock);
  const updates: StatusUpdate[] = [{ status: 'pending', message: 'The job was accepted.', at: Number(now) }];
  const job = await tx.evaluationJob.create({
    data: {
      id: id ?? newId('eval', Number(now)).replace(/^eval_/, 'eval-'),
      projectId,
      type: body.type,
      status: 'pending',
      parameters: JSON.stringify(body.parameters),
      statusUpdates: JSON.stringify(updates),
      createdAt: now,
      updatedAt: now,
    },
  });
  await enter(tx, timing, evaluationMachine, { id: job.id, projectId: job.projectId, state: job.status });
  return job;
}

export type SeededEvaluationStatus = 'pending' | 'queued' | 'running' | 'completed' | 'error' | 'user_error';
export interface SeededEvaluation extends EvaluationRequest {
  id?: string;
  status?: SeededEvaluationStatus;
  error?: string;
}

/**
 * A fixture's job: checked and stored as createEvaluationJob does, then, for `error` and `user_error`, moved
 * through its machine (queue, start, fail or reject) with `error` as its message. `queued`, `running` and
 * `completed` are reached after the commit (runEvaluation).
 */
export async function seedEvaluation(tx: Tx, services: Timing & { config: Pick<Config, 'urlFetch'> }, project: Project, input: SeededEvaluation) {
  await acceptEvaluation(tx, services.config, project, input);
  let job = await insertEvaluation(tx, services, project.projectId, input, input.id);
  if (input.status !== 'error' && input.status !== 'user_error') return job;
  job = await transition(tx, services, evaluations, job, 'queue', { note: 'The job is queued for evaluation.' });
  job = await transition(tx, services, evaluations, job, 'start', { note: 'The evaluation has started.' });
  const message = input.error ?? 'The evaluation failed.';
  return transition(tx, services, evaluations, job, input.status === 'error' ? 'fail' : 'reject', {
    note: message,
    data: { results: JSON.stringify({ error: message }) },
  });
}

/**
 * Moves a committed job on by the runner's own steps, now (queue, start, the evaluation itself), until it is in
 * `status` or in a terminal state (an input the evaluation refuses ends it `user_error`). Answers its state.
 */
export async function runEvaluation(services: { db: Database; runner: Runner }, id: string, status: SeededEvaluationStatus): Promise<string> {
  const { prisma } = services.db;
  for (;;) {
    const job = await prisma.evaluationJob.findUniqueOrThrow({ where: { id } });
    if (job.status === status || evaluationMachine.isTerminal(job.status)) return job.status;
    // Nothing ran and nothing moved: a step that waits (another worker holds it); the runner takes it later.
    if (!(await services.runner.runNow(evaluationMachine.kind, id)) && (await prisma.evaluationJob.findUniqueOrThrow({ where: { id } })).status === job.status)
      return job.status;
  }
}

/** A fixtures document's evaluations (the Control tag's applyFixtures): moved on to their status once it has committed. */
export const evaluationsSection: FixtureSection<'evaluations'> = {
  order: 7,
  async fill({ tx, services, project }, evaluation) {
    if (evaluation.id && (await tx.evaluationJob.findUnique({ where: { id: evaluation.id } }))) throw idTaken('evaluation', evaluation.id, 'id');
    const job = await seedEvaluation(tx, services, { projectId: project.id, projectSlug: project.slug }, evaluation as SeededEvaluation);
    const status = evaluation.status;
    const run = status && job.status !== status;
    return { ids: { evaluations: [job.id] }, after: run ? (runner) => runEvaluation({ db: services.db, runner }, job.id, status) : undefined };
  },
};
