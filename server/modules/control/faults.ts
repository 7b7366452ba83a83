// Fault rules (the Control tag): the pipeline's fault policy (http/guests.ts), matched against each authenticated,
// validated API request before its operation runs; they answer the platform's own error for a status, delay the
// answer, drop the connection, or stall or cut a stream of events (http/reply.ts applies that one as it writes the
// stream). Shared by every process (rules.ts); with no rule and no `Prefer` header a request costs two checks.
import { operations } from '../../../generated/operations.ts';
import { ApiError, badRequest } from '../../core/errors.ts';
import { newId } from '../../core/ids.ts';
import type { Database } from '../../db/index.ts';
import type { Fault, FaultPolicy, FaultRequest } from '../../http/guests.ts';
import { type Rule, RuleStore } from './rules.ts';

export interface FaultMatch {
  operations?: string[];
  path?: string;
  model?: string;
  project_id?: string;
}

export interface FaultInput {
  match?: FaultMatch;
  status?: number;
  code?: string;
  message?: string;
  retry_after_seconds?: number;
  delay_ms?: number;
  drop?: boolean;
  stream?: { after_chunks: number; stall_ms?: number; cut?: boolean };
  count?: number;
  after?: number;
  probability?: number;
  ttl_seconds?: number;
  /** The request succeeds and the job it creates fails at its first step with this error (control/time.ts). */
  fail_job?: { code: string; message?: string };
}

export type FaultRule = Rule<FaultInput>;

const DEFAULT_CODES: Record<number, string> = {
  429: 'dynamic_request_limited',
  500: 'internal_error',
  502: 'upstream_error',
  503: 'model_overloaded',
  504: 'upstream_timeout',
};
// The `Prefer` header's tokens: `name` or `name=value` (a value may be quoted), separated by commas, semicolons or
// spaces (Prism's form and RFC 7240's parameters alike); names this server does not know are left alone.
const PREFER = /([a-z-]+)(?:=(?:"([^"]*)"|([^\s,;]*)))?/gi;
const MAX_MS = 60_000;
const CODE = /^[a-z0-9_]{1,64}$/;
const count = (value: string | undefined) => (value !== undefined && /^\d{1,9}$/.test(value) ? Number(value) : undefined);

/**
 * What a request's `Prefer` header asks for, as a rule would (spec/tags/control.yaml, "Per request"); undefined when
 * it asks for nothing this server knows, or for values out of range (ignored, as RFC 7240 has preferences ignored).
 */
export function parsePrefer(header: string): FaultInput | undefined {
  const p = new Map<string, string>();
  for (const [, name, quoted, plain] of header.matchAll(PREFER)) if (!p.has(name!.toLowerCase())) p.set(name!.toLowerCase(), quoted ?? plain ?? '');
  const rule: FaultInput = {};
  const status = count(p.get('code'));
  if (status !== undefined && status >= 400 && status <= 599) rule.status = status;
  const delay = count(p.get('delay'));
  if (delay !== undefined) rule.delay_ms = Math.min(delay, MAX_MS);
  if (p.get('drop') === '' || p.get('drop') === 'true') rule.drop = true;
  const cutAfter = count(p.get('stream-cut'));
  const stallAfter = count(p.get('stream-stall'));
  if (stallAfter !== undefined) rule.stream = { after_chunks: stallAfter, stall_ms: Math.min(count(p.get('ms')) ?? 1000, MAX_MS), cut: cutAfter !== undefined };
  else if (cutAfter !== undefined) rule.stream = { after_chunks: cutAfter, cut: true };
  const failJob = p.get('fail-job');
  if (failJob !== undefined && CODE.test(failJob)) rule.fail_job = { code: failJob };
  return Object.keys(rule).length ? rule : undefined;
}

