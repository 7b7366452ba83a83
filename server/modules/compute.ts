// Tag Compute (seed 2.10, section 3, rule 5): project-scoped clusters with hosts, instances and their VMs; passive
// health-check alerts injected by the control path; node remediations moved by one transition table and the runner.
import { createHash, randomUUID } from 'node:crypto';
import type { ComputeHost, ComputeInstance, ComputeVm, Remediation } from '../../generated/prisma/sqlite/client/client.ts';
import type { AppOptions } from '../app.ts';
import type { Clock } from '../clock.ts';
import { duration, type Config } from '../config.ts';
import type { Database, Tx } from '../db/index.ts';
import { badRequest, conflict } from '../errors.ts';
import type { Context, ModuleHandlers } from '../handlers.ts';
import { newId } from '../ids.ts';
import { enqueue, type Runner, type Step } from '../runner.ts';
import { seedData, type SeedContext } from '../seed.ts';
import { wire } from '../wire/index.ts';
import { owned } from '../scope.ts';

// ---------------------------------------------------------------------------------------------------------------
// The remediation state machine: the one table (seed section 3; the tag description in spec/tags/compute.yaml).

export const REMEDIATION_STATES = ['PENDING_APPROVAL', 'PENDING', 'RUNNING', 'SUCCEEDED', 'FAILED', 'CANCELLED', 'AUTO_RESOLVED'] as const;
export type RemediationState = (typeof REMEDIATION_STATES)[number];
/** approve/reject/cancel come from callers; alert_resolved from the control path; start/succeed/fail from the runner. */
export const REMEDIATION_EVENTS = ['approve', 'reject', 'cancel', 'alert_resolved', 'start', 'succeed', 'fail'] as const;
export type RemediationEvent = (typeof REMEDIATION_EVENTS)[number];

export const REMEDIATION_TRANSITIONS: Record<RemediationState, Partial<Record<RemediationEvent, RemediationState>>> = {
  PENDING_APPROVAL: { approve: 'PENDING', reject: 'CANCELLED', cancel: 'CANCELLED', alert_resolved: 'AUTO_RESOLVED' },
  PENDING: { start: 'RUNNING', cancel: 'CANCELLED', alert_resolved: 'AUTO_RESOLVED' },
  RUNNING: { succeed: 'SUCCEEDED', fail: 'FAILED' },
  SUCCEEDED: {},
  FAILED: {},
  CANCELLED: {},
  AUTO_RESOLVED: {},
};

const TERMINAL = new Set<string>(['SUCCEEDED', 'FAILED', 'CANCELLED', 'AUTO_RESOLVED']);
const OPEN_STATES = ['PENDING_APPROVAL', 'PENDING', 'RUNNING'];

/** The state `event` leads to from `state`, or a 409 `invalid_state_transition`. */
export function remediationTransition(state: string, event: RemediationEvent): RemediationState {
  const next = REMEDIATION_TRANSITIONS[state as RemediationState]?.[event];
  if (!next) throw conflict(`A remediation in state ${state} cannot ${event.replace('_', ' ')}.`, 'invalid_state_transition');
  return next;
}

// ---------------------------------------------------------------------------------------------------------------
// The cluster engine: what a mode does to an instance. The local engine is deterministic (see the tag description).

export type RemediationMode =
  | 'REMEDIATION_MODE_VM_ONLY'
  | 'REMEDIATION_MODE_HOST_AWARE'
  | 'REMEDIATION_MODE_EVICT_WITHOUT_REPLACEMENT'
  | 'REMEDIATION_MODE_REBOOT_VM'
  | 'REMEDIATION_MODE_HOST_POWER_CYCLE';

export interface HostSnapshot {
  id: string;
  name: string;
  cordoned: boolean;
  vmCapacity: number;
  vmCount: number;
}

export type RemediationPlan =
  | { kind: 'replace'; hostId: string }
  | { kind: 'evict' }
  | { kind: 'reboot' }
  | { kind: 'fail'; message: string };

export interface ClusterEngine {
  plan(input: { mode: string; instanceName: string; unrecoverable: boolean; vmHostId: string | null; hosts: HostSnapshot[] }): RemediationPlan;
}

