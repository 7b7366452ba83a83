// Module `containers`: container deployments (create, list, get, update, delete) and their logs. Each write checks
// the deployment as it would become, resolves its references and makes its move in one transaction, with the log
// lines of what it did.
import type { ContainerDeployment } from '../../../generated/prisma/sqlite/client/client.ts';
import { instant } from '../../core/clock.ts';
import { badRequest, taken } from '../../core/errors.ts';
import { newId } from '../../core/ids.ts';
import type { Db, Tx } from '../../db/index.ts';
import { owned, ownedOrNull } from '../../http/scope.ts';
import { uniquely } from '../../http/unique.ts';
import { enter, subjectOf, transition } from '../../runner/progress.ts';
import { releaseSecrets, secretNames } from '../secrets/index.ts';
import type { Context } from '../types.ts';
import { detachVolumes, volumeNames } from '../volumes/index.ts';
import { type Line, logLine, writeLog } from './logs.ts';
import { containerDeployments, containerMachine, scheduledLines } from './machine.ts';
import { check, currentInput, defaults, desiredReplicas, type Input, resolve, runs, type Spec } from './rules.ts';
import { containerDeploymentWire } from './wire.ts';

/** A deployment by id, else by name, in the project; absent and other-project are the same 404. */
async function findDeployment(db: Db | Tx, projectId: string, ref: string): Promise<ContainerDeployment> {
  return (
    (await ownedOrNull(db.containerDeployment, projectId, { id: ref })) ??
    owned(db.containerDeployment, projectId, { name: ref }, { what: 'deployment', id: ref, param: 'id' })
  );
}

const nameTaken = (name: string) => taken(`A deployment named '${name}' already exists in this project.`, 'deployment_name_taken', 'name');

async function refuseTakenName(tx: Tx, projectId: string, name: string, except?: string) {
  if (await tx.containerDeployment.findFirst({ where: { projectId, name, ...(except ? { id: { not: except } } : {}) } })) throw nameTaken(name);
}

async function views(db: Db | Tx, rows: ContainerDeployment[]) {
  const specs = rows.map((d) => JSON.parse(d.spec) as Spec);
  const [volumes, secrets] = await Promise.all([
    volumeNames(
      db,
      specs.flatMap((s) => s.volumes.map((m) => m.volumeId)),
    ),
    secretNames(
      db,
      specs.flatMap((s) => s.environment_variables.flatMap((v) => (v.secretId ? [v.secretId] : []))),
    ),
  ]);
  return rows.map((d) => containerDeploymentWire(d, { volumes, secrets }));
}
const view = async (db: Db | Tx, d: ContainerDeployment) => (await views(db, [d]))[0]!;

/** What a new revision's rollout logs: the revision, its mounts and its variables taken from secrets (names only). */
async function revisionLines(tx: Tx, d: ContainerDeployment, spec: Spec, what: string): Promise<Line[]> {
  const [volumes, secrets] = await Promise.all([
    volumeNames(
      tx,
      spec.volumes.map((m) => m.volumeId),
    ),
    secretNames(
      tx,
      spec.environment_variables.flatMap((v) => (v.secretId ? [v.secretId] : [])),
    ),
  ]);
  return [
    {
      text: `${what}: revision ${d.revision}, image ${d.image}, ${spec.gpu_count}x ${spec.gpu_type}, ${spec.cpu} CPU, ${spec.memory} GB memory; status Updating (no image is pulled and no container runs on this server)`,
    },
    ...spec.volumes.map((m) => ({ text: `mounted volume '${volumes.get(m.volumeId)}' version ${m.version} at ${m.mount_path}` })),
    ...spec.environment_variables.flatMap((v) => (v.secretId ? [{ text: `set environment variable ${v.name} from secret '${secrets.get(v.secretId)}'` }] : [])),
  ];
}

export async function listContainerDeployments({ db, identity }: Context<'listContainerDeployments'>) {
  const rows = await db.prisma.containerDeployment.findMany({ where: { projectId: identity.projectId }, orderBy: [{ createdAt: 'asc' }, { id: 'asc' }] });
  return { object: 'list' as const, data: await views(db.prisma, rows) };
}

export async function createContainerDeployment(ctx: Context<'createContainerDeployment'>) {
  const { db, clock, identity, body } = ctx;
  const input = defaults(body);
  check(input);
  const d = await uniquely(
    () =>
      db.write(async (tx) => {
        await refuseTakenName(tx, identity.projectId, input.name);
        const now = instant(clock);
        const id = newId('cdep', Number(now));
        const spec = await resolve(tx, identity.projectId, id, input);
        const { replicas, why } = await desiredReplicas(tx, identity.projectId, {
          minReplicas: input.min_replicas,
          maxReplicas: input.max_replicas,
          autoscaling: spec.autoscaling,
        });
        const row = await tx.containerDeployment.create({
          data: {
            id,
            projectId: identity.projectId,
            name: input.name,
            description: input.description,
            image: input.image,
            status: containerMachine.states[0],
            revision: 1,
            spec: JSON.stringify(spec),
            minReplicas: input.min_replicas,
            maxReplicas: input.max_replicas,
            desiredReplicas: replicas,
            changedAt: now,
            createdAt: now,
            updatedAt: now,
          },
        });
        // Entering the first state schedules the rollout's completion.
        await enter(tx, ctx, containerMachine, subjectOf(containerDeployments, row));
        await writeLog(tx, clock, row, [
          ...(await revisionLines(tx, row, spec, `deployment '${row.name}' accepted`)),
          { text: `desired replicas ${replicas} (${why})` },
          ...scheduledLines(row),
        ]);
        return row;
      }),
    () => nameTaken(input.name),
  );
  return view(db.prisma, d);
}

