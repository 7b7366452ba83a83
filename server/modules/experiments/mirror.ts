// Module `experiments`: shadow traffic. After a v2 endpoint answered a request (inference calls `mirror` once, when
// the answer ends), each shadow experiment of the endpoint samples it and each of its targets gets a copy, run on
// the engine the target's model is routed to. Everything here is off the caller's path: the copy waits in a
// bounded in-process queue (dropped and counted when full), runs at most RUNNING at once, and its outcome, success
// or failure, is recorded as a ServedRequest with role `shadow`. Nothing a target does reaches the caller.
import { createHash } from 'node:crypto';
import { ApiError } from '../../core/errors.ts';
import { newId } from '../../core/ids.ts';
import type { Database } from '../../db/index.ts';
import { localTextEngine, type TextOperation, upstreamTextEngine } from '../../engines/chat.ts';
import { recordServedMany, type Served } from '../dedicated/index.ts';
import type { Services } from '../types.ts';
import type { Sampling } from './rules.ts';
import { type Sampler, type Slide, sampler } from './sampling.ts';

/** Copies waiting at most (then dropped and counted), and copies running at once. */
export const WAITING = 1000;
const RUNNING = 8;
/** The longest a copy waits for an upstream engine. */
export const SHADOW_TIMEOUT_MS = 30_000;
/** How long another process's change to an endpoint's experiments (or a target's state) may take to apply here. */
const PLAN_TTL_MS = 1000;
/** Outcomes are written in batches: at most this long after the copy ended, or at once when this many wait. */
const FLUSH_MS = 200;
const FLUSH_ROWS = 200;

/** What inference tells about a request a v2 deployment answered. */
export interface Answered {
  op: TextOperation;
  body: Record<string, unknown>;
  projectId: string;
  endpointId: string;
  /** The deployment that answered. */
  servedBy: string;
  /** A LoRA adapter's name, when the request named one: such requests are not copied. */
  adapter?: string;
  /** The primary's answer (AnswerText), when it answered whole: what each target's answer is compared with. */
  answer?: string;
}

/**
 * An answer as compared between a primary and its shadow copies: each choice's text (a chat message's content and
 * its tool calls' names and arguments, or a completion's text), read from a whole body or from a stream's chunks.
 */
export class AnswerText {
  private readonly choices: string[][] = [];

  // biome-ignore lint/suspicious/noExplicitAny: a chat completion, a completion, or one of their chunks.
  add(body: any): this {
    for (const c of body?.choices ?? []) {
      const i = c.index ?? 0;
      this.choices[i] ??= [];
      const parts = this.choices[i];
      const m = c.message ?? c.delta;
      if (typeof m?.content === 'string') parts.push(m.content);
      for (const call of m?.tool_calls ?? []) parts.push(`${call.function?.name ?? ''}${call.function?.arguments ?? ''}`);
      if (typeof c.text === 'string') parts.push(c.text);
    }
    return this;
  }

  get value(): string {
    return JSON.stringify(this.choices.map((parts) => parts.join('')));
  }
}

interface PlannedTarget {
  deploymentId: string;
  modelId: string;
  ready: boolean;
}

interface PlannedExperiment {
  id: string;
  sampling: string;
  targets: PlannedTarget[];
}

interface Copy {
  op: TextOperation;
  body: Record<string, unknown>;
  projectId: string;
  endpointId: string;
  target: PlannedTarget;
  experimentId: string;
  answer?: string;
}

export interface ShadowCounts {
  /** Copies run (whatever their outcome) and copies dropped because the queue was full. */
  mirrored: number;
  dropped: number;
  waiting: number;
  running: number;
}

export class Shadows {
  private readonly plans = new Map<string, { at: number; plan?: PlannedExperiment[]; loading?: Promise<PlannedExperiment[]> }>();
  /** Per endpoint, per experiment: the sampler and the sampling it was made for (its counters live as long). */
  private readonly samplers = new Map<string, Map<string, { sampling: string; sampler: Sampler }>>();
  private readonly queue: Copy[] = [];
  private running = 0;
  /** Samplings waiting on a shared count. */
  private deciding = 0;
  private readonly outcomes: Served[] = [];
  private flushing: Promise<void> | null = null;
  private flushTimer: NodeJS.Timeout | null = null;
  readonly counts = { mirrored: 0, dropped: 0 };

  constructor(
    private readonly services: Services,
    private readonly limits = { waiting: WAITING, running: RUNNING },
  ) {}

