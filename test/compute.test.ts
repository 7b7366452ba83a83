// Tag Compute: the seeded cluster, passive health-check alerts, remediations (the transition table walked over the
// API, the runner's steps, each mode's effect on the instance, idempotency) and the official client.
import { Writable } from 'node:stream';
import supertest from 'supertest';
import Together from 'together-ai';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { ManualClock } from '../server/core/clock.ts';
import { loadConfig } from '../server/core/config.ts';
import { createLogger } from '../server/core/log.ts';
import { localClusterEngine } from '../server/modules/compute/engine.ts';
import { remediationMachine } from '../server/modules/compute/machine.ts';
import { type ClusterSpec, createCluster } from '../server/modules/compute/rows.ts';
import { startPlatform } from '../server/platform.ts';
import { scratchDatabase } from './support/database.ts';
import { expectError } from './support/expect.ts';
import { startTestPlatform, type TestPlatform } from './support/platform.ts';

const START = remediationMachine.timed!.PENDING!.defaultMs;
const RUN = remediationMachine.timed!.RUNNING!.defaultMs;

let t: TestPlatform;
let clusterId: string;
let nodes: Record<string, string>; // instance name -> id in the seeded cluster

beforeAll(async () => {
  t = await startTestPlatform();
  const res = await t.http.get('/v1/compute/clusters').set(auth());
  clusterId = res.body.clusters[0].cluster_id;
  const inst = await t.http.get(`/v1/compute/clusters/${clusterId}/instances`).set(auth());
  nodes = Object.fromEntries(inst.body.instances.map((i: any) => [i.instance_name, i.instance_id]));
});
afterAll(() => t?.close());

const auth = (key = t.caller.key) => ({ Authorization: `Bearer ${key}` });
const remPath = (c: string, i: string, rest = '') => `/v1/compute/clusters/${c}/instances/${i}/remediations${rest}`;
const create = (c: string, i: string, body: object, query: Record<string, string> = {}) => t.http.post(remPath(c, i)).query(query).set(auth()).send(body);
const get = (c: string, i: string, id: string) => t.http.get(remPath(c, i, `/${id}`)).set(auth());
const act = (c: string, i: string, id: string, action: string, body?: object) => {
  const r = t.http.post(remPath(c, i, `/${id}/${action}`)).set(auth());
  return body === undefined ? r : r.send(body);
};
const instances = async (c = clusterId) =>
  Object.fromEntries((await t.http.get(`/v1/compute/clusters/${c}/instances`).set(auth())).body.instances.map((i: any) => [i.instance_name, i]));
const injectAlert = (c: string, body: object) => t.http.post(`/v1/compute/clusters/${c}/passive_health_check_alerts`).set(auth()).send(body);
const resolveAlert = (c: string, alertId: string) => t.http.post(`/v1/compute/clusters/${c}/passive_health_check_alerts/${alertId}/resolve`).set(auth());

/** A new one-instance cluster in the default project (so each case starts from a clean instance). */
async function freshInstance(opts: { unrecoverable?: boolean; hosts?: ClusterSpec['hosts'] } = {}) {
  const spec: ClusterSpec = {
    name: 'scratch',
    region: 'us-central-8',
    cluster_type: 'KUBERNETES',
    gpu_type: 'H100_SXM',
    hosts: opts.hosts ?? [{ name: 'h1', num_gpus: 8, vm_capacity: 2 }],
    instances: [{ name: 'n1', host: 'h1', num_gpus: 8, unrecoverable: opts.unrecoverable }],
  };
  const { clusterId: c, instanceIds } = await t.services.db.write((tx) => createCluster(tx, t.clock, t.caller.identity.projectId, spec));
  return { c, i: instanceIds.n1 };
}

describe('the seeded cluster', () => {
  test('one cluster in the default project, with hosts and one running VM per instance', async () => {
    const res = await t.http.get('/v1/compute/clusters').set(auth());
    expect(res.status).toBe(200);
    expect(res.body.clusters).toHaveLength(1);
    const cluster = (await t.http.get(`/v1/compute/clusters/${clusterId}`).set(auth())).body;
    expect(cluster).toMatchObject({ cluster_name: 'default-h100-cluster', project_id: t.caller.identity.projectId, status: 'Ready', num_gpus: 32 });
    expect(cluster.hosts.map((h: any) => [h.host_name, h.vm_count, h.vm_capacity, h.cordoned])).toEqual([
      ['host-a', 2, 2, false],
      ['host-b', 2, 2, false],
      ['host-c', 0, 1, false],
    ]);
    expect(cluster.gpu_worker_nodes.map((n: any) => n.node_id).sort()).toEqual(['gpu-node-1-vm1', 'gpu-node-2-vm1', 'gpu-node-3-vm1', 'gpu-node-4-vm1']);
    expect(cluster.deleted_gpu_worker_nodes).toEqual([]);
    const list = await instances();
    expect(Object.keys(list)).toEqual(['gpu-node-1', 'gpu-node-2', 'gpu-node-3', 'gpu-node-4']);
    expect(list['gpu-node-1']).toMatchObject({ status: 'RUNNING', node_id: 'gpu-node-1-vm1', host_name: 'host-a', boot_count: 1 });
  });

  test("another project sees no cluster, and the default project's cluster is 404 to it", async () => {
    expect((await t.http.get('/v1/compute/clusters').set(auth(t.other.key))).body).toEqual({ clusters: [] });
    expectError(await t.http.get(`/v1/compute/clusters/${clusterId}`).set(auth(t.other.key)), 404, { code: 'not_found', param: 'cluster_id' });
  });

  test('unknown cluster, instance, remediation and alert ids answer 404 naming the parameter', async () => {
    expectError(await t.http.get('/v1/compute/clusters/nope/instances').set(auth()), 404, { param: 'cluster_id' });
    expectError(await create(clusterId, 'nope', { mode: 'REMEDIATION_MODE_VM_ONLY' }), 404, { param: 'instance_id' });
    expectError(await get(clusterId, nodes['gpu-node-1'], 'rem_nope'), 404, { param: 'remediation_id' });
    expectError(await resolveAlert(clusterId, 'nope'), 404, { param: 'alert_id' });
    expectError(await injectAlert(clusterId, { instance_id: 'nope', alert_name: 'X' }), 404, { param: 'instance_id' });
  });
});

