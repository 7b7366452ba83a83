// Module `dedicated`: placement profiles, the saved placements a deployment may name. This server has one, every
// project's (placement.ts), so the list and the lookup read no table.
import { notFound } from '../../../core/errors.ts';
import { listPage } from '../../../http/list.ts';
import type { Context } from '../../types.ts';
import { PLACEMENT_PROFILE } from '../placement.ts';
import { checkProject } from '../refs.ts';
import { listWire, placementProfileWire } from '../wire.ts';

export async function listPlacementProfiles(ctx: Context<'listPlacementProfiles'>) {
  checkProject(ctx);
  const p = listPage([PLACEMENT_PROFILE], { size: ctx.query.limit, cursor: ctx.query.after }, { fields: {}, params: { size: 'limit', cursor: 'after' } });
  return listWire(
    p.rows.map((x) => placementProfileWire(x, ctx.identity)),
    p.next,
  );
}

export async function getPlacementProfile(ctx: Context<'getPlacementProfile'>) {
  checkProject(ctx);
  if (ctx.params.profileId !== PLACEMENT_PROFILE.id) throw notFound('placement profile', ctx.params.profileId, 'profileId');
  return placementProfileWire(PLACEMENT_PROFILE, ctx.identity);
}