  /** Forgets what this process knows of an endpoint's experiments (after a change made here). */
  forget(endpointId: string): void {
    this.plans.delete(endpointId);
  }

  offer(a: Answered): void {
    if (a.adapter !== undefined) return;
    const cached = this.plans.get(a.endpointId);
    if (cached?.plan && performance.now() - cached.at < PLAN_TTL_MS) {
      this.decide(a, cached.plan);
      return;
    }
    const entry = cached?.loading ? cached : { at: performance.now(), loading: this.load(a.endpointId) };
    this.plans.set(a.endpointId, entry);
    entry.loading!.then(
      (plan) => {
        if (this.plans.get(a.endpointId) === entry) {
          this.plans.set(a.endpointId, { at: entry.at, plan });
          // Deleted (or target-less) experiments' counters go.
          const kept = this.samplers.get(a.endpointId);
          for (const id of kept?.keys() ?? []) if (!plan.some((e) => e.id === id)) kept!.delete(id);
          if (kept?.size === 0) this.samplers.delete(a.endpointId);
        }
        this.decide(a, plan);
      },
      () => {
        if (this.plans.get(a.endpointId) === entry) this.plans.delete(a.endpointId);
      },
    );
  }

  private async load(endpointId: string): Promise<PlannedExperiment[]> {
    const { prisma } = this.services.db;
    const experiments = await prisma.shadowExperiment.findMany({ where: { endpointId }, orderBy: { id: 'asc' }, select: { id: true, sampling: true } });
    if (experiments.length === 0) return [];
    const targets = await prisma.shadowTarget.findMany({
      where: { experimentId: { in: experiments.map((e) => e.id) } },
      orderBy: { id: 'asc' },
      select: { experimentId: true, targetDeploymentId: true },
    });
    const deployments = await prisma.deployment.findMany({
      where: { endpointId, id: { in: targets.map((t) => t.targetDeploymentId) } },
      select: { id: true, modelId: true, state: true },
    });
    const byId = new Map(deployments.map((d) => [d.id, { deploymentId: d.id, modelId: d.modelId, ready: d.state === 'DEPLOYMENT_STATE_READY' }]));
    return experiments
      .map((e) => ({
        ...e,
        // A target whose deployment was deleted has no one to record for: it is skipped.
        targets: targets.filter((t) => t.experimentId === e.id && byId.has(t.targetDeploymentId)).map((t) => byId.get(t.targetDeploymentId)!),
      }))
      .filter((e) => e.targets.length > 0);
  }

  private decide(a: Answered, plan: PlannedExperiment[]): void {
    if (plan.length === 0) return;
    let mine = this.samplers.get(a.endpointId);
    if (!mine) {
      mine = new Map();
      this.samplers.set(a.endpointId, mine);
    }
    for (const e of plan) {
      let s = mine.get(e.id);
      if (s?.sampling !== e.sampling) {
        // A shared count is the experiment's under this sampling: a changed sampling counts afresh.
        const counts = `shadow:${e.id}:${createHash('sha1').update(e.sampling).digest('hex').slice(0, 12)}`;
        const slide: Slide = (key, seconds, cap) => this.services.limits.slide(`${counts}:${key}`, seconds, cap);
        s = { sampling: e.sampling, sampler: sampler(JSON.parse(e.sampling) as Sampling, slide) };
        mine.set(e.id, s);
      }
      const taken = s.sampler.take(a.body);
      if (taken === true) this.copy(a, e);
      else if (taken !== false) {
        this.deciding++;
        taken
          .then(
            (yes) => {
              if (yes) this.copy(a, e);
            },
            (err) => this.services.log.warn({ err, experimentId: e.id }, 'shadow sampling could not count this request: not copied'),
          )
          .finally(() => this.deciding--);
      }
    }
  }

  private copy(a: Answered, e: PlannedExperiment): void {
    for (const target of e.targets) {
      // A copy to the deployment that answered would only repeat its answer.
      if (target.deploymentId !== a.servedBy) {
        this.enqueue({ op: a.op, body: a.body, projectId: a.projectId, endpointId: a.endpointId, target, experimentId: e.id, answer: a.answer });
      }
    }
  }

  private enqueue(c: Copy): void {
    if (this.queue.length >= this.limits.waiting) {
      // Counted, and told to the operator at the first drop and every thousandth after (a warning: no fault here).
      if (this.counts.dropped++ % 1000 === 0) {
        this.services.log.warn({ endpointId: c.endpointId, dropped: this.counts.dropped }, 'shadow copies dropped: the queue is full');
      }
      return;
    }
    this.queue.push(c);
    setImmediate(() => this.pump());
  }

