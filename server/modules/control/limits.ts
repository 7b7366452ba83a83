// Rate limits (the Control tag): read and set an organization x model's window in the rate limiter
// (server/limits/rate-limits.ts), so a test can provoke a 429 without sending the traffic. What is set is a setting of
// the shared state (plane.ts), in force in every process by the time the call answers.
import { randomUUID } from 'node:crypto';
import { badRequest, conflict, notFound } from '../../core/errors.ts';
import { keyOf } from '../../limits/rate-limits.ts';
import type { Context } from '../types.ts';
import { type ControlPlane, LIMIT_PREFIX, type LimitSetting } from './plane.ts';
import { writeSetting } from './shared.ts';

type Ctx = Context<'getRateLimit'> | Context<'setRateLimit'>;

/** The limiter's key for the organization x `model`, and whether `model` names one of its dedicated endpoints. */
async function keyFor({ db, limits }: Ctx, organizationId: string, model: string) {
  if (!limits.config.enabled) throw conflict('This server runs with RATE_LIMITS=off: nothing is limited.', 'rate_limits_off');
  const org = await db.prisma.organization.findUnique({ where: { id: organizationId }, select: { projects: { select: { slug: true } } } });
  if (!org) throw notFound('organization', organizationId, 'organization_id');
  return { key: keyOf({ organizationId }, model), dedicated: org.projects.some((p) => model.startsWith(`${p.slug}/`)) };
}

async function stateWire({ limits }: Ctx, organizationId: string, model: string, key: string, dedicated: boolean) {
  const s = await limits.state(key, dedicated);
  return {
    organization_id: organizationId,
    model,
    dedicated,
    limit: s.limits,
    set_limit: { requests: s.set.requests ?? null, tokens: s.set.tokens ?? null },
    usage: s.used,
    window: { seconds: limits.config.windowSeconds, resets_in_ms: Math.ceil(s.msLeft) },
    store: limits.store,
  };
}

export async function getRateLimit(ctx: Context<'getRateLimit'>) {
  const { organization_id, model } = ctx.query;
  const { key, dedicated } = await keyFor(ctx, organization_id, model);
  return stateWire(ctx, organization_id, model, key, dedicated);
}

export async function setRateLimit(ctx: Context<'setRateLimit'>, plane: ControlPlane) {
  const { organization_id, model, limit, usage, resets_in_ms } = ctx.body;
  if (limit === undefined && usage === undefined && resets_in_ms === undefined)
    throw badRequest('Give something to set: limit, usage or resets_in_ms.', null, 'nothing_to_set');
  const { key, dedicated } = await keyFor(ctx, organization_id, model);
  const { limits } = ctx;
  await plane.change(async (tx) => {
    const setting: LimitSetting = {
      ...(await limits.settingOf(key, await plane.limitSetting(tx, key), { limits: limit, used: usage, msLeft: resets_in_ms })),
      seq: randomUUID(),
    };
    // In Redis every process shares the window's counts: this process writes them (each process writes its own in memory).
    if (limits.store === 'redis' && setting.window) await limits.apply(key, setting, true);
    await writeSetting(tx, `${LIMIT_PREFIX}${key}`, setting);
  });
  return stateWire(ctx, organization_id, model, key, dedicated);
}