describe("the platform's cluster fields, each with what this platform has", () => {
  const PHASES = (at: string) => [
    { phase: 'NODE_PHASE_BOOTING', transition_time: at },
    { phase: 'NODE_PHASE_RUNNING', transition_time: at },
  ];

  test('the seeded cluster: its declared configuration and shapes, and empty or zero for what is not modelled', async () => {
    const cluster = (await t.http.get(`/v1/compute/clusters/${clusterId}`).set(auth())).body;
    expect(cluster).toMatchObject({
      gpu_type: 'H100_SXM',
      cuda_version: '12.4',
      nvidia_driver_version: '550',
      billing_type: 'RESERVED',
      num_reserved_gpus: 32,
      num_capacity_pool_gpus: 0,
      desired_preemptible_gpus: 0,
      allocated_preemptible_gpus: 0,
      num_cpu_workers: 0,
      kube_config: '',
      volumes: [],
      control_plane_nodes: [],
      add_ons: [],
      phase_transitions: [{ phase: 'CLUSTER_PHASE_READY', transition_time: cluster.created_at }],
    });
    expect(cluster.gpu_worker_nodes).toHaveLength(4);
    for (const node of cluster.gpu_worker_nodes) {
      expect(node).toMatchObject({ num_gpus: 8, num_cpu_cores: 104, memory_gib: 1600, networks: [], phase_transitions: PHASES(node.created_at) });
    }
    expect((await t.http.get('/v1/compute/clusters').set(auth())).body.clusters[0]).toEqual(cluster);
  });

  test("projectId lists the clusters of the key's own project, and none of any other project", async () => {
    const own = await t.http.get('/v1/compute/clusters').query({ projectId: t.caller.identity.projectId }).set(auth());
    expect(own.status, JSON.stringify(own.body)).toBe(200);
    expect(own.body.clusters.map((x: any) => x.cluster_id)).toContain(clusterId);
    expect((await t.http.get('/v1/compute/clusters?projectId=').set(auth())).body.clusters.map((x: any) => x.cluster_id)).toContain(clusterId);
    expect((await t.http.get('/v1/compute/clusters').query({ projectId: t.other.identity.projectId }).set(auth())).body).toEqual({ clusters: [] });
    expect((await t.http.get('/v1/compute/clusters').query({ projectId: t.caller.identity.projectId }).set(auth(t.other.key))).body).toEqual({ clusters: [] });
    expect((await t.http.get('/v1/compute/clusters').query({ projectId: 'proj_nope' }).set(auth())).body).toEqual({ clusters: [] });
  });

  test('phases follow what happens: a reboot boots again, a HOST_AWARE cordon degrades the cluster, a new VM boots; reserved GPUs stay', async () => {
    const spec: ClusterSpec = {
      name: 'phases',
      region: 'us-central-8',
      cluster_type: 'SLURM',
      gpu_type: 'H200_SXM',
      billing_type: 'ON_DEMAND',
      hosts: [
        { name: 'h1', num_gpus: 8, vm_capacity: 1 },
        { name: 'h2', num_gpus: 8, vm_capacity: 1 },
      ],
      instances: [{ name: 'n1', host: 'h1', num_gpus: 8, num_cpu_cores: 96, memory_gib: 1843.5 }],
    };
    const { clusterId: c, instanceIds } = await t.services.db.write((tx) => createCluster(tx, t.clock, t.caller.identity.projectId, spec));
    const i = instanceIds.n1;
    const cluster = async () => (await t.http.get(`/v1/compute/clusters/${c}`).set(auth())).body;
    const before = await cluster();
    expect(before).toMatchObject({ gpu_type: 'H200_SXM', billing_type: 'ON_DEMAND', num_reserved_gpus: 0, cuda_version: '', nvidia_driver_version: '' });
    expect(before.gpu_worker_nodes[0]).toMatchObject({ num_cpu_cores: 96, memory_gib: 1843.5 });

    const run = async (mode: string) => {
      const id = (await create(c, i, { mode })).body.id;
      await t.advance(START);
      await t.advance(RUN);
      return (await get(c, i, id)).body;
    };
    const reboot = await run('REMEDIATION_MODE_REBOOT_VM');
    expect(reboot.state).toBe('SUCCEEDED');
    const rebooted = (await cluster()).gpu_worker_nodes[0];
    expect(rebooted.phase_transitions).toEqual([...PHASES(before.gpu_worker_nodes[0].created_at), ...PHASES(reboot.end_time)]);

    const moved = await run('REMEDIATION_MODE_HOST_AWARE');
    expect(moved.state).toBe('SUCCEEDED');
    const after = await cluster();
    expect(after.status).toBe('Degraded');
    expect(after.phase_transitions).toEqual([
      { phase: 'CLUSTER_PHASE_READY', transition_time: before.created_at },
      { phase: 'CLUSTER_PHASE_DEGRADED', transition_time: moved.start_time },
    ]);
    expect(after.gpu_worker_nodes[0]).toMatchObject({
      node_id: 'n1-vm2',
      host_name: 'h2',
      num_cpu_cores: 96,
      memory_gib: 1843.5,
      phase_transitions: PHASES(moved.end_time),
    });
    // The deleted VM keeps its history.
    expect(after.deleted_gpu_worker_nodes[0]).toMatchObject({ node_id: 'n1-vm1', status: 'Deleted', phase_transitions: rebooted.phase_transitions });

    const evicted = await run('REMEDIATION_MODE_EVICT_WITHOUT_REPLACEMENT');
    expect(evicted.state).toBe('SUCCEEDED');
    expect(await cluster()).toMatchObject({ num_gpus: 0, num_reserved_gpus: 0 });
  });

  test('a RESERVED cluster keeps its reserved GPUs when a VM is evicted (num_gpus counts running VMs)', async () => {
    const { c, i } = await freshInstance();
    expect((await t.http.get(`/v1/compute/clusters/${c}`).set(auth())).body).toMatchObject({ billing_type: 'RESERVED', num_reserved_gpus: 8, num_gpus: 8 });
    await create(c, i, { mode: 'REMEDIATION_MODE_EVICT_WITHOUT_REPLACEMENT' });
    await t.advance(START);
    await t.advance(RUN);
    expect((await t.http.get(`/v1/compute/clusters/${c}`).set(auth())).body).toMatchObject({ num_reserved_gpus: 8, num_gpus: 0, gpu_worker_nodes: [] });
  });
});

