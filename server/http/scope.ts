// The one project-scoped access path. Every lookup of a project's resource by id goes through here: the row must
// match AND belong to the caller's project (or, for `visible`, to the platform's catalogue, which has no project),
// and when it does not the answer is the same 404 whether the id is absent or another project's
// (test/auth-matrix.test.ts checks this for every operation that takes an id).
import { notFound } from '../core/errors.ts';

interface Finder {
  findFirst(args: { where: Record<string, unknown> }): PromiseLike<unknown>;
}
type Row<F extends Finder> = NonNullable<Awaited<ReturnType<F['findFirst']>>>;
interface Missing {
  what: string;
  id: string;
  param: string | null;
}

/** The project's row matching `where`, or null. */
export async function ownedOrNull<F extends Finder>(model: F, projectId: string, where: Record<string, unknown>): Promise<Row<F> | null> {
  return ((await model.findFirst({ where: { ...where, projectId } })) as Row<F> | null) ?? null;
}

/** The project's row matching `where`, or the 404 of an absent `what` named by `id` (in request field `param`). */
export async function owned<F extends Finder>(model: F, projectId: string, where: Record<string, unknown>, missing: Missing): Promise<Row<F>> {
  const row = await ownedOrNull(model, projectId, where);
  if (!row) throw notFound(missing.what, missing.id, missing.param);
  return row;
}

/** A row the project can see: the platform catalogue's (no project) or its own; null when neither matches. */
export async function visibleOrNull<F extends Finder>(model: F, projectId: string, where: Record<string, unknown>): Promise<Row<F> | null> {
  return ((await model.findFirst({ where: { ...where, OR: [{ projectId: null }, { projectId }] } })) as Row<F> | null) ?? null;
}

/** A v2 path's `{projectId}` must be the caller's: any other, existing or not, answers exactly like an absent resource. */
export function checkProject(ctx: { params: { projectId: string }; identity: { projectId: string } }): string {
  if (ctx.params.projectId !== ctx.identity.projectId) throw notFound('project', ctx.params.projectId, 'projectId');
  return ctx.identity.projectId;
}