/** The platform's error for `status`, as the rule (or a `Prefer` header) asks for it. */
export function faultError(
  status: number,
  o: { code?: string; message?: string; retryAfterSeconds?: number; requestLimit: number; tokenLimit: number },
): ApiError {
  const code = o.code ?? DEFAULT_CODES[status] ?? 'fault_injected';
  const retry = String(o.retryAfterSeconds ?? 1);
  if (status === 429) {
    const message = o.message ?? `Rate limit exceeded (a fault rule of the control plane answered). Retry in ${retry} s.`;
    return new ApiError(429, code, message, null, code, {
      'x-ratelimit-limit': String(o.requestLimit),
      'x-ratelimit-remaining': '0',
      'x-ratelimit-reset': retry,
      'x-tokenlimit-limit': String(o.tokenLimit),
      'x-tokenlimit-remaining': '0',
      'retry-after': retry,
      'retry-after-ms': String(Number(retry) * 1000),
    });
  }
  const message = o.message ?? `A fault rule of the control plane answered ${status}.`;
  return new ApiError(status, code, message, null, undefined, status === 503 ? { 'retry-after': retry, 'retry-after-ms': String(Number(retry) * 1000) } : {});
}

/** The error a `fail_job` rule fails a job with (its message by default names the rule's code). */
export const failedWith = (f: { code: string; message?: string }) => ({
  code: f.code,
  message: f.message ?? `The job failed with ${f.code} (a fault rule of the control plane failed it).`,
});

/** Refuses a rule that cannot act as given (400 naming the field); `creating`: the operations creating a job it can fail. */
export function checkFault(input: FaultInput, creating: ReadonlySet<string>): void {
  if (input.status === undefined && input.delay_ms === undefined && !input.drop && !input.fail_job && !input.stream)
    throw badRequest('A fault rule needs something to do: a status, a delay_ms, drop, stream or fail_job.', 'status', 'fault_without_effect');
  if (input.fail_job) {
    if (input.status !== undefined || input.drop || input.stream)
      throw badRequest('fail_job lets the request succeed: give it without status, drop or stream.', 'fail_job', 'invalid_value');
    if (!input.match?.operations?.length || input.match.operations.some((op) => !creating.has(op)))
      throw badRequest(`fail_job needs match.operations, each an operation creating a job: ${[...creating].join(', ')}.`, 'match.operations', 'invalid_value');
  }
  if (input.stream && input.stream.stall_ms === undefined && !input.stream.cut)
    throw badRequest('A stream fault needs something to do: stall_ms and/or cut.', 'stream', 'fault_without_effect');
  if (input.stream && (input.status !== undefined || input.drop))
    throw badRequest('A stream fault acts on a stream that is answered: give it without status or drop.', 'stream', 'invalid_value');
  if (input.code !== undefined && input.status === undefined)
    throw badRequest('code is the error code of a status: give status too.', 'code', 'fault_without_effect');
  if (input.drop && input.status !== undefined)
    throw badRequest('A dropped connection answers no status: give one of drop and status.', 'drop', 'invalid_value');
  input.match?.operations?.forEach((op, i) => {
    if (!(op in operations)) throw badRequest(`'${op}' is not an operationId of this API.`, `match.operations.${i}`, 'unknown_operation');
  });
}

/**
 * What a rule asks of a request (its `match`, and a stream when it acts on one), in one shape for every rule: a request
 * is held against every rule in force, and a loop over rules of one shape reads each field with one check (measured:
 * 100 rules of four kinds, alone: 890 ns a request as the rules' own inputs, 550 as matchers).
 */
interface Matcher {
  operations: string[] | undefined;
  path: string | undefined;
  model: string | undefined;
  projectId: string | undefined;
  stream: boolean;
  rule: FaultRule;
}

const matcherOf = (rule: FaultRule): Matcher => {
  const m = rule.input.match;
  return { operations: m?.operations, path: m?.path, model: m?.model, projectId: m?.project_id, stream: !!rule.input.stream, rule };
};

/** Whether a rule's matcher takes the request. */
function fits(m: Matcher, req: FaultRequest): boolean {
  return (
    (m.operations === undefined || m.operations.includes(req.operationId)) &&
    (m.path === undefined || req.path.startsWith(m.path)) &&
    (m.model === undefined || req.model === m.model) &&
    (m.projectId === undefined || req.projectId === m.projectId) &&
    (!m.stream || req.stream)
  );
}

