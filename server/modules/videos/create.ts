// A video job's creation, shared by createVideo (/v2 and /v1) and by fixtures (the Control tag's applyFixtures,
// through the index): the request checked against its model, the row with its first timed step, and a fixture's
// job moved on through the machine to the state it asks for.
import type { Video } from '../../../generated/prisma/sqlite/client/client.ts';
import { instant } from '../../core/clock.ts';
import { apiError, badRequest, idTaken, withArticle, within } from '../../core/errors.ts';
import { newId } from '../../core/ids.ts';
import type { Database, Db, Tx } from '../../db/index.ts';
import { enter, type Timing, transition } from '../../runner/progress.ts';
import type { Runner } from '../../runner/runner.ts';
import { findModel } from '../models/index.ts';
import type { FixtureSection, RequestBody } from '../types.ts';
import { videoMachine, videos } from './machine.ts';
import { accept } from './rules.ts';

type Body = RequestBody<'createVideo'>;

/** The request checked against its model: what the row will hold. Refuses an unknown or non-video model. */
export async function acceptVideo(db: Db | Tx, projectId: string, body: Body | undefined) {
  // The body is optional, as on the platform; the job still needs a model.
  if (body?.model === undefined) throw badRequest("A video job needs 'model', a video model of the catalogue.", 'model', 'required');
  const model = await findModel(db, projectId, body.model);
  if (!model) throw apiError(404, 'model_not_found', `No model '${body.model}' was found.`, 'model');
  if (model.type !== 'video') throw badRequest(`'${body.model}' is ${withArticle(model.type)} model, not a video model.`, 'model', 'model_not_available');
  const accepted = accept(body, model);
  const pricePerSecond = (JSON.parse(model.pricing) as { base?: number }).base ?? 0;
  return { body, model, accepted, pricePerSecond };
}

/** Stores an accepted job `in_progress`, its render scheduled. */
export async function insertVideo(
  tx: Tx,
  timing: Timing,
  projectId: string,
  { body, model, accepted, pricePerSecond }: Awaited<ReturnType<typeof acceptVideo>>,
  apiVersion: 'v1' | 'v2',
  id = newId('video', timing.clock.now()),
): Promise<Video> {
  const v = await tx.video.create({
    data: {
      id,
      projectId,
      model: model.id,
      status: 'in_progress',
      params: JSON.stringify({ spec: accepted.spec, media: accepted.media, negativePrompt: body.negative_prompt ?? null, pricePerSecond }),
      width: accepted.spec.width,
      height: accepted.spec.height,
      seconds: accepted.seconds,
      apiVersion,
      warnings: JSON.stringify(accepted.warnings),
      createdAt: instant(timing.clock),
    },
  });
  await enter(tx, timing, videoMachine, { id: v.id, projectId: v.projectId, state: v.status });
  return v;
}

export interface SeededVideo {
  id?: string;
  request: Body;
  /** `completed` is reached after the fixture's commit, by renderVideo. */
  status?: 'in_progress' | 'completed' | 'failed';
  error?: { code: string; message: string };
}

/** A fixture's job: created as the API creates it, then failed by the machine when `status` says so. */
export async function seedVideo(tx: Tx, timing: Timing, projectId: string, input: SeededVideo): Promise<Video> {
  const v = await insertVideo(tx, timing, projectId, await acceptVideo(tx, projectId, input.request), 'v2', input.id);
  if (input.status !== 'failed') return v;
  const error = input.error ?? { code: 'render_failed', message: 'The video could not be rendered.' };
  return transition(tx, timing, videos, v, 'fail', { data: { errorCode: error.code, errorMessage: error.message, completedAt: instant(timing.clock) } });
}

/**
 * Renders a committed job now, by the runner's own render step (as transitionJob does), so a fixture's `completed`
 * video has its file when the answer comes; a render that fails ends it `failed` with the reason, as any. Answers
 * the state it is in (still `in_progress` when another worker holds its step: that worker finishes it).
 */
export async function renderVideo(services: { db: Database; runner: Runner }, id: string): Promise<string> {
  // Bounded: a failing render is retried at once, up to the runner's attempts, then given up (failed).
  for (let i = 0; ; i++) {
    const v = await services.db.prisma.video.findUniqueOrThrow({ where: { id } });
    if (videoMachine.isTerminal(v.status) || i === 20 || !(await services.runner.runNow(videoMachine.kind, id))) return v.status;
  }
}

/** A fixtures document's videos (the Control tag's applyFixtures): a completed one is rendered once it has committed. */
export const videosSection: FixtureSection<'videos'> = {
  order: 2,
  async fill({ tx, services, project }, video) {
    if (video.id && (await tx.video.findUnique({ where: { id: video.id } }))) throw idTaken('video', video.id, 'id');
    const made = await within('request', () => seedVideo(tx, services, project.id, video as SeededVideo));
    return { ids: { videos: [made.id] }, after: video.status === 'completed' ? (runner) => renderVideo({ db: services.db, runner }, made.id) : undefined };
  },
};
