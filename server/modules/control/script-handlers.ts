// Module `control` (spec/tags/control.yaml): the scripted-answer rules (scripts.ts).
import { iso } from '../../core/clock.ts';
import { catalogueModel } from '../models/index.ts';
import type { Context } from '../types.ts';
import type { ScriptRule } from './scripts.ts';

const scriptWire = ({ createdAt, expiresAt, ...rule }: ScriptRule) => ({
  ...rule,
  created_at: iso(createdAt),
  expires_at: expiresAt === null ? null : iso(expiresAt),
});

export async function listScripts({ control, clock }: Context<'listScripts'>) {
  return { object: 'list' as const, data: control.scripts.list(clock.now()).map(scriptWire) };
}

export async function createScript({ control, clock, db, body }: Context<'createScript'>) {
  const input = structuredClone(body);
  // An embeddings rule's vectors must have its model's dimensions: the catalogue (kept in memory) says them.
  const model = input.capability === 'embeddings' && input.match?.model !== undefined ? await catalogueModel(db.prisma, input.match.model) : undefined;
  if (model?.type === 'embedding') input.match!.model = model.id;
  const dimensionsOf = () => (model?.type === 'embedding' ? (model.dimensions ?? undefined) : undefined);
  return scriptWire(control.scripts.add(input, clock.now(), dimensionsOf));
}

export async function getScript({ control, clock, params }: Context<'getScript'>) {
  return scriptWire(control.scripts.get(params.scriptId, clock.now()));
}

export async function deleteScript({ control, params }: Context<'deleteScript'>) {
  control.scripts.remove(params.scriptId);
  return { id: params.scriptId, deleted: true as const };
}

export async function clearScripts({ control }: Context<'clearScripts'>) {
  return { cleared: control.scripts.clear() };
}