describe('each mode changes the instance (seeded cluster, in order)', () => {
  const runToEnd = async (name: string, mode: string) => {
    const res = await create(clusterId, nodes[name], { mode, reason: `test ${mode}` });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ state: 'PENDING', trigger: 'REMEDIATION_TRIGGER_MANUAL', mode, requested_by: t.caller.identity.apiKeyId });
    await t.advance(START);
    const running = (await get(clusterId, nodes[name], res.body.id)).body;
    expect(running.state).toBe('RUNNING');
    expect(running.start_time).toBeDefined();
    expect((await instances())[name].status).toBe('REMEDIATING');
    await t.advance(RUN);
    return (await get(clusterId, nodes[name], res.body.id)).body;
  };

  test('REBOOT_VM reboots the same VM on the same host', async () => {
    const r = await runToEnd('gpu-node-1', 'REMEDIATION_MODE_REBOOT_VM');
    expect(r.state).toBe('SUCCEEDED');
    expect(r.end_time).toBeDefined();
    expect((await instances())['gpu-node-1']).toMatchObject({ status: 'RUNNING', node_id: 'gpu-node-1-vm1', host_name: 'host-a', boot_count: 2 });
  });

  test('HOST_AWARE cordons the host and provisions the new VM on a different host', async () => {
    const r = await runToEnd('gpu-node-1', 'REMEDIATION_MODE_HOST_AWARE');
    expect(r.state).toBe('SUCCEEDED');
    expect((await instances())['gpu-node-1']).toMatchObject({ status: 'RUNNING', node_id: 'gpu-node-1-vm2', host_name: 'host-c', boot_count: 1 });
    const cluster = (await t.http.get(`/v1/compute/clusters/${clusterId}`).set(auth())).body;
    expect(cluster.status).toBe('Degraded');
    expect(cluster.hosts.find((h: any) => h.host_name === 'host-a').cordoned).toBe(true);
    expect(cluster.deleted_gpu_worker_nodes.map((n: any) => [n.node_id, n.status])).toEqual([['gpu-node-1-vm1', 'Deleted']]);
  });

  test('HOST_AWARE fails when no other host has room; the VM keeps running', async () => {
    const r = await runToEnd('gpu-node-2', 'REMEDIATION_MODE_HOST_AWARE');
    expect(r.state).toBe('FAILED');
    expect(r.error_message).toMatch(/No host other than/);
    expect((await instances())['gpu-node-2']).toMatchObject({ status: 'RUNNING', node_id: 'gpu-node-2-vm1', host_name: 'host-a' });
  });

  test('VM_ONLY deletes the VM and provisions a new one on an available host', async () => {
    const r = await runToEnd('gpu-node-3', 'REMEDIATION_MODE_VM_ONLY');
    expect(r.state).toBe('SUCCEEDED');
    // host-a is cordoned, host-c is full; host-b has the slot the old VM freed.
    expect((await instances())['gpu-node-3']).toMatchObject({ status: 'RUNNING', node_id: 'gpu-node-3-vm2', host_name: 'host-b' });
  });

  test('EVICT_WITHOUT_REPLACEMENT leaves the instance without a VM; a reboot then fails', async () => {
    const r = await runToEnd('gpu-node-2', 'REMEDIATION_MODE_EVICT_WITHOUT_REPLACEMENT');
    expect(r.state).toBe('SUCCEEDED');
    expect((await instances())['gpu-node-2']).toMatchObject({ status: 'EVICTED', node_id: null, host_id: null, boot_count: 0 });
    const cluster = (await t.http.get(`/v1/compute/clusters/${clusterId}`).set(auth())).body;
    expect(cluster.gpu_worker_nodes.map((n: any) => n.instance_id)).not.toContain(nodes['gpu-node-2']);
    const again = await runToEnd('gpu-node-2', 'REMEDIATION_MODE_REBOOT_VM');
    expect(again).toMatchObject({ state: 'FAILED', error_message: 'Instance gpu-node-2 has no VM to reboot.' });
    expect((await instances())['gpu-node-2'].status).toBe('EVICTED');
  });

  test('an instance the seed marks unrecoverable fails every remediation, with error_message', async () => {
    const r = await runToEnd('gpu-node-4', 'REMEDIATION_MODE_VM_ONLY');
    expect(r).toMatchObject({ state: 'FAILED', error_message: expect.stringMatching(/unrecoverable/) });
    expect((await instances())['gpu-node-4']).toMatchObject({ status: 'RUNNING', node_id: 'gpu-node-4-vm1' });
  });

  test('remediations of one instance run one at a time', async () => {
    const { c, i } = await freshInstance();
    const a = (await create(c, i, { mode: 'REMEDIATION_MODE_REBOOT_VM' })).body;
    const b = (await create(c, i, { mode: 'REMEDIATION_MODE_REBOOT_VM' })).body;
    await t.advance(START);
    const states = [(await get(c, i, a.id)).body.state, (await get(c, i, b.id)).body.state].sort();
    expect(states).toEqual(['PENDING', 'RUNNING']);
    await t.advance(RUN);
    await t.advance(START);
    await t.advance(RUN);
    expect((await get(c, i, a.id)).body.state).toBe('SUCCEEDED');
    expect((await get(c, i, b.id)).body.state).toBe('SUCCEEDED');
    expect((await instances(c)).n1.boot_count).toBe(3);
  });

  test('the local engine decides deterministically', () => {
    const hosts = [
      { id: 'a', name: 'a', cordoned: false, vmCapacity: 1, vmCount: 1 },
      { id: 'b', name: 'b', cordoned: false, vmCapacity: 2, vmCount: 2 },
    ];
    const plan = (mode: string, vmHostId: string | null = 'a') => localClusterEngine.plan({ mode, instanceName: 'n', unrecoverable: false, vmHostId, hosts });
    expect(plan('REMEDIATION_MODE_VM_ONLY')).toEqual({ kind: 'replace', hostId: 'a' });
    expect(plan('REMEDIATION_MODE_HOST_AWARE').kind).toBe('fail');
    expect(plan('REMEDIATION_MODE_VM_ONLY', null).kind).toBe('fail');
    expect(plan('REMEDIATION_MODE_EVICT_WITHOUT_REPLACEMENT', null).kind).toBe('fail');
  });
});