export async function getContainerDeployment({ db, identity, params }: Context<'getContainerDeployment'>) {
  return view(db.prisma, await findDeployment(db.prisma, identity.projectId, params.id));
}

export async function updateContainerDeployment(ctx: Context<'updateContainerDeployment'>) {
  const { db, clock, identity, params, body } = ctx;
  const d = await uniquely(
    () =>
      db.write(async (tx) => {
        const before = await findDeployment(tx, identity.projectId, params.id);
        const input: Input = { ...currentInput(before), ...body } as Input;
        check(input);
        if (input.name !== before.name) await refuseTakenName(tx, identity.projectId, input.name, before.id);
        const old = JSON.parse(before.spec) as Spec;
        const spec = await resolve(tx, identity.projectId, before.id, input);
        const { replicas, why } = await desiredReplicas(tx, identity.projectId, {
          minReplicas: input.min_replicas,
          maxReplicas: input.max_replicas,
          autoscaling: spec.autoscaling,
        });
        const now = instant(clock);
        const data = {
          name: input.name,
          description: input.description,
          image: input.image,
          spec: JSON.stringify({ ...spec, ready_image: old.ready_image }),
          minReplicas: input.min_replicas,
          maxReplicas: input.max_replicas,
          desiredReplicas: replicas,
          updatedAt: now,
        };
        const newRevision = runs(spec, input.image) !== runs(old, before.image) || before.status === 'Failed';
        if (newRevision) {
          const moved = await transition(tx, ctx, containerDeployments, before, 'update', { data: { ...data, revision: before.revision + 1, changedAt: now } });
          await writeLog(tx, clock, moved, [
            ...(await revisionLines(tx, moved, spec, 'update accepted')),
            { text: `desired replicas ${replicas} (${why})` },
            ...scheduledLines(moved),
          ]);
          return moved;
        }
        const current = before.status === 'Scaling' ? before.desiredReplicas : before.readyReplicas;
        if (before.status !== 'Updating' && replicas !== current) {
          const moved = await transition(tx, ctx, containerDeployments, before, 'scale', { data: { ...data, changedAt: now } });
          await writeLog(tx, clock, moved, [
            { text: `update accepted: ${current} -> ${replicas} replica(s) (${why}); status Scaling` },
            ...scheduledLines(moved),
          ]);
          return moved;
        }
        const row = await tx.containerDeployment.update({ where: { id: before.id }, data });
        if (replicas !== before.desiredReplicas) await writeLog(tx, clock, row, [{ text: `update accepted: desired replicas ${replicas} (${why})` }]);
        return row;
      }),
    () => nameTaken(body.name!),
  );
  return view(db.prisma, d);
}

export async function deleteContainerDeployment({ db, identity, params }: Context<'deleteContainerDeployment'>) {
  await db.write(async (tx) => {
    const d = await findDeployment(tx, identity.projectId, params.id);
    await detachVolumes(tx, d.id);
    await releaseSecrets(tx, d.id);
    await tx.containerDeploymentLog.deleteMany({ where: { deploymentId: d.id } });
    await tx.containerDeployment.delete({ where: { id: d.id } });
  });
  return {};
}

/** A revision number given as text (`revision` or `version`), or undefined. */
function revisionOf(query: { revision?: string; version?: string }): number | undefined {
  const given = (['revision', 'version'] as const).filter((k) => query[k] !== undefined);
  const values = given.map((k) => {
    const v = query[k]!;
    if (!/^[1-9][0-9]{0,8}$/.test(v)) throw badRequest(`'${k}' must be a revision number (1 for the deployment as created).`, k);
    return Number(v);
  });
  if (values.length === 2 && values[0] !== values[1])
    throw badRequest("'revision' and 'version' name the same thing: give one, or the same number.", 'version');
  return values[0];
}

export async function getContainerDeploymentLogs({ db, identity, params, query }: Context<'getContainerDeploymentLogs'>) {
  const revision = revisionOf(query);
  const d = await findDeployment(db.prisma, identity.projectId, params.id);
  const rows = await db.prisma.containerDeploymentLog.findMany({
    where: { deploymentId: d.id, ...(revision !== undefined ? { revision } : {}), ...(query.replica_id !== undefined ? { source: query.replica_id } : {}) },
    orderBy: { id: 'asc' },
  });
  return { lines: rows.map(logLine) };
}