export const localClusterEngine: ClusterEngine = {
  plan({ mode, instanceName, unrecoverable, vmHostId, hosts }) {
    if (unrecoverable) return { kind: 'fail', message: `Instance ${instanceName}'s VM does not respond to the control plane (marked unrecoverable).` };
    // Free VM slots per host, counting the slot the instance's own VM frees when it is deleted.
    const available = (exclude: string | null) =>
      hosts
        .filter((h) => !h.cordoned && h.id !== exclude)
        .map((h) => ({ h, free: h.vmCapacity - h.vmCount + (h.id === vmHostId ? 1 : 0) }))
        .filter((x) => x.free > 0)
        .sort((a, b) => b.free - a.free || a.h.name.localeCompare(b.h.name));
    switch (mode) {
      case 'REMEDIATION_MODE_REBOOT_VM':
        return vmHostId ? { kind: 'reboot' } : { kind: 'fail', message: `Instance ${instanceName} has no VM to reboot.` };
      case 'REMEDIATION_MODE_EVICT_WITHOUT_REPLACEMENT':
        return vmHostId ? { kind: 'evict' } : { kind: 'fail', message: `Instance ${instanceName} has no VM to evict.` };
      case 'REMEDIATION_MODE_VM_ONLY': {
        const [best] = available(null);
        return best ? { kind: 'replace', hostId: best.h.id } : { kind: 'fail', message: 'No available host has room for a new VM.' };
      }
      case 'REMEDIATION_MODE_HOST_AWARE': {
        const [best] = available(vmHostId);
        return best
          ? { kind: 'replace', hostId: best.h.id }
          : { kind: 'fail', message: `No host other than the instance's own has room for a new VM.` };
      }
      default:
        return { kind: 'fail', message: `Mode ${mode} is not supported.` };
    }
  },
};

const UNSUPPORTED_MODE = 'REMEDIATION_MODE_HOST_POWER_CYCLE';
const refuseUnsupportedMode = (mode: string | undefined) => {
  if (mode === UNSUPPORTED_MODE) {
    throw badRequest(`${UNSUPPORTED_MODE} is not supported by this platform; use another mode.`, 'mode', 'unsupported_remediation_mode');
  }
};

// ---------------------------------------------------------------------------------------------------------------
// Clusters: created by the seed (and by test fixtures for other projects).

export interface ClusterSpec {
  name: string;
  region: string;
  cluster_type: string;
  gpu_type: string;
  hosts: { name: string; num_gpus: number; vm_capacity: number }[];
  instances: { name: string; host: string; num_gpus: number; unrecoverable?: boolean }[];
}

const vmKey = (clusterId: string, name: string) => `${clusterId}/${name}`;

export async function createCluster(tx: Tx, clock: Clock, projectId: string, spec: ClusterSpec): Promise<{ clusterId: string; instanceIds: Record<string, string> }> {
  const now = clock.now();
  const clusterId = newId('cluster', now);
  await tx.cluster.create({
    data: { id: clusterId, projectId, name: spec.name, region: spec.region, clusterType: spec.cluster_type, gpuType: spec.gpu_type, createdAt: BigInt(now) },
  });
  const hostIds = new Map<string, string>();
  for (const h of spec.hosts) {
    const id = newId('host', now);
    hostIds.set(h.name, id);
    await tx.computeHost.create({ data: { id, projectId, clusterId, name: h.name, numGpus: h.num_gpus, vmCapacity: h.vm_capacity } });
  }
  const instanceIds: Record<string, string> = {};
  for (const i of spec.instances) {
    const hostId = hostIds.get(i.host);
    if (!hostId) throw new Error(`cluster seed: instance ${i.name} names unknown host ${i.host}`);
    const id = newId('inst', now);
    instanceIds[i.name] = id;
    const vmName = `${i.name}-vm1`;
    await tx.computeVm.create({
      data: { id: vmKey(clusterId, vmName), name: vmName, projectId, clusterId, instanceId: id, hostId, createdAt: BigInt(now), lastBootAt: BigInt(now) },
    });
    await tx.computeInstance.create({
      data: {
        id,
        projectId,
        clusterId,
        name: i.name,
        numGpus: i.num_gpus,
        status: 'RUNNING',
        vmId: vmKey(clusterId, vmName),
        unrecoverable: i.unrecoverable ?? false,
        updatedAt: BigInt(now),
      },
    });
  }
  return { clusterId, instanceIds };
}