describe('the transition table', () => {
  // Written out independently of the code's table: the remediation states the requirements list, and what
  // the platform's documentation says of how each is reached.
  const ALLOWED: Record<string, Record<string, string>> = {
    PENDING_APPROVAL: { approve: 'PENDING', reject: 'CANCELLED', cancel: 'CANCELLED', alert_resolved: 'AUTO_RESOLVED' },
    PENDING: { start: 'RUNNING', cancel: 'CANCELLED', alert_resolved: 'AUTO_RESOLVED' },
    RUNNING: { succeed: 'SUCCEEDED', fail: 'FAILED' },
    SUCCEEDED: {},
    FAILED: {},
    CANCELLED: {},
    AUTO_RESOLVED: {},
  };

  test('the machine has exactly this table, and refuses every other pair with 409 invalid_state_transition', () => {
    expect(remediationMachine.moves()).toEqual(
      Object.entries(ALLOWED).flatMap(([from, row]) => Object.entries(row).map(([event, to]) => ({ from, event, to }))),
    );
    for (const state of remediationMachine.states) {
      for (const event of remediationMachine.events) {
        const to = ALLOWED[state][event];
        if (to) expect(remediationMachine.next(state, event)).toBe(to);
        else
          expect(() => remediationMachine.next(state, event)).toThrowError(
            expect.objectContaining({ status: 409, code: 'invalid_state_transition', param: null }),
          );
      }
    }
  });

  /** Brings a new remediation of a fresh instance to `state` through the API and the runner. */
  async function reach(state: string) {
    const { c, i } = await freshInstance({ unrecoverable: state === 'FAILED' });
    const viaAlert = async () => {
      const alert = (await injectAlert(c, { instance_id: i, alert_name: 'DmesgXidError' })).body;
      return { id: alert.node_remediation_intent_id as string, alert };
    };
    let id: string;
    if (state === 'PENDING_APPROVAL') id = (await viaAlert()).id;
    else if (state === 'AUTO_RESOLVED') {
      const { id: rid, alert } = await viaAlert();
      expect((await resolveAlert(c, alert.passive_health_check_alert_id)).status).toBe(200);
      id = rid;
    } else {
      id = (await create(c, i, { mode: 'REMEDIATION_MODE_REBOOT_VM' })).body.id;
      if (state === 'CANCELLED') await act(c, i, id, 'cancel');
      if (state === 'RUNNING' || state === 'SUCCEEDED' || state === 'FAILED') await t.advance(START);
      if (state === 'SUCCEEDED' || state === 'FAILED') await t.advance(RUN);
    }
    const r = (await get(c, i, id)).body;
    expect(r.state).toBe(state);
    return { c, i, id };
  }

  const USER_EVENTS = ['approve', 'reject', 'cancel'] as const;
  for (const state of remediationMachine.states) {
    for (const event of USER_EVENTS) {
      const to = ALLOWED[state][event];
      test(`${state} --${event}--> ${to ?? '409'}`, async () => {
        const { c, i, id } = await reach(state);
        const res = await act(c, i, id, event, event === 'cancel' ? undefined : { comment: `${event} it` });
        if (to) {
          expect(res.status, JSON.stringify(res.body)).toBe(200);
          expect(res.body.state).toBe(to);
          if (event !== 'cancel') expect(res.body).toMatchObject({ reviewed_by: t.caller.identity.apiKeyId, review_comment: `${event} it` });
          if (to === 'CANCELLED') expect(res.body.end_time).toBeDefined();
        } else {
          expectError(res, 409, { code: 'invalid_state_transition', param: null });
          expect((await get(c, i, id)).body.state).toBe(state);
        }
      });
    }
  }

  test('runner: PENDING -> RUNNING -> SUCCEEDED, and RUNNING -> FAILED (walked above through reach)', async () => {
    await reach('SUCCEEDED');
    await reach('FAILED');
  });

  test('alert_resolved: PENDING -> AUTO_RESOLVED, and a RUNNING remediation carries on', async () => {
    const { c, i } = await freshInstance();
    const alert = (await injectAlert(c, { instance_id: i, alert_name: 'GpuFallenOffBus' })).body;
    const id = alert.node_remediation_intent_id;
    expect((await act(c, i, id, 'approve', {})).body.state).toBe('PENDING');
    const resolved = await resolveAlert(c, alert.passive_health_check_alert_id);
    expect(resolved.body.resolved_at).toBeDefined();
    const r = (await get(c, i, id)).body;
    expect(r.state).toBe('AUTO_RESOLVED');
    expect(r.linked_alerts[0].resolved_at).toBeDefined();
    await t.advance(START);
    expect((await get(c, i, id)).body.state).toBe('AUTO_RESOLVED');

    const second = (await injectAlert(c, { instance_id: i, alert_name: 'GpuFallenOffBus' })).body;
    const rid = second.node_remediation_intent_id;
    expect(rid).not.toBe(id);
    await act(c, i, rid, 'approve', {});
    await t.advance(START);
    await resolveAlert(c, second.passive_health_check_alert_id);
    expect((await get(c, i, rid)).body.state).toBe('RUNNING');
    await t.advance(RUN);
    expect((await get(c, i, rid)).body.state).toBe('SUCCEEDED');
  });
});

