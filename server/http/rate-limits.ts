// The serverless rate limits in the pipeline (the algorithm is server/limits/rate-limits.ts). Which operations are
// limited is a declaration: the spec marks them with `x-rate-limited: true`, and app.ts puts every such request
// through a `Gate`: admitted before the handler runs (or refused with 429 / 503, after a short wait when its window
// ends soon), settled from the answer's `usage` after it; a refusal made before that still carries
// `x-ratelimit-reset` (resetOnRefusals).
import type { ErrorRequestHandler, Request, Response } from 'express';
import type { OperationId } from '../../generated/operations.ts';
import { ApiError, internalError } from '../core/errors.ts';
import type { Identity } from '../core/identity.ts';
import { type Admitted, keyOf, type Outcome, type RateLimits, type RedisWait, secondsText, wholeText } from '../limits/rate-limits.ts';
import { Reply } from './reply.ts';
import { refResolver, type SpecDocument } from './spec-ref.ts';

/**
 * The operations the spec marks `x-rate-limited: true`, each with the `default` its body schema gives `model` (an
 * optional `model`, as audio's, is limited as its default).
 */
export function rateLimitedOperations(spec: SpecDocument): Map<OperationId, string | undefined> {
  const resolve = refResolver(spec);
  const ids = new Map<OperationId, string | undefined>();
  for (const item of Object.values(spec.paths)) {
    for (const op of Object.values(item)) {
      if (op?.['x-rate-limited'] !== true) continue;
      const content = resolve(op.requestBody)?.content ?? {};
      const schema = resolve((content['application/json'] ?? content['multipart/form-data'])?.schema);
      const fallback = resolve(schema?.properties?.model)?.default;
      ids.set(op.operationId, typeof fallback === 'string' ? fallback : undefined);
    }
  }
  return ids;
}

/** `usage.total_tokens` of a handler's JSON answer, when it has one. */
function usedTokens(result: unknown): number | undefined {
  const body = result instanceof Reply ? (result.content.kind === 'json' ? result.content.value : undefined) : result;
  const total = (body as { usage?: { total_tokens?: unknown } } | undefined)?.usage?.total_tokens;
  return typeof total === 'number' && Number.isFinite(total) ? total : undefined;
}

/**
 * Every answer of a limited operation carries `x-ratelimit-reset`, a refusal made before the request was counted
 * included (400 of the contract, 401, 413, 415, a model refused while the body streams): the seconds until the
 * caller's current window on the request's `model` (or the operation's default) ends, 0 when none is open or there
 * is no caller. An error handler, before the one that writes the envelope.
 */
export function resetOnRefusals(
  limits: RateLimits,
  limited: Map<OperationId, string | undefined>,
  operationOf: (req: Request) => OperationId | undefined,
): ErrorRequestHandler {
  return async (err, req, res, next) => {
    const op = limited.size ? operationOf(req) : undefined;
    const carried = err instanceof ApiError && 'x-ratelimit-reset' in err.headers;
    if (op && limited.has(op) && !carried && !res.headersSent && !res.hasHeader('x-ratelimit-reset')) {
      const model = typeof req.body?.model === 'string' ? req.body.model : limited.get(op);
      const ms = req.identity && model !== undefined ? await limits.msBeforeReset(keyOf(req.identity, model)) : 0;
      res.set('x-ratelimit-reset', secondsText(ms));
    }
    next(err);
  };
}

/** One limited request: admitted once by the pipeline (on the body's `model`, JSON or multipart), then settled or failed. */
export class Gate {
  private admitted?: Admitted;

  constructor(
    private readonly limits: RateLimits,
    private readonly identity: Identity,
    private readonly res: Response,
  ) {}

  /**
   * Counts the request against the organization's limits on `model` (and the model's capacity), waiting in the
   * key's short queue when the window that refuses it ends soon; throws the 429 or 503 otherwise. Nothing to wait
   * for when the limiter answers at once and admits (in memory, its limits known): the pipeline awaits only a promise.
   */
  admit(model: string, body: unknown): Promise<void> | undefined {
    if (this.admitted) return;
    // One budget for every wait on Redis of this request (RATE_LIMIT_REDIS_TIMEOUT_MS in all).
    const wait = this.limits.newWait();
    const outcome = this.limits.attempt(this.identity, model, body, wait);
    if (!(outcome instanceof Promise) && 'admitted' in outcome) {
      this.admitted = outcome.admitted;
      return;
    }
    return this.afterFirst(outcome, model, body, wait);
  }

  /** `admit` once its first attempt is known: admitted, or one more attempt after a wait in the key's queue. */
  private async afterFirst(first: Outcome | Promise<Outcome>, model: string, body: unknown, wait: RedisWait): Promise<void> {
    let outcome = await first;
    if ('refusal' in outcome) {
      if (!(await this.limits.wait(keyOf(this.identity, model), outcome.waitMs))) throw outcome.refusal;
      outcome = await this.limits.attempt(this.identity, model, body, wait);
      if ('refusal' in outcome) throw outcome.refusal;
    }
    this.admitted = outcome.admitted;
  }

  /** The limit headers on the answer, written once it is known (each header costs every answer a little, measured). */
  private setHeaders(headers: Record<string, string>): void {
    // setHeader, not Express's res.set: these are plain strings, which res.set would check and convert again.
    for (const name in headers) this.res.setHeader(name, headers[name]!);
  }

  /**
   * After the handler answered: the token count corrected from `usage`, the success recorded as recent usage, and the
   * limit headers set (the tokens left as corrected). A stream of events is settled when it ends, from the last event
   * that carried `usage`; its headers, sent before that, count the estimate.
   */
  settle(result: unknown): void {
    const a = this.admitted;
    if (!a) throw internalError(); // a limited operation whose handler never called `admit`
    if (result instanceof Reply && result.content.kind === 'sse') {
      const events = result.content.events;
      const limits = this.limits;
      result.content.events = (async function* () {
        let used: number | undefined;
        for await (const event of events) {
          used = usedTokens(event) ?? used;
          yield event;
        }
        limits.settle(a, used);
      })();
      this.setHeaders(a.headers);
      return;
    }
    const used = usedTokens(result);
    const left = this.limits.settle(a, used);
    if (used !== undefined && used !== a.estimate) a.headers['x-tokenlimit-remaining'] = wholeText(left);
    this.setHeaders(a.headers);
  }

  /** The handler failed: its tokens were not used (the request still counts); its error answer carries the limit headers. */
  fail(): void {
    if (!this.admitted) return;
    this.limits.release(this.admitted);
    this.setHeaders(this.admitted.headers);
  }
}
