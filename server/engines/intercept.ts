// Answer interceptors: what may stand in for an engine's answer, one per capability. Each capability asks its own
// before it computes (inference's text path, the embeddings handler, audio's transcription, an evaluation's judge);
// with none registered (the default, and always with CONTROL_API=off) the engine answers, at the cost of one property
// read. Whatever steers the platform from outside (the control plane's scripted answers) registers here at start
// (platform.ts); the modules that ask never know what answered, only the headers that say so.
import type { TextEngine, TextOperation } from './chat.ts';
import type { EmbeddingRequest, EmbeddingResult, EmbeddingsEngine } from './embeddings.ts';
import type { ChatCall, JudgeEngine, JudgeTask } from './judge.ts';
import type { EngineRoutes } from './routes.ts';
import { countTokens } from './tokens.ts';
import type { Transcript } from './transcription.ts';

/** The engines as the modules meet them: which engine serves a model (routes.ts), and what may answer instead. */
export interface Engines extends EngineRoutes {
  /** None unless something registers at start (the control plane's scripted answers). */
  intercept: AnswerInterceptors;
}

/** The engine routes with no interceptor registered yet. */
export const withInterceptors = (routes: EngineRoutes): Engines => ({ routeFor: (capability, model) => routes.routeFor(capability, model), intercept: {} });

/** An answer that stands in for an engine's, and the response headers that say what gave it. */
export interface Intercepted<T> {
  value: T;
  headers: Record<string, string>;
}

// biome-ignore lint/suspicious/noExplicitAny: a request body, already validated against the contract.
type Body = Record<string, any>;

export interface AnswerInterceptors {
  /** A chat completion or completion: an engine that answers this one request instead (whole or streamed). */
  text?(call: { op: TextOperation; operationId: string; body: Body }): Promise<Intercepted<TextEngine> | null>;
  /** Vectors for some of a request's texts, by text; the engine computes the others. */
  embeddings?(request: EmbeddingRequest): Promise<Intercepted<Map<string, Float32Array>> | null>;
  /** A transcript (the audio is not read). */
  transcription?(call: { operationId: string; model: string; body: { prompt?: string; language?: string } }): Promise<Intercepted<Transcript> | null>;
  /** The judge's answer (text) to one call of an evaluation. */
  judge?(call: ChatCall): Promise<Intercepted<string> | null>;
}

/** The embeddings of a request: an interceptor's vectors for the texts it gives, the engine's for the others. */
export async function embedIntercepted(
  intercept: AnswerInterceptors,
  request: EmbeddingRequest,
  engine: EmbeddingsEngine,
): Promise<{ result: EmbeddingResult; headers: Record<string, string> }> {
  const given = await intercept.embeddings?.(request);
  if (!given) return { result: await engine.embed(request), headers: {} };
  const rest = request.input.filter((t) => !given.value.has(t));
  const computed = rest.length ? await engine.embed({ ...request, input: rest }) : null;
  let k = 0;
  const vectors = request.input.map((t) => given.value.get(t) ?? computed!.vectors[k++]!);
  const promptTokens = request.input.filter((t) => given.value.has(t)).reduce((sum, t) => sum + countTokens(t), computed?.promptTokens ?? 0);
  return { result: { vectors, promptTokens, engine: computed?.engine ?? 'local' }, headers: given.headers };
}

/** A judge that answers as the interceptor says where it has an answer, as `engine` otherwise. */
export function interceptedJudge(intercept: AnswerInterceptors, engine: JudgeEngine): JudgeEngine {
  if (!intercept.judge) return engine;
  const ask = intercept.judge.bind(intercept);
  return {
    ...engine,
    async judge(task: JudgeTask, call: ChatCall) {
      return (await ask(call))?.value ?? engine.judge(task, call);
    },
  };
}