describe('passive health-check alerts (the control-plane hook)', () => {
  test('an alert raises an AUTOMATED remediation awaiting approval; approval runs it with the approved mode', async () => {
    const { c, i } = await freshInstance();
    const res = await injectAlert(c, { instance_id: i, alert_name: 'DmesgXidError', severity: 'PHC_SEVERITY_CRITICAL', annotations: { xid: '79' } });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ cluster_id: c, instance_id: i, target_vm: 'n1-vm1', alert_name: 'DmesgXidError', annotations: { xid: '79' } });
    expect(res.body.resolved_at).toBeUndefined();
    const r = (await get(c, i, res.body.node_remediation_intent_id)).body;
    expect(r).toMatchObject({
      state: 'PENDING_APPROVAL',
      trigger: 'REMEDIATION_TRIGGER_AUTOMATED',
      mode: 'REMEDIATION_MODE_VM_ONLY',
      passive_health_check_event_id: res.body.passive_health_check_alert_id,
      requested_by: 'system:passive-health-check',
      instance_name: 'n1',
    });
    expect(r.linked_alerts).toHaveLength(1);
    // Nothing happens without approval.
    await t.advance(START + RUN);
    expect((await get(c, i, r.id)).body.state).toBe('PENDING_APPROVAL');
    const approved = await act(c, i, r.id, 'approve', { comment: 'go', mode: 'REMEDIATION_MODE_REBOOT_VM' });
    expect(approved.body).toMatchObject({ state: 'PENDING', mode: 'REMEDIATION_MODE_REBOOT_VM', review_comment: 'go' });
    await t.advance(START);
    await t.advance(RUN);
    expect((await get(c, i, r.id)).body.state).toBe('SUCCEEDED');
    expect((await instances(c)).n1.boot_count).toBe(2);
  });

  test('a second alert links to the open remediation; it auto-resolves only when every linked alert is resolved', async () => {
    const { c, i } = await freshInstance();
    const a1 = (await injectAlert(c, { instance_id: i, alert_name: 'A' })).body;
    const a2 = (await injectAlert(c, { instance_id: i, alert_name: 'B', severity: 'PHC_SEVERITY_WARNING' })).body;
    expect(a2.node_remediation_intent_id).toBe(a1.node_remediation_intent_id);
    const id = a1.node_remediation_intent_id;
    await resolveAlert(c, a1.passive_health_check_alert_id);
    expect((await get(c, i, id)).body.state).toBe('PENDING_APPROVAL');
    await resolveAlert(c, a2.passive_health_check_alert_id);
    const r = (await get(c, i, id)).body;
    expect(r.state).toBe('AUTO_RESOLVED');
    expect(r.linked_alerts.map((a: any) => [a.alert_name, typeof a.resolved_at]).sort()).toEqual([
      ['A', 'string'],
      ['B', 'string'],
    ]);
    // Resolving again changes nothing.
    const again = await resolveAlert(c, a1.passive_health_check_alert_id);
    expect(again.status).toBe(200);
  });

  test('an INFO alert is recorded without raising a remediation', async () => {
    const { c, i } = await freshInstance();
    const res = await injectAlert(c, { instance_id: i, alert_name: 'Note', severity: 'PHC_SEVERITY_INFO' });
    expect(res.status).toBe(200);
    expect(res.body.node_remediation_intent_id).toBeUndefined();
    expect((await t.http.get(remPath(c, i)).set(auth())).body.remediations).toEqual([]);
  });

  test('a mode outside the four is refused (400 naming the field, listing exactly the four): HOST_POWER_CYCLE too, on create, approve and alert, storing nothing', async () => {
    const { c, i } = await freshInstance();
    const FOUR = 'REMEDIATION_MODE_VM_ONLY, REMEDIATION_MODE_HOST_AWARE, REMEDIATION_MODE_EVICT_WITHOUT_REPLACEMENT, REMEDIATION_MODE_REBOOT_VM';
    const refusedListingFour = (res: any, param: string) => {
      expectError(res, 400, { code: 'enum', param });
      expect(res.body.error.message).toMatch(new RegExp(`allowed values: ${FOUR}\\.$`));
    };
    for (const mode of ['REMEDIATION_MODE_REBOOT', 'REMEDIATION_MODE_HOST_POWER_CYCLE']) {
      refusedListingFour(await create(c, i, { mode }), 'mode');
      refusedListingFour(await injectAlert(c, { instance_id: i, alert_name: 'X', remediation_mode: mode }), 'remediation_mode');
    }
    expect((await t.http.get(remPath(c, i)).set(auth())).body.remediations).toEqual([]);
    const alert = (await injectAlert(c, { instance_id: i, alert_name: 'X' })).body;
    refusedListingFour(await act(c, i, alert.node_remediation_intent_id, 'approve', { mode: 'REMEDIATION_MODE_HOST_POWER_CYCLE' }), 'mode');
    expect((await get(c, i, alert.node_remediation_intent_id)).body.state).toBe('PENDING_APPROVAL');
    // As a list filter it is a value like any other: no remediation has it.
    const filtered = await t.http.get(remPath(c, i)).query({ mode: 'REMEDIATION_MODE_HOST_POWER_CYCLE' }).set(auth());
    expect(filtered.status).toBe(200);
    expect(filtered.body.remediations).toEqual([]);
  });
});

