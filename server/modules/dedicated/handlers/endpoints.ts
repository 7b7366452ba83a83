// Module `dedicated`: v2 endpoints (a stable inference address; its traffic split routes requests across its
// deployments), their usage and lifecycle events, the one-call deploy of the v1 -> v2 migration, and the endpoints
// beyond the project: those shared with its organization, and the platform's public (serverless) ones.
import type { DedicatedEndpoint, Model, Prisma } from '../../../../generated/prisma/sqlite/client/client.ts';
import { instant, iso } from '../../../core/clock.ts';
import { badRequest, notFound } from '../../../core/errors.ts';
import { checkEtag, masked, newEtag } from '../../../http/etag.ts';
import { cut, type Fields, listPage, pageSize } from '../../../http/list.ts';
import { uniquely } from '../../../http/unique.ts';
import { usage } from '../../hardware/index.ts';
import { catalogue } from '../../models/index.ts';
import type { Context } from '../../types.ts';
import { bucketStarts, granularityMs, timeRange } from '../analytics.ts';
import { recordEndpointChange } from '../events.ts';
import { unqualified, V2_LIST, v2Query } from '../listing.ts';
import { DEPLOYMENT_OWNER } from '../placement.ts';
import {
  checkAutoscaling,
  checkName,
  checkNameFree,
  checkProject,
  deploymentsOf,
  endpointNameOf,
  endpointNameTaken,
  findEndpoint,
  resolveModelAndConfig,
} from '../refs.ts';
import { createEndpointRow, endpointView, insertDeployment, mountsOf, releaseAll } from '../rows.ts';
import { type SplitEntry, trafficSteered } from '../traffic.ts';
import { deploymentUsageWire, deploymentWire, endpointEventWire, listWire, publicEndpointWire, v2EndpointWire } from '../wire.ts';

/** The migration's one call: an endpoint, a deployment (`primary` unless named) and a split sending it all traffic. */
export async function deployModel(ctx: Context<'deployModel'>) {
  const projectId = checkProject(ctx);
  const { db, clock, identity, body } = ctx;
  const endpointName = endpointNameOf(identity.projectSlug, body.endpointName, 'endpointName');
  const deploymentName = checkName(body.deploymentName ?? 'primary', 'deploymentName');
  checkAutoscaling(body, '');
  const { model, modelRevisionId, config } = await resolveModelAndConfig(db.prisma, projectId, { model: body.model, config: body.config });
  const { endpoint, deployment, volumes } = await uniquely(
    () =>
      db.write(async (tx) => {
        const endpoint = await createEndpointRow(tx, clock, projectId, endpointName, body.visibility ?? 'VISIBILITY_PRIVATE', 'endpointName');
        const deployment = await insertDeployment(tx, ctx, {
          projectId,
          endpointId: endpoint.id,
          name: deploymentName,
          model,
          modelRevisionId,
          config,
          minReplicas: body.minReplicas,
          maxReplicas: body.maxReplicas,
          trafficMode: 'TRAFFIC_MODE_LIVE',
          volumes: body.volumes,
        });
        const routed = await tx.dedicatedEndpoint.update({
          where: { id: endpoint.id },
          data: { trafficSplit: JSON.stringify([{ deploymentId: deployment.id, weight: 100 }]) },
        });
        return { endpoint: routed, deployment, volumes: (await mountsOf(tx, [deployment.id])).get(deployment.id)! };
      }),
    () => endpointNameTaken(endpointName, 'endpointName'),
  );
  return {
    endpoint: v2EndpointWire(endpoint, [deployment], identity.projectSlug),
    deployment: deploymentWire(deployment, endpoint, [deployment], ctx, volumes),
  };
}

/** What an endpoint list's `filter` and `orderBy` read: `name` (bare, or qualified by the project's slug) and the instants. */
const endpointFields = (projectSlug: string): Fields<DedicatedEndpoint> => ({
  name: { kind: 'string', get: (e) => e.name, value: (v) => unqualified(v, `${projectSlug}/`) },
  created_at: { kind: 'time', get: (e) => Number(e.createdAt) },
  updated_at: { kind: 'time', get: (e) => Number(e.updatedAt) },
});

export async function listV2Endpoints(ctx: Context<'listV2Endpoints'>) {
  const projectId = checkProject(ctx);
  const all = await ctx.db.prisma.dedicatedEndpoint.findMany({ where: { projectId } });
  const p = listPage(all, v2Query(ctx.query), { ...V2_LIST, fields: endpointFields(ctx.identity.projectSlug) });
  const data = [];
  for (const e of p.rows) data.push(await endpointView(ctx.db.prisma, e, ctx.identity.projectSlug));
  return listWire(data, p.next);
}