/** A new rule of `input`, made at `now`. */
export const newFault = (input: FaultInput, now: number): FaultRule => ({
  id: newId('fault', now),
  input,
  hits: 0,
  skipped: 0,
  createdAt: now,
  expiresAt: input.ttl_seconds === undefined ? null : now + input.ttl_seconds * 1000,
});

/** Whether a rule has applied to all the requests its `count` gives it. */
export const spentFault = (r: FaultRule) => r.input.count !== undefined && r.hits >= r.input.count;

export class Faults implements FaultPolicy {
  readonly store: RuleStore<FaultInput>;

  constructor(
    db: Database,
    private readonly limits: { requestLimit: number; tokenLimit: number },
    /** The operations creating a job the control plane can fail (a `Prefer: fail-job=` applies only to those). */
    private readonly creating: () => ReadonlySet<string>,
    private readonly now: () => number,
    private readonly random = Math.random,
  ) {
    this.store = new RuleStore(db, 'fault', 'fault rule', 'faultId');
  }

  get armed(): boolean {
    return this.store.held.length > 0;
  }

  /**
   * The fault for a request: the first rule in force that matches it, else what its `Prefer` header asks, else null.
   * Answered at once unless a rule matches (only its counts, shared by every process, are waited on): rules in force
   * that match nothing cost a request no promise (issue 20: 100 of them under 5% of a whoami).
   */
  match(req: FaultRequest): Fault | null | Promise<Fault | null> {
    const matchers = this.armed ? this.inForce(this.now()) : [];
    for (let i = 0; i < matchers.length; i++) if (fits(matchers[i]!, req)) return this.matchFrom(matchers, i, req);
    return req.prefer === undefined ? null : this.preferred(req);
  }

  /** The rules in force as matchers, made again whenever the store's copy of them is replaced (an expiry replaces it). */
  private inForce(now: number): Matcher[] {
    const rules = this.store.inForce(now);
    if (this.matchers?.of !== rules) this.matchers = { of: rules, list: rules.map(matcherOf) };
    return this.matchers.list;
  }
  private matchers?: { of: FaultRule[]; list: Matcher[] };

  /** `match` from the first rule that fits the request: its `after`, `probability` and `count` decide, else the next. */
  private async matchFrom(matchers: Matcher[], first: number, req: FaultRequest): Promise<Fault | null> {
    for (let i = first; i < matchers.length; i++) {
      const m = matchers[i]!;
      if (!fits(m, req)) continue;
      const r = m.rule;
      const { input } = r;
      if (input.after && (await this.store.skip(r.id, input.after))) continue;
      if (input.probability !== undefined && this.random() >= input.probability) continue;
      if (!(await this.store.hit(r.id, input.after ?? 0, input.count))) continue;
      return this.fault(r.id, input.status, input.delay_ms, !!input.drop, input);
    }
    return req.prefer === undefined ? null : this.preferred(req);
  }

  private preferred(req: FaultRequest): Fault | null {
    const asked = parsePrefer(req.prefer!);
    if (!asked) return null;
    // As for a rule: a stream fault acts only on a stream, a job failure only on an operation creating a job.
    if (asked.stream && !req.stream) delete asked.stream;
    if (asked.fail_job && !this.creating().has(req.operationId)) delete asked.fail_job;
    if (!Object.keys(asked).length) return null;
    // A dropped connection answers no status (drop wins); either answers before the operation runs.
    if (asked.drop) delete asked.status;
    return this.fault('prefer', asked.status, asked.delay_ms, !!asked.drop, asked);
  }

  private fault(source: string, status: number | undefined, delayMs: number | undefined, drop: boolean, r: FaultInput): Fault {
    const error =
      status === undefined ? undefined : faultError(status, { code: r.code, message: r.message, retryAfterSeconds: r.retry_after_seconds, ...this.limits });
    const stream = r.stream && { afterChunks: r.stream.after_chunks, stallMs: r.stream.stall_ms ?? 0, cut: !!r.stream.cut };
    return { source, delayMs: delayMs ?? 0, drop, error, failJob: r.fail_job && failedWith(r.fail_job), stream };
  }
}