describe('remediation_id is an idempotency key', () => {
  test('the same key and the same body replay the first response exactly and create nothing', async () => {
    const { c, i } = await freshInstance();
    const body = { mode: 'REMEDIATION_MODE_VM_ONLY', reason: 'flaky GPU' };
    const first = await create(c, i, body, { remediation_id: 'key-1' });
    expect(first.status).toBe(200);
    await t.advance(START);
    const again = await create(c, i, body, { remediation_id: 'key-1' });
    expect(again.status).toBe(200);
    // Stripe's promise: the first response, even though the remediation has moved on since.
    expect(again.body).toEqual(first.body);
    expect((await get(c, i, first.body.id)).body.state).toBe('RUNNING');
    expect((await t.http.get(remPath(c, i)).set(auth())).body.remediations).toHaveLength(1);
  });

  test('the same key with another body, or another instance, is refused with 409', async () => {
    const { c, i } = await freshInstance();
    const other = await freshInstance();
    expect((await create(c, i, { mode: 'REMEDIATION_MODE_VM_ONLY' }, { remediation_id: 'key-2' })).status).toBe(200);
    expectError(await create(c, i, { mode: 'REMEDIATION_MODE_REBOOT_VM' }, { remediation_id: 'key-2' }), 409, {
      code: 'idempotency_key_reused',
      param: 'remediation_id',
    });
    expectError(await create(c, i, { mode: 'REMEDIATION_MODE_VM_ONLY', reason: 'x' }, { remediation_id: 'key-2' }), 409, {
      code: 'idempotency_key_reused',
    });
    expectError(await create(other.c, other.i, { mode: 'REMEDIATION_MODE_VM_ONLY' }, { remediation_id: 'key-2' }), 409, {
      code: 'idempotency_key_reused',
    });
    expect((await t.http.get(remPath(c, i)).set(auth())).body.remediations).toHaveLength(1);
    expect((await t.http.get(remPath(other.c, other.i)).set(auth())).body.remediations).toHaveLength(0);
  });

  test('a refused request stores nothing: the key stays free', async () => {
    const { c, i } = await freshInstance();
    expectError(await create(c, i, { mode: 'REBOOT' }, { remediation_id: 'key-3' }), 400, { param: 'mode' });
    expectError(await create(c, i, { mode: 'REMEDIATION_MODE_HOST_POWER_CYCLE' }, { remediation_id: 'key-3' }), 400, { param: 'mode' });
    expectError(await create(c, 'nope', { mode: 'REMEDIATION_MODE_VM_ONLY' }, { remediation_id: 'key-3' }), 404, { param: 'instance_id' });
    expectError(await create(c, i, { mode: 'REMEDIATION_MODE_VM_ONLY', reason: 5 }, { remediation_id: 'key-3' }), 400, { param: 'reason' });
    expect((await t.http.get(remPath(c, i)).set(auth())).body.remediations).toHaveLength(0);
    const ok = await create(c, i, { mode: 'REMEDIATION_MODE_REBOOT_VM' }, { remediation_id: 'key-3' });
    expect(ok.status).toBe(200);
    expect(ok.body.mode).toBe('REMEDIATION_MODE_REBOOT_VM');
  });

  test('a key is any string of at most 255 characters (the platform sets no length or pattern; an index holds it here); an empty one is no key', async () => {
    const { c, i } = await freshInstance();
    expectError(await create(c, i, { mode: 'REMEDIATION_MODE_REBOOT_VM' }, { remediation_id: 'k'.repeat(256) }), 400, {
      code: 'maxLength',
      param: 'remediation_id',
    });
    for (const key of ['retry node 7 / 2026-11-21 (é)', 'k'.repeat(255)]) {
      const first = await create(c, i, { mode: 'REMEDIATION_MODE_REBOOT_VM' }, { remediation_id: key });
      expect(first.status, JSON.stringify(first.body)).toBe(200);
      expect((await create(c, i, { mode: 'REMEDIATION_MODE_REBOOT_VM' }, { remediation_id: key })).body).toEqual(first.body);
      expectError(await create(c, i, { mode: 'REMEDIATION_MODE_VM_ONLY' }, { remediation_id: key }), 409, {
        code: 'idempotency_key_reused',
        param: 'remediation_id',
      });
    }
    const a = await create(c, i, { mode: 'REMEDIATION_MODE_REBOOT_VM' }, { remediation_id: '' });
    const b = await create(c, i, { mode: 'REMEDIATION_MODE_REBOOT_VM' }, { remediation_id: '' });
    expect([a.status, b.status]).toEqual([200, 200]);
    expect(a.body.id).not.toBe(b.body.id);
    expect(await t.services.db.prisma.idempotencyRecord.count({ where: { key: '' } })).toBe(0);
  });

  test('reason and review comments of any length (the platform sets none)', async () => {
    const { c, i } = await freshInstance();
    const reason = 'r'.repeat(5000);
    expect((await create(c, i, { mode: 'REMEDIATION_MODE_REBOOT_VM', reason })).body.reason).toBe(reason);
    const a1 = (await injectAlert(c, { instance_id: i, alert_name: 'A' })).body.node_remediation_intent_id;
    expect((await act(c, i, a1, 'approve', { comment: 'a'.repeat(5000) })).body.review_comment).toHaveLength(5000);
    const { c: c2, i: i2 } = await freshInstance();
    const a2 = (await injectAlert(c2, { instance_id: i2, alert_name: 'B' })).body.node_remediation_intent_id;
    expect((await act(c2, i2, a2, 'reject', { comment: 'b'.repeat(5000) })).body.review_comment).toHaveLength(5000);
    // Path ids of any length are looked up.
    expectError(await get(c, i, 'x'.repeat(300)), 404, { param: 'remediation_id' });
    expectError(await t.http.get(`/v1/compute/clusters/${'y'.repeat(300)}`).set(auth()), 404, { param: 'cluster_id' });
  });

  test('two concurrent requests with the same key create one remediation', async () => {
    const { c, i } = await freshInstance();
    const body = { mode: 'REMEDIATION_MODE_REBOOT_VM' };
    const [a, b] = await Promise.all([create(c, i, body, { remediation_id: 'race' }), create(c, i, body, { remediation_id: 'race' })]);
    expect([a.status, b.status]).toEqual([200, 200]);
    expect(a.body.id).toBe(b.body.id);
    expect((await t.http.get(remPath(c, i)).set(auth())).body.remediations).toHaveLength(1);
  });

  test('keys are scoped to the project', async () => {
    const { c, i } = await freshInstance();
    const theirs = await t.services.db.write((tx) =>
      createCluster(tx, t.clock, t.other.identity.projectId, {
        name: 'theirs',
        region: 'r',
        cluster_type: 'KUBERNETES',
        gpu_type: 'H100_SXM',
        hosts: [{ name: 'h', num_gpus: 8, vm_capacity: 1 }],
        instances: [{ name: 'n', host: 'h', num_gpus: 8 }],
      }),
    );
    expect((await create(c, i, { mode: 'REMEDIATION_MODE_VM_ONLY' }, { remediation_id: 'shared-key' })).status).toBe(200);
    const res = await t.http
      .post(remPath(theirs.clusterId, theirs.instanceIds.n))
      .query({ remediation_id: 'shared-key' })
      .set(auth(t.other.key))
      .send({ mode: 'REMEDIATION_MODE_REBOOT_VM' });
    expect(res.status).toBe(200);
  });
});

