// What v2 endpoints actually served: one ServedRequest row per request a deployment answered (recorded by the
// inference module when the answer ends), and the figures read from them. Analytics, a rollout's metric rules, an
// A/B experiment's members and the autoscaler all read these, so every number they show comes from real traffic.

import type { Clock } from '../../core/clock.ts';
import { newId } from '../../core/ids.ts';
import { type Database, type Db, insertRows, type Tx } from '../../db/index.ts';
import { enqueue, type WorkHandler } from '../../runner/runner.ts';

export interface Served {
  projectId: string;
  endpointId: string;
  deploymentId: string;
  role?: 'primary' | 'shadow';
  status: number;
  latencyMs: number;
  promptTokens?: number;
  completionTokens?: number;
  at: number;
  /** A shadow copy's experiment, and whether the target answered what the primary did (null: nothing to compare). */
  experimentId?: string;
  matched?: boolean | null;
}

const rowOf = (s: Served) => ({
  id: newId('srv', s.at),
  projectId: s.projectId,
  endpointId: s.endpointId,
  deploymentId: s.deploymentId,
  role: s.role ?? 'primary',
  status: s.status,
  latencyMs: Math.max(0, Math.round(s.latencyMs)),
  promptTokens: s.promptTokens ?? 0,
  completionTokens: s.completionTokens ?? 0,
  createdAt: BigInt(s.at),
  experimentId: s.experimentId ?? null,
  matched: s.matched ?? null,
});

export async function recordServed(db: Db | Tx, s: Served): Promise<void> {
  await db.servedRequest.create({ data: rowOf(s) });
}

/**
 * Several rows in one statement: the shadow copies' outcomes, recorded in batches off the callers' path (a written-out
 * INSERT: createMany's plan compiled at every batch was most of what a shadow copy cost, db/rows.ts).
 */
export async function recordServedMany(db: Db | Tx, rows: Served[]): Promise<void> {
  await insertRows(db, 'ServedRequest', rows.map(rowOf));
}

export interface ServedFigures {
  requests: number;
  /** Answers with a 5xx status (the server's failures; a caller's 4xx is not the deployment's error). */
  errors: number;
  /** errors / requests; 0 when there were none. */
  errorRate: number;
  /** Latency percentiles in ms (nearest rank); 0 when there were no requests. */
  latencyMs: { p50: number; p90: number; p95: number; p99: number; mean: number };
  promptTokens: number;
  completionTokens: number;
}

export interface ServedQuery {
  endpointId: string;
  deploymentId?: string;
  role?: 'primary' | 'shadow';
  /** Epoch ms, inclusive. */
  since: number;
  /** Epoch ms, exclusive. */
  until: number;
}

/** The rows of a window, oldest first (latency and status only are read by most callers; all columns are small). */
export function servedRows(db: Db | Tx, q: ServedQuery) {
  return db.servedRequest.findMany({
    where: {
      endpointId: q.endpointId,
      ...(q.deploymentId ? { deploymentId: q.deploymentId } : {}),
      role: q.role ?? 'primary',
      createdAt: { gte: BigInt(q.since), lt: BigInt(q.until) },
    },
    select: { deploymentId: true, status: true, latencyMs: true, promptTokens: true, completionTokens: true, createdAt: true },
    orderBy: { createdAt: 'asc' },
  });
}

/** A window's shadow copies of an endpoint (oldest first), with the experiment that made each and its comparison. */
export function shadowRows(db: Db | Tx, q: Omit<ServedQuery, 'role'> & { experimentId?: string }) {
  return db.servedRequest.findMany({
    where: {
      endpointId: q.endpointId,
      role: 'shadow',
      ...(q.deploymentId ? { deploymentId: q.deploymentId } : {}),
      ...(q.experimentId ? { experimentId: q.experimentId } : {}),
      createdAt: { gte: BigInt(q.since), lt: BigInt(q.until) },
    },
    select: { deploymentId: true, status: true, latencyMs: true, promptTokens: true, completionTokens: true, createdAt: true, matched: true },
    orderBy: { createdAt: 'asc' },
  });
}

/** Nearest-rank percentile of sorted values (0 of none). */
export const nearestRank = (sorted: number[], p: number) =>
  sorted.length ? sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]! : 0;

/** The figures of a set of rows. */
export function figures(rows: { status: number; latencyMs: number; promptTokens: number; completionTokens: number }[]): ServedFigures {
  const latencies = rows.map((r) => r.latencyMs).sort((a, b) => a - b);
  const errors = rows.filter((r) => r.status >= 500).length;
  return {
    requests: rows.length,
    errors,
    errorRate: rows.length ? errors / rows.length : 0,
    latencyMs: {
      p50: nearestRank(latencies, 50),
      p90: nearestRank(latencies, 90),
      p95: nearestRank(latencies, 95),
      p99: nearestRank(latencies, 99),
      mean: rows.length ? latencies.reduce((a, b) => a + b, 0) / rows.length : 0,
    },
    promptTokens: rows.reduce((n, r) => n + r.promptTokens, 0),
    completionTokens: rows.reduce((n, r) => n + r.completionTokens, 0),
  };
}

/** The figures of one window of an endpoint (or one of its deployments). */
export async function servedFigures(db: Db | Tx, q: ServedQuery): Promise<ServedFigures> {
  return figures(await servedRows(db, q));
}

/** How long rows are kept: the longest range analytics answers (31 days). Older rows are pruned once a day. */
export const SERVED_RETENTION_MS = 31 * 86_400_000;
export const RETENTION_KIND = 'served_retention';
const RETENTION_EVERY_MS = 86_400_000;

/** Starts an endpoint's daily pruning of its old rows (with the endpoint's creation: one chain per endpoint). */
export async function startRetention(tx: Tx, clock: Clock, endpoint: { id: string; projectId: string }): Promise<void> {
  await enqueue(tx, clock, { kind: RETENTION_KIND, subjectId: endpoint.id, projectId: endpoint.projectId, delayMs: RETENTION_EVERY_MS });
}

/** Prunes an endpoint's rows older than SERVED_RETENTION_MS and schedules the next pruning; the chain ends with the endpoint. */
export function retentionWork(services: { db: Database; clock: Clock }): WorkHandler {
  return {
    run: async (item) => ({
      apply: async (tx) => {
        const e = await tx.dedicatedEndpoint.findUnique({ where: { id: item.subjectId }, select: { id: true, projectId: true } });
        if (!e) return;
        await tx.servedRequest.deleteMany({ where: { endpointId: e.id, createdAt: { lt: BigInt(services.clock.now() - SERVED_RETENTION_MS) } } });
        await startRetention(tx, services.clock, e);
      },
    }),
  };
}