/** The organization's list: endpoints of several projects, so `name` is the qualified one, and the project is a field. */
const organizationFields = (slugs: Map<string, string>): Fields<DedicatedEndpoint> => ({
  name: { kind: 'string', get: (e) => `${slugs.get(e.projectId)}/${e.name}` },
  project_id: { kind: 'string', get: (e) => e.projectId, orderable: false },
  created_at: { kind: 'time', get: (e) => Number(e.createdAt) },
  updated_at: { kind: 'time', get: (e) => Number(e.updatedAt) },
});

/** The endpoints every project of the caller's organization may see: its projects' VISIBILITY_INTERNAL ones. */
export async function listOrganizationEndpoints(ctx: Context<'listOrganizationEndpoints'>) {
  const { db, identity, params } = ctx;
  if (params.organizationId !== identity.organizationId) throw notFound('organization', params.organizationId, 'organizationId');
  const projects = await db.prisma.project.findMany({ where: { organizationId: identity.organizationId } });
  const slugs = new Map(projects.map((p) => [p.id, p.slug]));
  const shared = await db.prisma.dedicatedEndpoint.findMany({ where: { projectId: { in: [...slugs.keys()] }, visibility: 'VISIBILITY_INTERNAL' } });
  const p = listPage(shared, v2Query(ctx.query), {
    ...V2_LIST,
    aliases: { ...V2_LIST.aliases, projectId: 'project_id' },
    fields: organizationFields(slugs),
  });
  const data = [];
  for (const e of p.rows) data.push(await endpointView(db.prisma, e, slugs.get(e.projectId)!));
  return listWire(data, p.next);
}

const publicFields: Fields<Model> = {
  name: { kind: 'string', get: (m) => m.id },
  created_at: { kind: 'time', get: (m) => Number(m.createdAt) },
  updated_at: { kind: 'time', get: (m) => Number(m.createdAt) },
};

/** What the platform serves to everyone: a public endpoint per serverless catalogue model. */
export async function listPublicEndpoints(ctx: Context<'listPublicEndpoints'>) {
  const served = (await catalogue(ctx.db.prisma)).filter((m) => m.serverless);
  const p = listPage(served, v2Query(ctx.query), { ...V2_LIST, fields: publicFields });
  return listWire(p.rows.map(publicEndpointWire), p.next);
}

export async function createV2Endpoint(ctx: Context<'createV2Endpoint'>) {
  const projectId = checkProject(ctx);
  const name = endpointNameOf(ctx.identity.projectSlug, ctx.body.name, 'name');
  const { visibility } = ctx.body;
  const e = await uniquely(
    () => ctx.db.write((tx) => createEndpointRow(tx, ctx.clock, projectId, name, visibility ?? 'VISIBILITY_PRIVATE', 'name')),
    () => endpointNameTaken(name, 'name'),
  );
  return v2EndpointWire(e, [], ctx.identity.projectSlug);
}

export async function getV2Endpoint(ctx: Context<'getV2Endpoint'>) {
  const projectId = checkProject(ctx);
  return endpointView(ctx.db.prisma, await findEndpoint(ctx.db.prisma, projectId, ctx.params.endpointId), ctx.identity.projectSlug);
}

/**
 * The split a PATCH asks for: deployments of this endpoint, each once, with weights that are not negative, at least
 * one positive, and a finite sum (or no entry at all, to unroute).
 */
function checkSplit(split: SplitEntry[], mine: Set<string>): SplitEntry[] {
  const seen = new Set<string>();
  split.forEach((s, i) => {
    if (!mine.has(s.deploymentId))
      throw badRequest(`'${s.deploymentId}' is not a deployment of this endpoint.`, `trafficSplit.${i}.deploymentId`, 'unknown_deployment');
    if (seen.has(s.deploymentId)) throw badRequest(`'${s.deploymentId}' appears twice in the split.`, `trafficSplit.${i}.deploymentId`, 'duplicate_deployment');
    if (s.weight < 0)
      throw badRequest('A weight must not be negative (0 leaves the deployment unrouted).', `trafficSplit.${i}.weight`, 'invalid_traffic_split');
    seen.add(s.deploymentId);
  });
  if (split.length > 0 && !split.some((s) => s.weight > 0)) {
    throw badRequest('A traffic split needs at least one positive weight (or none at all, to unroute).', 'trafficSplit', 'invalid_traffic_split');
  }
  if (!Number.isFinite(split.reduce((sum, s) => sum + s.weight, 0))) {
    throw badRequest('The weights of a traffic split must add up to a finite number.', 'trafficSplit', 'invalid_traffic_split');
  }
  return split.map((s) => ({ deploymentId: s.deploymentId, weight: s.weight }));
}

