// Module `inference`: chat completions and completions through one path. targets.ts finds what serves `model`; the
// engine routes (ENGINES) pick the engine for it; the engine answers whole or as Server-Sent Events.
import { unixSeconds } from '../../core/clock.ts';
import { ApiError, badRequest } from '../../core/errors.ts';
import type { Identity } from '../../core/identity.ts';
import { newId } from '../../core/ids.ts';
import { localTextEngine, type TextOperation, upstreamTextEngine } from '../../engines/chat.ts';
import { reply } from '../../http/reply.ts';
import { recordServed } from '../dedicated/index.ts';
import { AnswerText, mirror } from '../experiments/index.ts';
import { catalogueModel } from '../models/index.ts';
import { trainedTextEngine } from '../rl/index.ts';
import type { Context, Services } from '../types.ts';
import { resolveTarget } from './targets.ts';
import { fromUpstream } from './wire.ts';

/** One text request as the engines take it: from the pipeline (a request's context) or a batch line (batches module). */
export interface TextCall extends Services {
  operationId: 'createChatCompletion' | 'createCompletion';
  // biome-ignore lint/suspicious/noExplicitAny: a body already validated against the operation's request schema.
  body: Record<string, any>;
  identity: Identity;
}

/** Answers one chat completion or completion: the JSON reply, or the Server-Sent Events of a streamed one. */
export async function infer(op: TextOperation, ctx: TextCall) {
  const { db, clock, body, identity, engines } = ctx;
  const target = await resolveTarget(db, identity, body.model, op, ctx);
  const started = performance.now();
  // A v2 deployment's requests are recorded when their answer ends: analytics, rollouts' metric rules, A/B members
  // and the autoscaler read what was really served.
  const record = async (status: number, usage?: { prompt_tokens?: number; completion_tokens?: number }, answer?: string) => {
    if (!target.endpointId) return;
    const served = { projectId: identity.projectId, endpointId: target.endpointId, deploymentId: target.servedBy, status };
    const tokens = { promptTokens: usage?.prompt_tokens, completionTokens: usage?.completion_tokens };
    await db.writeStatement((c) => recordServed(c, { ...served, ...tokens, latencyMs: performance.now() - started, at: clock.now() }));
    // Shadow experiments copy the request to their targets later, off this answer's path (experiments' mirror.ts).
    mirror(ctx, { op, body, projectId: identity.projectId, endpointId: target.endpointId, servedBy: target.servedBy, adapter: target.adapter, answer });
  };
  const warnings: string[] = [];
  if (body.safety_model !== undefined) {
    const safety = await catalogueModel(db.prisma, body.safety_model);
    if (safety?.type !== 'moderation') {
      throw badRequest(
        `safety_model '${body.safety_model}' is not a moderation model of the catalogue (e.g. Meta-Llama/Llama-Guard-7b).`,
        'safety_model',
        'model_not_supported',
      );
    }
  }
  const route = engines.routeFor('chat', target.model);
  const local = route.engine === 'local';
  const now = clock.now();
  // An answer interceptor (the control plane's scripted answers, named in `x-scripted`) may stand in for the engine.
  const intercepted = await engines.intercept.text?.({ op, operationId: ctx.operationId, body });
  if (local && !intercepted && body.safety_model !== undefined)
    warnings.push(`safety_model ${body.safety_model} was not applied: the local engine runs no safety model.`);
  // An RL inference checkpoint's model is answered by its trained weights (rl's text engine), any other by the local engine.
  const engine = intercepted ? intercepted.value : local ? ((await trainedTextEngine(ctx, target.model)) ?? localTextEngine) : upstreamTextEngine(route);
  let outcome: Awaited<ReturnType<typeof engine.run>>;
  try {
    outcome = await engine.run(op, body, {
      requested: body.model,
      model: target.model,
      adapter: target.adapter,
      contextLength: target.contextLength,
      id: newId(op === 'chat' ? 'chatcmpl' : 'cmpl', now),
      created: unixSeconds(now),
      warnings,
    });
  } catch (err) {
    await record(err instanceof ApiError ? err.status : 500);
    throw err;
  }
  // `x-served-by` names the deployment (or v1 endpoint) that answered; `x-inference-engine` the engine.
  const headers: Record<string, string> = intercepted
    ? { 'x-served-by': target.servedBy, ...intercepted.headers }
    : { 'x-served-by': target.servedBy, 'x-inference-engine': route.engine };
  if (outcome.kind === 'stream') return reply.sse(recorded(outcome.chunks, record, !!target.endpointId), { headers });
  await record(200, outcome.body.usage, target.endpointId ? new AnswerText().add(outcome.body).value : undefined);
  return reply.json(local || intercepted ? outcome.body : fromUpstream(op, outcome.body), { headers });
}

/** A stream that records its request when it ends: 200 when whole, 500 when it failed mid-way (or was cut). */
async function* recorded<T extends { usage?: Record<string, number> | null }>(
  chunks: AsyncIterable<T>,
  record: (status: number, usage?: T['usage'], answer?: string) => Promise<void>,
  /** Whether the answer is kept for shadow copies to be compared with (a v2 endpoint's). */
  compared: boolean,
) {
  let usage: T['usage'] | undefined;
  let status = 500;
  const answer = compared ? new AnswerText() : undefined;
  try {
    for await (const chunk of chunks) {
      if (chunk.usage) usage = chunk.usage;
      answer?.add(chunk);
      yield chunk;
    }
    status = 200;
  } finally {
    await record(status, usage ?? undefined, status === 200 ? answer?.value : undefined);
  }
}

export const createChatCompletion = (ctx: Context<'createChatCompletion'>) => infer('chat', ctx as TextCall) as never;
export const createCompletion = (ctx: Context<'createCompletion'>) => infer('completion', ctx as TextCall) as never;