describe('listing remediations', () => {
  let c: string;
  let i: string;
  const ids: string[] = [];
  beforeAll(async () => {
    ({ c, i } = await freshInstance());
    for (const mode of ['REMEDIATION_MODE_VM_ONLY', 'REMEDIATION_MODE_REBOOT_VM', 'REMEDIATION_MODE_VM_ONLY']) {
      ids.push((await create(c, i, { mode })).body.id);
      t.clock.advance(1);
    }
    await act(c, i, ids[2], 'cancel');
    ids.push((await injectAlert(c, { instance_id: i, alert_name: 'A' })).body.node_remediation_intent_id);
  });
  const list = (query: string) => t.http.get(`${remPath(c, i)}?${query}`).set(auth());

  test('newest first, paged with next_page_token', async () => {
    const p1 = await list('page_size=3');
    expect(p1.status).toBe(200);
    expect(p1.body.remediations.map((r: any) => r.id)).toEqual([ids[3], ids[2], ids[1]]);
    expect(p1.body.has_next).toBe(true);
    const p2 = await list(`page_size=3&page_token=${p1.body.next_page_token}`);
    expect(p2.body).toMatchObject({ has_next: false, next_page_token: '' });
    expect(p2.body.remediations.map((r: any) => r.id)).toEqual([ids[0]]);
  });

  test('order_by create_time asc', async () => {
    const res = await list('order_by=create_time%20asc');
    expect(res.body.remediations.map((r: any) => r.id)).toEqual(ids);
  });

  test('a token from another ordering, or garbage, is refused', async () => {
    const p1 = await list('page_size=1');
    expectError(await list(`order_by=create_time%20asc&page_token=${p1.body.next_page_token}`), 400, { code: 'invalid_page_token', param: 'page_token' });
    expectError(await list('page_token=garbage'), 400, { code: 'invalid_page_token', param: 'page_token' });
  });

  test('filters: comma-separated (the SDK) and repeated state[] (the public platform)', async () => {
    const byState = await list('state=CANCELLED,PENDING_APPROVAL');
    expect(byState.body.remediations.map((r: any) => r.id).sort()).toEqual([ids[2], ids[3]].sort());
    const brackets = await list('state[]=CANCELLED&state[]=PENDING_APPROVAL');
    expect(brackets.status, JSON.stringify(brackets.body)).toBe(200);
    expect(brackets.body.remediations.map((r: any) => r.id).sort()).toEqual([ids[2], ids[3]].sort());
    const byTrigger = await list('trigger=REMEDIATION_TRIGGER_MANUAL&mode=REMEDIATION_MODE_VM_ONLY');
    expect(byTrigger.body.remediations.map((r: any) => r.id)).toEqual([ids[2], ids[0]]);
    expectError(await list('state=DONE'), 400, { param: 'state.0' });
  });
});

describe("listing remediations: the platform's order_by, page_size and states", () => {
  let c: string;
  let i: string;
  const r: Record<'A' | 'B' | 'C', string> = { A: '', B: '', C: '' };
  beforeAll(async () => {
    ({ c, i } = await freshInstance());
    for (const name of ['A', 'B', 'C'] as const) {
      r[name] = (await create(c, i, { mode: 'REMEDIATION_MODE_REBOOT_VM', reason: name })).body.id;
      t.clock.advance(10);
    }
    await act(c, i, r.A, 'cancel'); // A: created first, changed last
  });
  const list = (query: Record<string, string | number>) => t.http.get(remPath(c, i)).query(query).set(auth());
  const names = (res: any) => res.body.remediations.map((x: any) => x.reason);

  test('order_by takes any ordering expression: fields, directions in any case, several terms', async () => {
    expect(names(await list({}))).toEqual(['C', 'B', 'A']);
    expect(names(await list({ order_by: 'update_time desc' }))).toEqual(['A', 'C', 'B']);
    expect(names(await list({ order_by: 'update_time' }))).toEqual(['B', 'C', 'A']);
    expect(names(await list({ order_by: 'create_time DESC' }))).toEqual(['C', 'B', 'A']);
    expect(names(await list({ order_by: 'state desc, create_time asc' }))).toEqual(['B', 'C', 'A']);
    // end_time: only A has one; absent values sort first ascending.
    expect(names(await list({ order_by: 'end_time asc,create_time desc' }))).toEqual(['C', 'B', 'A']);
  });

  test('an order_by naming no field remediations are ordered by is 400 invalid_order_by; an empty one is the default order', async () => {
    for (const order_by of ['priority desc', 'createTime', ';drop', 'create_time sideways', 'priority desc, update_time desc']) {
      expectError(await list({ order_by }), 400, { code: 'invalid_order_by', param: 'order_by' });
    }
    expect(names(await list({ order_by: '' }))).toEqual(['C', 'B', 'A']);
  });

  test('pages follow any ordering; a token is bound to its ordering; an empty token is the first page', async () => {
    const seen: string[] = [];
    let token = '';
    do {
      const res = await list({ order_by: 'update_time desc', page_size: 1, page_token: token });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      seen.push(...names(res));
      token = res.body.next_page_token;
      expect(res.body.has_next).toBe(token !== '');
    } while (token);
    expect(seen).toEqual(['A', 'C', 'B']);
    const first = await list({ order_by: 'update_time desc', page_size: 1 });
    expectError(await list({ order_by: 'update_time asc', page_token: first.body.next_page_token }), 400, { code: 'invalid_page_token', param: 'page_token' });
    const forged = Buffer.from(JSON.stringify({ k: 'not json', o: 'update_time desc,id desc' })).toString('base64url');
    expectError(await list({ order_by: 'update_time desc', page_token: forged }), 400, { code: 'invalid_page_token', param: 'page_token' });
  });

  test("QUARANTINING and QUARANTINED (the platform's states) are accepted filters that match nothing here", async () => {
    const none = await list({ state: 'QUARANTINING' });
    expect(none.status, JSON.stringify(none.body)).toBe(200);
    expect(none.body).toEqual({ remediations: [], next_page_token: '', has_next: false });
    expect(names(await list({ state: 'QUARANTINED,CANCELLED' }))).toEqual(['A']);
    const repeated = await t.http.get(`${remPath(c, i)}?state[]=QUARANTINED&state[]=QUARANTINING&state[]=PENDING`).set(auth());
    expect(names(repeated)).toEqual(['C', 'B']);
  });

  test('page_size: absent or 0 is the default page (50), above 100 is 100, negative is 400 invalid_limit', async () => {
    const { c: c2, i: i2 } = await freshInstance();
    for (let n = 0; n < 105; n++) await create(c2, i2, { mode: 'REMEDIATION_MODE_REBOOT_VM' });
    const size = async (page_size?: number) => {
      const res = await t.http
        .get(remPath(c2, i2))
        .query(page_size === undefined ? {} : { page_size })
        .set(auth());
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      expect(res.body.has_next).toBe(true);
      return res.body.remediations.length;
    };
    expect(await size()).toBe(50);
    expect(await size(0)).toBe(50);
    expectError(await t.http.get(remPath(c2, i2)).query({ page_size: -7 }).set(auth()), 400, { code: 'invalid_limit', param: 'page_size' });
    expect(await size(100)).toBe(100);
    expect(await size(1000)).toBe(100);
    expect(await size(7)).toBe(7);
  });
});