export async function updateV2Endpoint(ctx: Context<'updateV2Endpoint'>) {
  const projectId = checkProject(ctx);
  const { db, clock, identity } = ctx;
  const body = masked(ctx.body, ctx.query.updateMask, ['name', 'trafficSplit', 'visibility']);
  const name = body.name === undefined ? undefined : endpointNameOf(identity.projectSlug, body.name, 'name');
  const updated = await uniquely(
    () =>
      db.write(async (tx) => {
        const e = await findEndpoint(tx, projectId, ctx.params.endpointId);
        checkEtag(ctx.body.etag, e.etag);
        if (body.trafficSplit && e.trafficOwner) throw trafficSteered(e);
        if (name !== undefined && name !== e.name) await checkNameFree(tx, projectId, name, 'name');
        const split = body.trafficSplit && checkSplit(body.trafficSplit, new Set((await deploymentsOf(tx, e.id)).map((d) => d.id)));
        const next = await tx.dedicatedEndpoint.update({
          where: { id: e.id },
          data: {
            name: name ?? e.name,
            visibility: body.visibility ?? e.visibility,
            trafficSplit: split ? JSON.stringify(split) : e.trafficSplit,
            etag: newEtag(),
            updatedAt: instant(clock),
          },
        });
        await recordEndpointChange(tx, clock, e, next);
        return next;
      }),
    () => endpointNameTaken(name!, 'name'),
  );
  return endpointView(db.prisma, updated, identity.projectSlug);
}

export async function deleteV2Endpoint(ctx: Context<'deleteV2Endpoint'>) {
  const projectId = checkProject(ctx);
  await ctx.db.write(async (tx) => {
    const e = await findEndpoint(tx, projectId, ctx.params.endpointId);
    checkEtag(ctx.query.etag, e.etag);
    for (const d of await deploymentsOf(tx, e.id)) await releaseAll(tx, ctx.clock, d.id);
    await tx.deployment.deleteMany({ where: { endpointId: e.id } });
    await tx.endpointEvent.deleteMany({ where: { endpointId: e.id } });
    await tx.servedRequest.deleteMany({ where: { endpointId: e.id } });
    await tx.dedicatedEndpoint.delete({ where: { id: e.id } });
  });
  return {};
}

export async function getV2EndpointUsage(ctx: Context<'getV2EndpointUsage'>) {
  const projectId = checkProject(ctx);
  const { db, clock } = ctx;
  const e = await findEndpoint(db.prisma, projectId, ctx.params.endpointId);
  const deployments: ReturnType<typeof deploymentUsageWire>[] = [];
  for (const d of await deploymentsOf(db.prisma, e.id)) {
    const running = await db.prisma.hardwareReservation.count({ where: { ownerKind: DEPLOYMENT_OWNER, ownerId: d.id, endedAt: null } });
    deployments.push(deploymentUsageWire(d, running, await usage(db.prisma, clock, DEPLOYMENT_OWNER, d.id)));
  }
  const sum = (f: (u: (typeof deployments)[number]) => number) => deployments.reduce((s, u) => s + f(u), 0);
  return {
    endpointId: e.id,
    runningReplicas: sum((u) => u.runningReplicas),
    replicaMinutes: sum((u) => u.replicaMinutes),
    costCents: Math.round(sum((u) => u.costCents) * 100) / 100,
    deployments,
    ...(ctx.query.includeTimeSeries && { timeSeries: await usageSeries(ctx, e.id) }),
  };
}

/** Replicas and cost per bucket of the query's range: each reservation's overlap with each bucket, at its price. */
async function usageSeries(ctx: Context<'getV2EndpointUsage'>, endpointId: string) {
  const { db, clock, query } = ctx;
  const range = timeRange(clock, query);
  const size = granularityMs(query.granularity);
  const starts = bucketStarts(range.since, range.until, size);
  const ids = (await deploymentsOf(db.prisma, endpointId)).map((d) => d.id);
  const reservations = await db.prisma.hardwareReservation.findMany({
    where: {
      ownerKind: DEPLOYMENT_OWNER,
      ownerId: { in: ids },
      startedAt: { lt: BigInt(range.until) },
      OR: [{ endedAt: null }, { endedAt: { gt: BigInt(range.since) } }],
    },
  });
  const now = clock.now();
  return starts.map((start) => {
    const from = Math.max(start, range.since);
    const to = Math.min(start + size, range.until);
    let minutes = 0;
    let cents = 0;
    for (const r of reservations) {
      const overlap = Math.max(0, Math.min(to, Number(r.endedAt ?? BigInt(now))) - Math.max(from, Number(r.startedAt))) / 60_000;
      minutes += overlap;
      cents += overlap * r.centsPerMinute;
    }
    const span = (to - from) / 60_000;
    return {
      timestamp: iso(start),
      values: { replicas: span > 0 ? minutes / span : 0, replicaMinutes: minutes, costCents: Math.round(cents * 100) / 100 },
    };
  });
}