export async function seedCompute({ tx, clock, projectId }: SeedContext): Promise<void> {
  for (const spec of seedData<{ clusters: ClusterSpec[] }>('compute').clusters) await createCluster(tx, clock, projectId, spec);
}

// ---------------------------------------------------------------------------------------------------------------
// Lookups: always scoped to the caller's project; absent and other-project are the same 404.

type Reader = Database['prisma'] | Tx;

async function findCluster(db: Reader, projectId: string, clusterId: string) {
  return owned(db.cluster, projectId, { id: clusterId }, { what: 'cluster', id: clusterId, param: 'cluster_id' });
}

async function findInstance(db: Reader, projectId: string, clusterId: string, instanceId: string, param = 'instance_id') {
  await findCluster(db, projectId, clusterId);
  return owned(db.computeInstance, projectId, { id: instanceId, clusterId }, { what: 'instance', id: instanceId, param });
}

async function findRemediation(db: Reader, projectId: string, params: { cluster_id: string; instance_id: string; remediation_id: string }) {
  const instance = await findInstance(db, projectId, params.cluster_id, params.instance_id);
  const r = await owned(db.remediation, projectId, { id: params.remediation_id, instanceId: instance.id }, {
    what: 'remediation',
    id: params.remediation_id,
    param: 'remediation_id',
  });
  return { r, instance };
}

async function remediationView(db: Reader, r: Remediation, instanceName?: string) {
  const alerts = await db.passiveHealthCheckAlert.findMany({ where: { remediationId: r.id }, orderBy: [{ startedAt: 'asc' }, { id: 'asc' }] });
  const name = instanceName ?? (await db.computeInstance.findUnique({ where: { id: r.instanceId } }))?.name;
  return wire.remediation(r, name, alerts);
}

// ---------------------------------------------------------------------------------------------------------------
// Remediation lifecycle helpers shared by handlers and the runner.

const WORK_KIND = 'remediation';
const startDelay = (config: Config) => duration(config, 'remediation_start', 5_000);
const runDuration = (config: Config) => duration(config, 'remediation_run', 60_000);

async function scheduleRemediation(tx: Tx, clock: Clock, config: Config, r: { id: string; projectId: string }) {
  await enqueue(tx, clock, { kind: WORK_KIND, subjectId: r.id, projectId: r.projectId, delayMs: startDelay(config) });
}

async function move(tx: Tx, clock: Clock, r: Remediation, event: RemediationEvent, data: Partial<Remediation> = {}): Promise<Remediation> {
  const state = remediationTransition(r.state, event);
  const now = BigInt(clock.now());
  return tx.remediation.update({
    where: { id: r.id },
    data: { ...data, state, updateTime: now, ...(TERMINAL.has(state) ? { endTime: now } : {}) },
  });
}

/** Auto-resolves an open remediation once every alert linked to it has resolved (before it runs). */
async function autoResolveIfCleared(tx: Tx, clock: Clock, remediationId: string) {
  const r = await tx.remediation.findUnique({ where: { id: remediationId } });
  if (!r || !REMEDIATION_TRANSITIONS[r.state as RemediationState]?.alert_resolved) return;
  const firing = await tx.passiveHealthCheckAlert.count({ where: { remediationId, resolvedAt: null } });
  if (firing === 0) await move(tx, clock, r, 'alert_resolved');
}

const requestHash = (parts: Record<string, unknown>) => createHash('sha256').update(JSON.stringify(parts)).digest('hex');

const isUniqueViolation = (err: any) => err?.code === 'P2002' || /unique constraint/i.test(String(err?.message));

// ---------------------------------------------------------------------------------------------------------------
// The runner's steps: PENDING -> RUNNING (when the instance is free) -> SUCCEEDED | FAILED.

