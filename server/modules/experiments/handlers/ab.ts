// Module `experiments`: A/B experiments (the tag's **A/B experiments**). While one exists, its members' percents are
// the endpoint's traffic split, steered through dedicated's `steerTraffic` as `abExperiment:<id>`.
import { instant } from '../../../core/clock.ts';
import { conflict } from '../../../core/errors.ts';
import { newId } from '../../../core/ids.ts';
import { checkEtag, masked, newEtag } from '../../../http/etag.ts';
import { cut, pageArgs, pageSize } from '../../../http/list.ts';
import { uniquely } from '../../../http/unique.ts';
import { type SplitEntry, steerTraffic } from '../../dedicated/index.ts';
import type { Context } from '../../types.ts';
import { abExperimentOf, deploymentIds, endpointOf } from '../refs.ts';
import { checkMembers, checkName, type Member } from '../rules.ts';
import { abExperimentWire, listWire } from '../wire.ts';

const owner = (id: string) => `abExperiment:${id}` as const;
const splitOf = (members: Member[]): SplitEntry[] => members.map((m) => ({ deploymentId: m.deploymentId, weight: m.percent }));

export async function listABExperiments(ctx: Context<'listABExperiments'>) {
  const e = await endpointOf(ctx.db.prisma, ctx);
  const size = pageSize(ctx.query.limit);
  const args = pageArgs(ctx.query.after, size);
  const page = cut(await ctx.db.prisma.abExperiment.findMany({ ...args, where: { ...args.where, endpointId: e.id } }), size);
  return listWire(page.rows.map(abExperimentWire), page.next);
}

export async function createABExperiment(ctx: Context<'createABExperiment'>) {
  const { db, clock, body, identity } = ctx;
  const name = checkName(body.name);
  const row = await uniquely(
    () =>
      db.write(async (tx) => {
        const e = await endpointOf(tx, ctx);
        const members = checkMembers(body.members, await deploymentIds(tx, e.id));
        const id = newId('abx', clock.now());
        const now = instant(clock);
        // Taking the split first: a split someone else steers is refused before anything is written.
        await steerTraffic(tx, clock, e.id, owner(id), splitOf(members), { param: null });
        return tx.abExperiment.create({
          data: {
            id,
            projectId: e.projectId,
            endpointId: e.id,
            name,
            description: body.description ?? null,
            members: JSON.stringify(members),
            previousSplit: e.trafficSplit,
            createdBy: identity.apiKeyId,
            etag: newEtag(),
            createdAt: now,
            updatedAt: now,
          },
        });
      }),
    () => conflict(`Endpoint '${ctx.params.endpointId}' already has an A/B experiment steering its traffic split.`, 'traffic_split_steered', null),
  );
  return abExperimentWire(row);
}

export async function getABExperiment(ctx: Context<'getABExperiment'>) {
  const e = await endpointOf(ctx.db.prisma, ctx);
  return abExperimentWire(await abExperimentOf(ctx.db.prisma, e, ctx.params.id));
}

export async function updateABExperiment(ctx: Context<'updateABExperiment'>) {
  const { db, clock } = ctx;
  const body = masked(ctx.body, ctx.query.updateMask, ['description', 'members']);
  const row = await db.write(async (tx) => {
    const e = await endpointOf(tx, ctx);
    const x = await abExperimentOf(tx, e, ctx.params.id);
    checkEtag(ctx.body.etag, x.etag);
    let members = x.members;
    if (body.members !== undefined) {
      const checked = checkMembers(body.members, await deploymentIds(tx, e.id));
      await steerTraffic(tx, clock, e.id, owner(x.id), splitOf(checked), { param: null });
      members = JSON.stringify(checked);
    }
    return tx.abExperiment.update({
      where: { id: x.id },
      data: { description: body.description ?? x.description, members, etag: newEtag(), updatedAt: instant(clock) },
    });
  });
  return abExperimentWire(row);
}

export async function deleteABExperiment(ctx: Context<'deleteABExperiment'>) {
  const { db, clock } = ctx;
  await db.write(async (tx) => {
    const e = await endpointOf(tx, ctx);
    const x = await abExperimentOf(tx, e, ctx.params.id);
    checkEtag(ctx.query.etag, x.etag);
    // The split as it was, less deployments deleted since (those not in the experiment's split could be).
    const alive = await deploymentIds(tx, e.id);
    const previous = (JSON.parse(x.previousSplit) as SplitEntry[]).filter((s) => alive.has(s.deploymentId));
    await steerTraffic(tx, clock, e.id, owner(x.id), previous, { release: true, param: null });
    await tx.abExperiment.delete({ where: { id: x.id } });
  });
  return {};
}
