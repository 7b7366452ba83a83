// The console's reads (the Control tag): a view across every project that no project key can have (projects, masked
// keys, resources with their state timelines, the queue, endpoints, experiments with their results), a fine-tune's
// metrics and a video's file for any project. Read-only: the page (server/console/) changes things only through the
// other control operations.
import { join } from 'node:path';
import { iso } from '../../core/clock.ts';
import { conflict, notFound } from '../../core/errors.ts';
import { reply } from '../../http/reply.ts';
import { timeRange } from '../dedicated/index.ts';
import { experimentsReport } from '../experiments/index.ts';
import type { Context, Wire } from '../types.ts';

type Resource = Wire<'ControlResource'>;
type Step = Resource['timeline'][number];

const step = (at: bigint | number, event: string, message?: string | null): Step => (message ? { at: iso(at), event, message } : { at: iso(at), event });
const resource = (
  kind: Resource['kind'],
  r: { id: string; projectId: string; createdAt: bigint },
  state: string,
  label: string,
  timeline: Step[],
): Resource => ({
  kind,
  id: r.id,
  project_id: r.projectId,
  state,
  label,
  created_at: iso(r.createdAt),
  timeline,
});
const parse = <T>(text: string | null, fallback: T): T => (text ? (JSON.parse(text) as T) : fallback);

/** Every project's experiments with their results (the dashboard's comparisons, across projects). */
export function getControlExperiments({ db, clock, query }: Context<'getControlExperiments'>) {
  return experimentsReport(db.prisma, timeRange(clock, query), query.limit ?? 100);
}