export function registerRemediationWork(runner: Runner, services: AppOptions, engine: ClusterEngine = localClusterEngine): void {
  const { db, clock, config } = services;
  runner.register(WORK_KIND, {
    run: async (item): Promise<Step> => {
      const r = await db.prisma.remediation.findUnique({ where: { id: item.subjectId } });
      if (!r) return {};
      if (r.state === 'PENDING') {
        // Remediations of one instance run one at a time.
        const instance = await db.prisma.computeInstance.findUnique({ where: { id: r.instanceId } });
        if (instance?.status === 'REMEDIATING') return { againInMs: startDelay(config) };
        return { apply: (tx) => startRemediation(tx, clock, r.id), againInMs: runDuration(config) };
      }
      if (r.state === 'RUNNING') return { apply: (tx) => finishRemediation(tx, clock, engine, r.id) };
      return {}; // cancelled, auto-resolved, awaiting approval (approval schedules anew) or already finished
    },
    // A step that keeps throwing: the remediation fails rather than staying RUNNING forever.
    giveUp: async (item, _error, tx) => {
      const r = await tx.remediation.findUnique({ where: { id: item.subjectId } });
      if (r?.state === 'RUNNING') {
        await move(tx, clock, r, 'fail', { errorMessage: 'The remediation could not be completed.' });
        await tx.computeInstance.updateMany({ where: { id: r.instanceId, status: 'REMEDIATING' }, data: { status: 'RUNNING', updatedAt: BigInt(clock.now()) } });
      }
    },
  });
}

async function startRemediation(tx: Tx, clock: Clock, id: string) {
  const r = await tx.remediation.findUnique({ where: { id } });
  if (!r || r.state !== 'PENDING') return;
  const now = BigInt(clock.now());
  // Claims the instance with a compare-and-set, so two workers cannot start two remediations of it at once; the
  // loser stays PENDING and its item tries again later.
  const claimed = await tx.computeInstance.updateMany({ where: { id: r.instanceId, status: { not: 'REMEDIATING' } }, data: { status: 'REMEDIATING', updatedAt: now } });
  if (claimed.count === 0) return;
  await move(tx, clock, r, 'start', { startTime: now });
  const instance = (await tx.computeInstance.findUnique({ where: { id: r.instanceId } }))!;
  // HOST_AWARE cordons the host first, so nothing new lands on it while the VM moves.
  if (r.mode === 'REMEDIATION_MODE_HOST_AWARE' && instance.vmId) {
    const vm = await tx.computeVm.findUnique({ where: { id: instance.vmId } });
    if (vm) await tx.computeHost.update({ where: { id: vm.hostId }, data: { cordoned: true } });
  }
}

async function finishRemediation(tx: Tx, clock: Clock, engine: ClusterEngine, id: string) {
  const r = await tx.remediation.findUnique({ where: { id } });
  if (!r || r.state !== 'RUNNING') return;
  const instance = (await tx.computeInstance.findUnique({ where: { id: r.instanceId } }))!;
  const vm = instance.vmId ? await tx.computeVm.findUnique({ where: { id: instance.vmId } }) : null;
  const hosts = await tx.computeHost.findMany({ where: { clusterId: instance.clusterId }, orderBy: { name: 'asc' } });
  const live = await tx.computeVm.findMany({ where: { clusterId: instance.clusterId, deletedAt: null }, select: { hostId: true } });
  const plan = engine.plan({
    mode: r.mode,
    instanceName: instance.name,
    unrecoverable: instance.unrecoverable,
    vmHostId: vm?.hostId ?? null,
    hosts: hosts.map((h) => ({ id: h.id, name: h.name, cordoned: h.cordoned, vmCapacity: h.vmCapacity, vmCount: live.filter((v) => v.hostId === h.id).length })),
  });
  const now = BigInt(clock.now());
  if (plan.kind === 'fail') {
    await move(tx, clock, r, 'fail', { errorMessage: plan.message });
    await tx.computeInstance.update({ where: { id: instance.id }, data: { status: vm ? 'RUNNING' : 'EVICTED', updatedAt: now } });
    return;
  }
  if (plan.kind === 'reboot') {
    await tx.computeVm.update({ where: { id: vm!.id }, data: { bootCount: { increment: 1 }, lastBootAt: now } });
    await tx.computeInstance.update({ where: { id: instance.id }, data: { status: 'RUNNING', updatedAt: now } });
  } else {
    if (vm) await tx.computeVm.update({ where: { id: vm.id }, data: { deletedAt: now } });
    if (plan.kind === 'evict') {
      await tx.computeInstance.update({ where: { id: instance.id }, data: { status: 'EVICTED', vmId: null, updatedAt: now } });
    } else {
      const generation = instance.vmGeneration + 1;
      const name = `${instance.name}-vm${generation}`;
      const vmId = vmKey(instance.clusterId, name);
      await tx.computeVm.create({
        data: { id: vmId, name, projectId: instance.projectId, clusterId: instance.clusterId, instanceId: instance.id, hostId: plan.hostId, createdAt: now, lastBootAt: now },
      });
      await tx.computeInstance.update({ where: { id: instance.id }, data: { status: 'RUNNING', vmId, vmGeneration: generation, updatedAt: now } });
    }
  }
  await move(tx, clock, r, 'succeed');
}

