// Module `experiments`: what experiments measured over a time range. A shadow experiment's report (its callers'
// figures, each target's copies and matches) is one function for its project's operation and the console's read
// across projects; an A/B experiment's is each member's live figures, the comparison it is for.
import type { ShadowExperiment } from '../../../generated/prisma/sqlite/client/client.ts';
import { iso } from '../../core/clock.ts';
import type { Db } from '../../db/index.ts';
import { figures, servedRows, shadowRows } from '../dedicated/index.ts';
import type { Wire } from '../types.ts';
import { targetsOf } from './refs.ts';
import type { Member } from './rules.ts';
import { abExperimentWire, figuresWire, shadowExperimentWire, shadowResultsWire } from './wire.ts';

type Range = { since: number; until: number };

/** One shadow experiment's results over the range (`served`: its endpoint's live requests in it, when already read). */
export async function shadowResults(
  db: Db,
  x: ShadowExperiment,
  range: Range,
  served = servedRows(db, { endpointId: x.endpointId, since: range.since, until: range.until }),
): Promise<Wire<'ShadowExperimentResults'>> {
  const window = { endpointId: x.endpointId, since: range.since, until: range.until };
  const [primary, copies, targets] = await Promise.all([served, shadowRows(db, { ...window, experimentId: x.id }), targetsOf(db, x.id)]);
  const results = targets.map((t) => {
    const of = copies.filter((r) => r.deploymentId === t.targetDeploymentId);
    const compared = of.filter((r) => r.matched !== null);
    return { target: t, figures: figures(of), compared: compared.length, matched: compared.filter((r) => r.matched).length };
  });
  return shadowResultsWire(x, range, figures(primary), results);
}

/** Every project's newest `take` experiments of each kind (newest first), with their results over the range. */
export async function experimentsReport(db: Db, range: Range, take: number): Promise<Wire<'ControlExperiments'>> {
  const newest = { orderBy: { createdAt: 'desc' as const }, take };
  const [abs, shadows] = await Promise.all([db.abExperiment.findMany(newest), db.shadowExperiment.findMany(newest)]);
  const endpoints = await db.dedicatedEndpoint.findMany({
    where: { id: { in: [...new Set([...abs, ...shadows].map((x) => x.endpointId))] } },
    select: { id: true, name: true, projectId: true },
  });
  const projects = await db.project.findMany({ where: { id: { in: [...new Set(endpoints.map((e) => e.projectId))] } }, select: { id: true, slug: true } });
  const slugOf = new Map(projects.map((p) => [p.id, p.slug]));
  // The name callers give as `model`, as the endpoint's own wire shape has it.
  const nameOf = new Map(endpoints.map((e) => [e.id, `${slugOf.get(e.projectId)}/${e.name}`]));
  // Each endpoint's live requests read once, however many of its experiments are listed.
  const served = new Map<string, ReturnType<typeof servedRows>>();
  const servedOn = (endpointId: string) => {
    if (!served.has(endpointId)) served.set(endpointId, servedRows(db, { endpointId, since: range.since, until: range.until }));
    return served.get(endpointId)!;
  };
  const [abExperiments, shadowExperiments] = await Promise.all([
    Promise.all(
      abs.map(async (x) => {
        const members = JSON.parse(x.members) as Member[];
        const rows = await servedOn(x.endpointId);
        return {
          experiment: abExperimentWire(x),
          endpointName: nameOf.get(x.endpointId) ?? x.endpointId,
          members: members.map((member) => ({ member, results: figuresWire(figures(rows.filter((r) => r.deploymentId === member.deploymentId))) })),
        };
      }),
    ),
    Promise.all(
      shadows.map(async (x) => ({
        experiment: shadowExperimentWire(x, await targetsOf(db, x.id)),
        endpointName: nameOf.get(x.endpointId) ?? x.endpointId,
        results: await shadowResults(db, x, range, servedOn(x.endpointId)),
      })),
    ),
  ]);
  return { timeRange: { startTime: iso(range.since), endTime: iso(range.until) }, abExperiments, shadowExperiments };
}