export async function getControlOverview({ db, query }: Context<'getControlOverview'>) {
  const p = db.prisma;
  const take = query.limit ?? 100;
  const newest = { orderBy: { createdAt: 'desc' as const }, take };
  const [projects, files, fineTunes, videos, evaluations, jobs, v1Endpoints, endpoints, deployments, modelUploads, remoteUploads, rollouts, remediations] =
    await Promise.all([
      p.project.findMany({ orderBy: { createdAt: 'asc' }, include: { organization: true, apiKeys: { orderBy: { createdAt: 'asc' } } } }),
      p.file.findMany(newest),
      p.fineTune.findMany(newest),
      p.video.findMany(newest),
      p.evaluationJob.findMany(newest),
      p.queueJob.findMany(newest),
      p.v1Endpoint.findMany(newest),
      p.dedicatedEndpoint.findMany(newest),
      p.deployment.findMany(newest),
      p.modelUploadJob.findMany(newest),
      p.remoteUpload.findMany(newest),
      p.rollout.findMany(newest),
      p.remediation.findMany({ orderBy: { createTime: 'desc' }, take }),
    ]);
  const [ftEvents, endpointEvents, queue, endpointDeployments, uploadEvents, rolloutSteps] = await Promise.all([
    p.fineTuneEvent.findMany({ where: { jobId: { in: fineTunes.map((f) => f.id) } }, orderBy: { createdAt: 'asc' } }),
    p.endpointEvent.findMany({ where: { deploymentId: { in: deployments.map((d) => d.id) } }, orderBy: { seq: 'asc' } }),
    p.queueJob.groupBy({ by: ['model', 'status'], _count: { _all: true }, _sum: { retries: true } }),
    p.deployment.findMany({ where: { endpointId: { in: endpoints.map((e) => e.id) } }, orderBy: { createdAt: 'asc' } }),
    p.remoteUploadEvent.findMany({ where: { uploadId: { in: remoteUploads.map((u) => u.id) } }, orderBy: { createdAt: 'asc' } }),
    p.rolloutStep.findMany({ where: { rolloutId: { in: rollouts.map((r) => r.id) } }, orderBy: { stepIndex: 'asc' } }),
  ]);
  const byKey = <T, K>(rows: T[], key: (r: T) => K) => {
    const m = new Map<K, T[]>();
    for (const r of rows) {
      const list = m.get(key(r));
      if (list) list.push(r);
      else m.set(key(r), [r]);
    }
    return m;
  };
  const eventsOf = byKey(ftEvents, (e) => e.jobId);
  const endpointEventsOf = byKey(endpointEvents, (e) => e.deploymentId);
  const uploadEventsOf = byKey(uploadEvents, (e) => e.uploadId);
  const stepsOf = byKey(rolloutSteps, (r) => r.rolloutId);
  const when = (at: bigint | null, event: string, message?: string | null) => (at === null ? [] : [step(at, event, message)]);
  const resources: Resource[] = [
    ...files.map((f) => resource('file', f, f.status, f.filename, [step(f.createdAt, 'uploaded')])),
    ...fineTunes.map((f) =>
      resource(
        'fine_tune',
        f,
        f.status,
        f.model,
        (eventsOf.get(f.id) ?? []).map((e) => step(e.createdAt, e.type, e.message)),
      ),
    ),
    ...videos.map((v) => resource('video', v, v.status, v.model, [step(v.createdAt, 'in_progress'), ...when(v.completedAt, v.status, v.errorMessage)])),
    ...evaluations.map((e) =>
      resource(
        'evaluation',
        e,
        e.status,
        e.type,
        parse<{ status: string; message: string; at: number }[]>(e.statusUpdates, []).map((u) => step(u.at, u.status, u.message)),
      ),
    ),
    ...jobs.map((j) =>
      resource('queue_job', j, j.status, j.model, [step(j.createdAt, 'pending'), ...when(j.claimedAt, 'running'), ...when(j.doneAt, j.status)]),
    ),
    ...v1Endpoints.map((e) => resource('endpoint', e, e.state, e.name, [step(e.createdAt, 'created'), step(e.updatedAt, e.state)])),
    ...deployments.map((d) =>
      resource(
        'deployment',
        d,
        d.state,
        `${d.name} (${d.modelId})`,
        (endpointEventsOf.get(d.id) ?? []).map((e) => step(e.createdAt, e.status ?? e.type, e.message)),
      ),
    ),
    ...modelUploads.map((u) =>
      resource(
        'model_upload',
        u,
        u.status,
        u.modelId,
        parse<{ status: string; message: string; timestamp: string }[]>(u.statusUpdates, []).map((x) => step(Date.parse(x.timestamp), x.status, x.message)),
      ),
    ),
    ...remoteUploads.map((u) =>
      resource(
        'remote_upload',
        u,
        u.status,
        u.modelId,
        (uploadEventsOf.get(u.id) ?? []).map((e) => step(e.createdAt, e.type, e.message)),
      ),
    ),
    ...rollouts.map((r) =>
      resource('rollout', r, r.state, `${r.sourceDeploymentId} -> ${r.targetDeploymentId}`, [
        step(r.createdAt, 'created'),
        ...(stepsOf.get(r.id) ?? []).flatMap((x) => [
          ...when(x.startedAt, `step ${x.stepIndex} (${x.trafficPercent}%)`),
          ...when(x.completedAt, `step ${x.stepIndex}: ${x.state}`, x.failureReason),
        ]),
      ]),
    ),
    ...remediations.map((r) =>
      resource('remediation', { ...r, createdAt: r.createTime }, r.state, `${r.clusterId} / ${r.instanceId}`, [
        step(r.createTime, 'requested', r.reason),
        ...when(r.reviewTime, 'reviewed', r.reviewComment),
        ...when(r.startTime, 'started'),
        ...when(r.endTime, r.state, r.errorMessage),
      ]),
    ),
  ];
  const models = byKey(queue, (q) => q.model);
  return {
    projects: projects.map((pr) => ({
      id: pr.id,
      name: pr.name,
      slug: pr.slug,
      organization_id: pr.organizationId,
      organization_name: pr.organization.name,
      keys: pr.apiKeys.map((k) => ({
        id: k.id,
        name: k.name,
        masked: `${k.prefix}…`,
        development: k.development,
        created_at: iso(k.createdAt),
        revoked_at: k.revokedAt === null ? null : iso(k.revokedAt),
      })),
    })),
    resources,
    queue: [...models].map(([model, rows]) => {
      const count = (...statuses: string[]) => rows.filter((r) => statuses.includes(r.status)).reduce((n, r) => n + r._count._all, 0);
      return {
        model,
        depth: count('pending'),
        claimed: count('running'),
        done: count('done', 'failed', 'canceled'),
        retries: rows.reduce((n, r) => n + (r._sum.retries ?? 0), 0),
      };
    }),
    endpoints: endpoints.map((e) => ({
      id: e.id,
      project_id: e.projectId,
      name: e.name,
      traffic_split: parse<unknown[]>(e.trafficSplit, []),
      deployments: endpointDeployments
        .filter((d) => d.endpointId === e.id)
        .map((d) => ({
          id: d.id,
          name: d.name,
          model: d.modelId,
          state: d.state,
          ready_replicas: d.readyReplicas,
          min_replicas: d.minReplicas,
          max_replicas: d.maxReplicas,
        })),
    })),
  };
}

export async function getControlFineTuneMetrics({ db, params }: Context<'getControlFineTuneMetrics'>) {
  const job = await db.prisma.fineTune.findUnique({ where: { id: params.fineTuneId } });
  if (!job) throw notFound('fine-tune', params.fineTuneId, 'fineTuneId');
  return { id: job.id, project_id: job.projectId, status: job.status, metrics: parse<Record<string, number>[]>(job.metrics, []) };
}

export async function getControlVideoContent({ db, config, params }: Context<'getControlVideoContent'>) {
  const v = await db.prisma.video.findUnique({ where: { id: params.videoId } });
  if (!v) throw notFound('video', params.videoId, 'videoId');
  if (v.status !== 'completed' || !v.file)
    throw conflict(`Video '${v.id}' is ${v.status}: it has no content${v.status === 'in_progress' ? ' yet' : ''}.`, 'video_not_ready', 'videoId');
  return reply.file(join(config.dataDir, v.file), v.file.endsWith('.webm') ? 'video/webm' : 'video/mp4');
}