// ---------------------------------------------------------------------------------------------------------------
// Handlers.

async function clusterView(db: Reader, cluster: { id: string } & Parameters<typeof wire.cluster>[0]) {
  const [hosts, instances, vms] = await Promise.all([
    db.computeHost.findMany({ where: { clusterId: cluster.id }, orderBy: { name: 'asc' } }),
    db.computeInstance.findMany({ where: { clusterId: cluster.id }, orderBy: { name: 'asc' } }),
    db.computeVm.findMany({ where: { clusterId: cluster.id }, orderBy: [{ createdAt: 'asc' }, { name: 'asc' }] }),
  ]);
  return wire.cluster(cluster, hosts, instances, vms);
}

type ReviewCtx = Context<'approveRemediation'> | Context<'rejectRemediation'> | Context<'cancelRemediation'>;

/** approve / reject / cancel: one transaction that re-reads the remediation and applies the table. */
async function review(ctx: ReviewCtx, event: 'approve' | 'reject' | 'cancel', extra: { comment?: string; mode?: string } = {}) {
  const { db, clock, config, identity } = ctx;
  const updated = await db.write(async (tx) => {
    const { r } = await findRemediation(tx, identity.projectId, ctx.params);
    const now = BigInt(clock.now());
    const reviewed = event === 'cancel' ? {} : { reviewedBy: identity.apiKeyId, reviewTime: now, reviewComment: extra.comment ?? null };
    const next = await move(tx, clock, r, event, { ...reviewed, ...(extra.mode ? { mode: extra.mode } : {}) });
    if (next.state === 'PENDING') await scheduleRemediation(tx, clock, config, next);
    return next;
  });
  return remediationView(db.prisma, updated);
}

