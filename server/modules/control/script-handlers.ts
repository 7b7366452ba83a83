// Module `control` (spec/tags/control.yaml): the scripted-answer rules (scripts.ts), shared by every process.
import { catalogueModel } from '../models/index.ts';
import type { Context } from '../types.ts';
import type { ControlPlane } from './plane.ts';
import { timesWire } from './rules.ts';
import { newScript, type ScriptRule } from './scripts.ts';

const scriptWire = (r: ScriptRule) => ({ ...r.input, id: r.id, hits: r.hits, ...timesWire(r) });

export async function listScripts({ clock }: Context<'listScripts'>, plane: ControlPlane) {
  return { object: 'list' as const, data: (await plane.scripts.store.list(clock.now())).map((r) => scriptWire(r as ScriptRule)) };
}

export async function createScript({ clock, db, body }: Context<'createScript'>, plane: ControlPlane) {
  const input = structuredClone(body);
  // An embeddings rule's vectors must have its model's dimensions: the catalogue (kept in memory) says them.
  const model = input.capability === 'embeddings' && input.match?.model !== undefined ? await catalogueModel(db.prisma, input.match.model) : undefined;
  if (model?.type === 'embedding') input.match!.model = model.id;
  const dimensionsOf = () => (model?.type === 'embedding' ? (model.dimensions ?? undefined) : undefined);
  const rule = newScript(input, clock.now(), dimensionsOf);
  await plane.change((tx) => plane.scripts.store.insert(tx, rule));
  return scriptWire(rule);
}

export async function getScript({ clock, params }: Context<'getScript'>, plane: ControlPlane) {
  return scriptWire((await plane.scripts.store.get(params.scriptId, clock.now())) as ScriptRule);
}

export async function deleteScript({ params }: Context<'deleteScript'>, plane: ControlPlane) {
  await plane.change((tx) => plane.scripts.store.remove(tx, params.scriptId));
  return { id: params.scriptId, deleted: true as const };
}

export async function clearScripts({ clock }: Context<'clearScripts'>, plane: ControlPlane) {
  return { cleared: await plane.change((tx) => plane.scripts.store.clear(tx, clock.now())) };
}
