// Module `dedicated`: an endpoint's analytics, counted from the requests its deployments answered (served.ts) over a
// time range, per deployment and, when asked, per time bucket (analytics.ts decides the range and the buckets).
import { badRequest } from '../../../core/errors.ts';
import type { Context, Wire } from '../../types.ts';
import { bucketed, bucketStarts, granularityMs, type Row, summarize, timeRange } from '../analytics.ts';
import { checkProject, deploymentsOf, findEndpoint } from '../refs.ts';
import { servedRows, shadowRows } from '../served.ts';
import { analyticsWire, deploymentAnalyticsWire, deploymentMetricsWire, timeSeriesPointWire } from '../wire.ts';

export async function getV2EndpointAnalytics(ctx: Context<'getV2EndpointAnalytics'>) {
  const projectId = checkProject(ctx);
  const { db, clock, query } = ctx;
  const e = await findEndpoint(db.prisma, projectId, ctx.params.endpointId);
  const range = timeRange(clock, query);
  // Checked before reading rows: a bad granularity or too many buckets is refused whatever the traffic.
  const series = query.includeTimeSeries ? { size: granularityMs(query.granularity), starts: [] as number[] } : null;
  if (series) series.starts = bucketStarts(range.since, range.until, series.size);
  else if (query.granularity !== undefined) granularityMs(query.granularity);

  const rows: Row[] = await servedRows(db.prisma, { endpointId: e.id, deploymentId: query.deploymentId, since: range.since, until: range.until });
  const current = (await deploymentsOf(db.prisma, e.id)).map((d) => d.id);
  let ids = [...current, ...new Set(rows.map((r) => r.deploymentId).filter((id) => !current.includes(id)))];
  if (query.deploymentId !== undefined) {
    const known =
      current.includes(query.deploymentId) || (await db.prisma.servedRequest.findFirst({ where: { endpointId: e.id, deploymentId: query.deploymentId } }));
    if (!known) throw badRequest(`'${query.deploymentId}' is not a deployment of this endpoint.`, 'deploymentId', 'unknown_deployment');
    ids = [query.deploymentId];
  }

  const ms = range.until - range.since;
  const seriesOf = (of: Row[]): Wire<'TimeSeriesDataPoint'>[] | null =>
    series && bucketed(of, series.starts, series.size, range.since, range.until).map((b) => timeSeriesPointWire(b.start, summarize(b.rows, b.ms)));
  const byDeployment = new Map<string, Row[]>(ids.map((id) => [id, []]));
  for (const r of rows) byDeployment.get(r.deploymentId)?.push(r);
  const entry = (id: string, of: Row[], mode: 'TRAFFIC_MODE_LIVE' | 'TRAFFIC_MODE_SHADOW') =>
    deploymentAnalyticsWire(deploymentMetricsWire(e.id, id, range, summarize(of, ms)), seriesOf(of), mode);
  const live = ids.map((id) => entry(id, byDeployment.get(id)!, 'TRAFFIC_MODE_LIVE'));
  // The copies shadow experiments made, apart: one entry per deployment that received any in the range.
  const copies = new Map<string, Row[]>();
  for (const r of await shadowRows(db.prisma, { endpointId: e.id, deploymentId: query.deploymentId, since: range.since, until: range.until })) {
    if (!copies.has(r.deploymentId)) copies.set(r.deploymentId, []);
    copies.get(r.deploymentId)!.push(r);
  }
  const shadow = [...copies.keys()].sort().map((id) => entry(id, copies.get(id)!, 'TRAFFIC_MODE_SHADOW'));
  return analyticsWire(e.id, range, summarize(rows, ms), seriesOf(rows), live, shadow);
}