export const computeHandlers = {
  listClusters: async ({ db, identity }) => {
    const clusters = await db.prisma.cluster.findMany({ where: { projectId: identity.projectId }, orderBy: [{ createdAt: 'asc' }, { id: 'asc' }] });
    return { clusters: await Promise.all(clusters.map((c) => clusterView(db.prisma, c))) };
  },

  getCluster: async ({ db, identity, params }) => clusterView(db.prisma, await findCluster(db.prisma, identity.projectId, params.cluster_id)),

  listClusterInstances: async ({ db, identity, params }) => {
    const cluster = await findCluster(db.prisma, identity.projectId, params.cluster_id);
    const [instances, hosts, vms] = await Promise.all([
      db.prisma.computeInstance.findMany({ where: { clusterId: cluster.id }, orderBy: { name: 'asc' } }),
      db.prisma.computeHost.findMany({ where: { clusterId: cluster.id } }),
      db.prisma.computeVm.findMany({ where: { clusterId: cluster.id, deletedAt: null } }),
    ]);
    const vmById = new Map<string, ComputeVm>(vms.map((v) => [v.id, v]));
    const hostById = new Map<string, ComputeHost>(hosts.map((h) => [h.id, h]));
    return {
      instances: instances.map((i: ComputeInstance) => {
        const vm = i.vmId ? vmById.get(i.vmId) : undefined;
        return wire.clusterInstance(i, vm, vm ? hostById.get(vm.hostId) : undefined);
      }),
    };
  },

  injectPassiveHealthCheckAlert: async ({ db, clock, identity, params, body }) => {
    refuseUnsupportedMode(body.remediation_mode);
    const alert = await db.write(async (tx) => {
      const instance = await findInstance(tx, identity.projectId, params.cluster_id, body.instance_id, 'instance_id');
      const vm = instance.vmId ? await tx.computeVm.findUnique({ where: { id: instance.vmId } }) : null;
      const now = clock.now();
      const severity = body.severity ?? 'PHC_SEVERITY_CRITICAL';
      let remediationId: string | null = null;
      const alertId = randomUUID();
      if (severity !== 'PHC_SEVERITY_INFO') {
        const open = await tx.remediation.findFirst({
          where: { instanceId: instance.id, trigger: 'REMEDIATION_TRIGGER_AUTOMATED', state: { in: OPEN_STATES } },
          orderBy: { id: 'asc' },
        });
        if (open) remediationId = open.id;
        else {
          remediationId = newId('rem', now);
          await tx.remediation.create({
            data: {
              id: remediationId,
              projectId: identity.projectId,
              clusterId: instance.clusterId,
              instanceId: instance.id,
              mode: body.remediation_mode ?? 'REMEDIATION_MODE_VM_ONLY',
              trigger: 'REMEDIATION_TRIGGER_AUTOMATED',
              state: 'PENDING_APPROVAL',
              reason: `Passive health check alert ${body.alert_name} fired on ${vm?.name ?? instance.name}.`,
              passiveHealthCheckEventId: alertId,
              requestedBy: 'system:passive-health-check',
              createTime: BigInt(now),
              updateTime: BigInt(now),
            },
          });
        }
      }
      return tx.passiveHealthCheckAlert.create({
        data: {
          id: alertId,
          projectId: identity.projectId,
          clusterId: instance.clusterId,
          instanceId: instance.id,
          targetVm: vm?.name ?? '',
          alertName: body.alert_name,
          severity,
          annotations: JSON.stringify(body.annotations ?? {}),
          startedAt: BigInt(now),
          remediationId,
        },
      });
    });
    return wire.passiveHealthCheckAlert(alert);
  },

  resolvePassiveHealthCheckAlert: async ({ db, clock, identity, params }) => {
    const alert = await db.write(async (tx) => {
      await findCluster(tx, identity.projectId, params.cluster_id);
      let a = await owned(tx.passiveHealthCheckAlert, identity.projectId, { id: params.alert_id, clusterId: params.cluster_id }, {
        what: 'passive health check alert',
        id: params.alert_id,
        param: 'alert_id',
      });
      if (a.resolvedAt === null) {
        a = await tx.passiveHealthCheckAlert.update({ where: { id: a.id }, data: { resolvedAt: BigInt(clock.now()) } });
        if (a.remediationId) await autoResolveIfCleared(tx, clock, a.remediationId);
      }
      return a;
    });
    return wire.passiveHealthCheckAlert(alert);
  },

  createRemediation: async ({ db, clock, config, identity, params, query, body }) => {
    refuseUnsupportedMode(body.mode);
    const key = query.remediation_id;
    const hash = requestHash({ cluster_id: params.cluster_id, instance_id: params.instance_id, mode: body.mode, reason: body.reason ?? null });
    const attempt = () =>
      db.write(async (tx) => {
        const instance = await findInstance(tx, identity.projectId, params.cluster_id, params.instance_id);
        if (key) {
          const seen = await tx.idempotencyRecord.findUnique({
            where: { projectId_operation_key: { projectId: identity.projectId, operation: 'createRemediation', key } },
          });
          if (seen) {
            if (seen.requestHash !== hash) {
              throw conflict(
                `The idempotency key '${key}' was already used with a different request; use a new remediation_id.`,
                'idempotency_key_reused',
                'remediation_id',
              );
            }
            return (await tx.remediation.findUnique({ where: { id: seen.resourceId } }))!;
          }
        }
        const now = clock.now();
        const r = await tx.remediation.create({
          data: {
            id: newId('rem', now),
            projectId: identity.projectId,
            clusterId: instance.clusterId,
            instanceId: instance.id,
            mode: body.mode,
            trigger: 'REMEDIATION_TRIGGER_MANUAL',
            state: 'PENDING',
            reason: body.reason ?? null,
            requestedBy: identity.apiKeyId,
            createTime: BigInt(now),
            updateTime: BigInt(now),
          },
        });
        if (key) {
          await tx.idempotencyRecord.create({
            data: { projectId: identity.projectId, operation: 'createRemediation', key, requestHash: hash, resourceId: r.id, createdAt: BigInt(now) },
          });
        }
        await scheduleRemediation(tx, clock, config, r);
        return r;
      });
    let r: Remediation;
    try {
      r = await attempt();
    } catch (err) {
      // Two processes raced on the same key (PostgreSQL): the loser's transaction rolled back; answer as a replay.
      if (!key || !isUniqueViolation(err)) throw err;
      r = await attempt();
    }
    return remediationView(db.prisma, r);
  },

  listRemediations: async ({ db, identity, params, query }) => {
    const instance = await findInstance(db.prisma, identity.projectId, params.cluster_id, params.instance_id);
    const order: 'asc' | 'desc' = query.order_by === 'create_time desc' || query.order_by === undefined ? 'desc' : 'asc';
    const pageSize = query.page_size ?? 50;
    let after: string | undefined;
    if (query.page_token) {
      let token: { k?: unknown; o?: unknown } = {};
      try {
        token = JSON.parse(Buffer.from(query.page_token, 'base64url').toString('utf8'));
      } catch {
        /* refused below */
      }
      if (typeof token.k !== 'string' || token.o !== order) {
        throw badRequest('page_token is not a token of this listing (or was made for another order_by).', 'page_token', 'invalid_page_token');
      }
      after = token.k;
    }
    const list = (v: unknown) => (v === undefined ? undefined : ([] as string[]).concat(v as string[]));
    const [states, triggers, modes] = [list(query.state), list(query.trigger), list(query.mode)];
    const rows = await db.prisma.remediation.findMany({
      where: {
        instanceId: instance.id,
        projectId: identity.projectId,
        ...(states?.length ? { state: { in: states } } : {}),
        ...(triggers?.length ? { trigger: { in: triggers } } : {}),
        ...(modes?.length ? { mode: { in: modes } } : {}),
        ...(after ? { id: order === 'desc' ? { lt: after } : { gt: after } } : {}),
      },
      // Ids start with their creation time, so id order is creation order.
      orderBy: { id: order },
      take: pageSize + 1,
    });
    const page = rows.slice(0, pageSize);
    const hasNext = rows.length > pageSize;
    const alerts = await db.prisma.passiveHealthCheckAlert.findMany({
      where: { remediationId: { in: page.map((r) => r.id) } },
      orderBy: [{ startedAt: 'asc' }, { id: 'asc' }],
    });
    return {
      remediations: page.map((r) => wire.remediation(r, instance.name, alerts.filter((a) => a.remediationId === r.id))),
      next_page_token: hasNext ? Buffer.from(JSON.stringify({ k: page[page.length - 1].id, o: order })).toString('base64url') : '',
      has_next: hasNext,
    };
  },

  getRemediation: async ({ db, identity, params }) => {
    const { r, instance } = await findRemediation(db.prisma, identity.projectId, params);
    return remediationView(db.prisma, r, instance.name);
  },

  approveRemediation: async (ctx) => {
    refuseUnsupportedMode(ctx.body?.mode);
    return review(ctx, 'approve', { comment: ctx.body?.comment, mode: ctx.body?.mode });
  },

  rejectRemediation: async (ctx) => review(ctx, 'reject', { comment: ctx.body?.comment }),

  cancelRemediation: async (ctx) => review(ctx, 'cancel'),
} satisfies ModuleHandlers;