  private pump(): void {
    while (this.running < this.limits.running && this.queue.length > 0) {
      const c = this.queue.shift()!;
      this.running++;
      void this.run(c).finally(() => {
        this.running--;
        this.counts.mirrored++;
        this.pump();
      });
    }
  }

  /** Runs one copy and records its outcome; never throws. */
  private async run(c: Copy): Promise<void> {
    const { engines, clock } = this.services;
    const started = performance.now();
    let status = 200;
    let usage: { prompt_tokens?: number; completion_tokens?: number } | undefined;
    const answer = new AnswerText();
    try {
      if (!c.target.ready) status = 503;
      else {
        const route = engines.routeFor('chat', c.target.modelId);
        const engine =
          route.engine === 'local'
            ? localTextEngine
            : upstreamTextEngine({ ...route, timeoutMs: Math.min(route.timeoutMs ?? SHADOW_TIMEOUT_MS, SHADOW_TIMEOUT_MS) });
        const now = clock.now();
        const outcome = await engine.run(c.op, c.body, {
          requested: String(c.body.model),
          model: c.target.modelId,
          contextLength: null,
          id: newId(c.op === 'chat' ? 'chatcmpl' : 'cmpl', now),
          created: Math.floor(now / 1000),
          warnings: [],
        });
        if (outcome.kind === 'json') {
          answer.add(outcome.body);
          usage = outcome.body.usage;
        } else
          for await (const chunk of outcome.chunks) {
            answer.add(chunk);
            if (chunk.usage) usage = chunk.usage;
          }
      }
    } catch (err) {
      // The target's outcome, not a server fault: recorded, not logged.
      status = err instanceof ApiError ? err.status : 500;
    }
    this.outcomes.push({
      projectId: c.projectId,
      endpointId: c.endpointId,
      deploymentId: c.target.deploymentId,
      role: 'shadow',
      status,
      latencyMs: performance.now() - started,
      promptTokens: usage?.prompt_tokens,
      completionTokens: usage?.completion_tokens,
      at: clock.now(),
      experimentId: c.experimentId,
      // Compared only when both answered whole.
      matched: status === 200 && c.answer !== undefined ? answer.value === c.answer : null,
    });
    if (this.outcomes.length >= FLUSH_ROWS) void this.flush();
    else if (!this.flushTimer) {
      this.flushTimer = setTimeout(() => void this.flush(), FLUSH_MS);
      this.flushTimer.unref();
    }
  }

  /** Writes the outcomes gathered so far in one statement (one write at a time). */
  private flush(): Promise<void> {
    if (this.flushTimer) clearTimeout(this.flushTimer);
    this.flushTimer = null;
    if (this.flushing) return this.flushing;
    const rows = this.outcomes.splice(0);
    if (rows.length === 0) return Promise.resolve();
    this.flushing = this.services.db
      .writeStatement((tx) => recordServedMany(tx, rows))
      .catch((err: Error) => this.services.log.warn({ rows: rows.length, reason: err.message }, 'shadow copies could not be recorded'))
      .finally(() => {
        this.flushing = null;
        if (this.outcomes.length > 0 && !this.flushTimer) void this.flush();
      });
    return this.flushing;
  }

  snapshot(): ShadowCounts {
    return { ...this.counts, waiting: this.queue.length, running: this.running };
  }

  /** Resolves once no copy waits or runs and every outcome is written (for tests and shutdown). */
  async idle(): Promise<void> {
    while (this.deciding > 0 || this.running > 0 || this.queue.length > 0 || this.outcomes.length > 0 || this.flushing) {
      if (this.outcomes.length > 0 && this.deciding === 0 && this.running === 0 && this.queue.length === 0) await this.flush();
      else await new Promise((r) => setTimeout(r, 10));
    }
  }
}

const byDatabase = new WeakMap<Database, Shadows>();

export function shadowsOf(services: Services): Shadows {
  let s = byDatabase.get(services.db);
  if (!s) {
    s = new Shadows(services);
    byDatabase.set(services.db, s);
  }
  return s;
}

/** Called by inference once per answered request of a v2 endpoint; returns at once (the copies run later). */
export function mirror(services: Services, answered: Answered): void {
  shadowsOf(services).offer(answered);
}
