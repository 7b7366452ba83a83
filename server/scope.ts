// The one project-scoped access path. Every lookup of a project's resource by id goes through `owned`: the row must
// match the id AND belong to the caller's project, and when it does not the answer is the same 404 whether the id
// is absent or another project's (test/auth-matrix.test.ts checks this for every operation that takes an id).
import { notFound } from './errors.ts';

interface Finder {
  findFirst(args: { where: Record<string, unknown> }): PromiseLike<unknown>;
}
type Row<F extends Finder> = NonNullable<Awaited<ReturnType<F['findFirst']>>>;

/** The project's row matching `where`, or null. */
export async function ownedOrNull<F extends Finder>(model: F, projectId: string, where: Record<string, unknown>): Promise<Row<F> | null> {
  return ((await model.findFirst({ where: { ...where, projectId } })) as Row<F> | null) ?? null;
}

/** The project's row matching `where`, or the 404 of an absent `what` named by `id` (in request field `param`). */
export async function owned<F extends Finder>(
  model: F,
  projectId: string,
  where: Record<string, unknown>,
  missing: { what: string; id: string; param: string | null },
): Promise<Row<F>> {
  const row = await ownedOrNull(model, projectId, where);
  if (!row) throw notFound(missing.what, missing.id, missing.param);
  return row;
}