describe('the official together-ai client', () => {
  test('beta.clusters list/retrieve and remediations create/list/retrieve/approve/reject/cancel', async () => {
    const client = new Together({ apiKey: t.caller.key, baseURL: `${t.url}/v1`, maxRetries: 0 });
    const { clusters } = await client.beta.clusters.list();
    expect(clusters.map((x) => x.cluster_id)).toContain(clusterId);
    const cluster = await client.beta.clusters.retrieve(clusterId);
    expect(cluster.cluster_name).toBe('default-h100-cluster');

    const { c, i } = await freshInstance();
    const created = await client.beta.clusters.remediations.create(i, {
      cluster_id: c,
      mode: 'REMEDIATION_MODE_VM_ONLY',
      reason: 'sdk',
      remediation_id: 'sdk-1',
    });
    expect(created).toMatchObject({ state: 'PENDING', reason: 'sdk' });
    const replay = await client.beta.clusters.remediations.create(i, {
      cluster_id: c,
      mode: 'REMEDIATION_MODE_VM_ONLY',
      reason: 'sdk',
      remediation_id: 'sdk-1',
    });
    expect(replay.id).toBe(created.id);
    await expect(
      client.beta.clusters.remediations.create(i, { cluster_id: c, mode: 'REMEDIATION_MODE_REBOOT_VM', remediation_id: 'sdk-1' }),
    ).rejects.toMatchObject({ status: 409, error: { error: { code: 'idempotency_key_reused' } } });
    expect(await client.beta.clusters.remediations.retrieve(created.id, { cluster_id: c, instance_id: i })).toMatchObject({ id: created.id });
    const cancelled = await client.beta.clusters.remediations.cancel(created.id, { cluster_id: c, instance_id: i });
    expect(cancelled.state).toBe('CANCELLED');

    const a1 = (await injectAlert(c, { instance_id: i, alert_name: 'A' })).body.node_remediation_intent_id;
    const approved = await client.beta.clusters.remediations.approve(a1, { cluster_id: c, instance_id: i });
    expect(approved.state).toBe('PENDING');
    await client.beta.clusters.remediations.cancel(a1, { cluster_id: c, instance_id: i });
    const a2 = (await injectAlert(c, { instance_id: i, alert_name: 'B' })).body.node_remediation_intent_id;
    const rejected = await client.beta.clusters.remediations.reject(a2, { cluster_id: c, instance_id: i, comment: 'false alarm' });
    expect(rejected).toMatchObject({ state: 'CANCELLED', review_comment: 'false alarm' });

    const page = await client.beta.clusters.remediations.list(i, {
      cluster_id: c,
      state: ['CANCELLED'],
      trigger: ['REMEDIATION_TRIGGER_AUTOMATED'],
      page_size: 10,
    });
    expect(page.remediations.map((r) => r.id).sort()).toEqual([a1, a2].sort());
    expect(page.has_next).toBe(false);
  });
});

describe('restart', () => {
  test('a RUNNING remediation started by one server process is finished by the next one on the same database', async () => {
    const scratch = await scratchDatabase();
    const base = loadConfig({});
    const config = { ...base, port: 0, databaseUrl: scratch.url, logLevel: 'warn', runner: { ...base.runner, enabled: false } };
    const log = createLogger('warn', new Writable({ write: (_c, _e, done) => done() }));
    try {
      const clock1 = new ManualClock();
      const first = await startPlatform(config, { log, clock: clock1 });
      const key = first.firstKey!;
      const http1 = supertest(first.url!);
      const h = { Authorization: `Bearer ${key}` };
      const cluster = (await http1.get('/v1/compute/clusters').set(h)).body.clusters[0];
      const node = cluster.gpu_worker_nodes.find((n: any) => n.node_id === 'gpu-node-1-vm1');
      const path = `/v1/compute/clusters/${cluster.cluster_id}/instances/${node.instance_id}/remediations`;
      const r = (await http1.post(path).set(h).send({ mode: 'REMEDIATION_MODE_REBOOT_VM' })).body;
      clock1.advance(START);
      await first.services.runner.drain();
      expect((await http1.get(`${path}/${r.id}`).set(h)).body.state).toBe('RUNNING');
      await first.close();

      const clock2 = new ManualClock(clock1.now());
      const second = await startPlatform(config, { log, clock: clock2 });
      try {
        const http2 = supertest(second.url!);
        clock2.advance(RUN);
        await second.services.runner.drain();
        expect((await http2.get(`${path}/${r.id}`).set(h)).body.state).toBe('SUCCEEDED');
        const inst = (await http2.get(`/v1/compute/clusters/${cluster.cluster_id}/instances`).set(h)).body.instances[0];
        expect(inst).toMatchObject({ instance_name: 'gpu-node-1', status: 'RUNNING', boot_count: 2 });
      } finally {
        await second.close();
      }
    } finally {
      await scratch.drop();
    }
  });
});