const LEVELS = ['LEVEL_DEBUG', 'LEVEL_INFO', 'LEVEL_WARN', 'LEVEL_ERROR'] as const;
const asList = (v: string | string[] | undefined) => (v === undefined ? undefined : ([] as string[]).concat(v));

/** The events the feed's filters keep, as a query on one endpoint's events (the operation's description says which). */
async function eventFilter(ctx: Context<'listV2EndpointEvents'>, endpointId: string): Promise<Prisma.EndpointEventWhereInput> {
  const { db, query } = ctx;
  const where: Prisma.EndpointEventWhereInput = { endpointId };
  const types = asList(query.types);
  const deploymentIds = asList(query.deploymentIds);
  if (deploymentIds) {
    const known = new Set([
      ...(await deploymentsOf(db.prisma, endpointId)).map((d) => d.id),
      ...(await db.prisma.endpointEvent.findMany({ where: { endpointId, deploymentId: { in: deploymentIds } }, select: { deploymentId: true } })).map(
        (v) => v.deploymentId,
      ),
    ]);
    const unknown = deploymentIds.find((id) => !known.has(id));
    if (unknown !== undefined) throw badRequest(`'${unknown}' is not a deployment of this endpoint.`, 'deploymentIds', 'unknown_deployment');
  }
  // Naming deployments drops the endpoint's own events, unless the kinds say to keep them.
  const kinds = asList(query.sourceKinds) ?? (deploymentIds ? ['SOURCE_KIND_DEPLOYMENT'] : ['SOURCE_KIND_ENDPOINT', 'SOURCE_KIND_DEPLOYMENT']);
  where.OR = [
    ...(kinds.includes('SOURCE_KIND_ENDPOINT') ? [{ sourceKind: 'SOURCE_KIND_ENDPOINT' }] : []),
    ...(kinds.includes('SOURCE_KIND_DEPLOYMENT')
      ? [{ sourceKind: 'SOURCE_KIND_DEPLOYMENT', ...(deploymentIds && { deploymentId: { in: deploymentIds } }) }]
      : []),
  ];
  if (types) where.type = { in: types };
  if (query.minLevel) where.level = { in: LEVELS.slice(LEVELS.indexOf(query.minLevel)) };
  if (query.since !== undefined || query.until !== undefined) {
    where.createdAt = {
      ...(query.since !== undefined && { gte: BigInt(Date.parse(query.since)) }),
      ...(query.until !== undefined && { lt: BigInt(Date.parse(query.until)) }),
    };
  }
  // No event here has a subject (there are no rollouts, experiments or conditions), so a subject keeps none.
  if (query.subjectId !== undefined) where.id = { in: [] };
  return where;
}

export async function listV2EndpointEvents(ctx: Context<'listV2EndpointEvents'>) {
  const projectId = checkProject(ctx);
  const { db, query } = ctx;
  const e = await findEndpoint(db.prisma, projectId, ctx.params.endpointId);
  // The feed is ordered by each event's position in its endpoint (seq), so its cursor is an event id turned into a seq.
  let afterSeq = 0;
  if (query.after !== undefined) {
    const cursor = await db.prisma.endpointEvent.findFirst({ where: { id: query.after, endpointId: e.id } });
    if (!cursor) throw badRequest(`'${query.after}' is not a cursor of this endpoint's events.`, 'after', 'invalid_cursor');
    afterSeq = cursor.seq;
  }
  const limit = pageSize(query.limit);
  const where = await eventFilter(ctx, e.id);
  const rows = await db.prisma.endpointEvent.findMany({ where: { ...where, seq: { gt: afterSeq } }, orderBy: { seq: 'asc' }, take: limit + 1 });
  const p = cut(rows, limit);
  return listWire(
    p.rows.map((v) => endpointEventWire(v, ctx.identity.projectSlug)),
    p.next,
  );
}
