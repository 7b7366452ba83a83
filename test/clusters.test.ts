// Tag Compute, GPU clusters made through the API: create -> provisioned -> resized -> deleted -> gone through the
// runner's timed steps (test clock), shared volumes attached and released, add-ons, the region catalogue, the
// project-wide alerts list, billing, another project's ids, bad input changing nothing, and the official client.
import Together from 'together-ai';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { clusterMachine, remediationMachine, volumeMachine } from '../server/modules/compute/machine.ts';
import { expectError } from './support/expect.ts';
import { startTestPlatform, type TestPlatform } from './support/platform.ts';

const CONTROL = clusterMachine.timed!.WaitingForControlPlaneNodes!.defaultMs;
const DATA = clusterMachine.timed!.WaitingForDataPlaneNodes!.defaultMs;
const DRIVERS = clusterMachine.timed!.InstallingDrivers!.defaultMs;
const TEARDOWN = clusterMachine.timed!.Deleting!.defaultMs;
const PROVISION = volumeMachine.timed!.provisioning!.defaultMs;
const VOLUME_DELETE = volumeMachine.timed!.deleting!.defaultMs;

let t: TestPlatform;
beforeAll(async () => {
  t = await startTestPlatform();
});
afterAll(() => t?.close());

const auth = (key = t.caller.key) => ({ Authorization: `Bearer ${key}` });
const base = {
  cluster_name: 'train',
  region: 'us-central-8',
  gpu_type: 'H100_SXM',
  num_gpus: 16,
  billing_type: 'ON_DEMAND',
  cuda_version: '12.8',
  nvidia_driver_version: '570',
};
const create = (body: object, key?: string) => t.http.post('/v1/compute/clusters').set(auth(key)).send(body);
const get = (id: string, key?: string) => t.http.get(`/v1/compute/clusters/${id}`).set(auth(key));
const update = (id: string, body: object, key?: string) => t.http.put(`/v1/compute/clusters/${id}`).set(auth(key)).send(body);
const del = (id: string, key?: string) => t.http.delete(`/v1/compute/clusters/${id}`).set(auth(key));
const volumes = '/v1/compute/clusters/storage/volumes';
const newVolume = (body: object = {}) =>
  t.http
    .post(volumes)
    .set(auth())
    .send({ volume_name: 'data', size_tib: 4, region: 'us-central-8', ...body });
const getVolume = (id: string, key?: string) => t.http.get(`${volumes}/${id}`).set(auth(key));
const addons = (id: string, rest = '') => `/v1/compute/clusters/${id}/addons${rest}`;

/** A new cluster taken to Ready. */
async function readyCluster(body: object = {}) {
  const res = await create({ ...base, ...body });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  await t.advance(CONTROL);
  await t.advance(DATA);
  await t.advance(DRIVERS);
  const c = (await get(res.body.cluster_id)).body;
  expect(c.status).toBe('Ready');
  return c;
}

describe('regions and availability zones (this server catalogue)', () => {
  test('listRegions gives each region its GPU types and driver builds; the zones list every region', async () => {
    const res = await t.http.get('/v1/compute/regions').set(auth());
    expect(res.status).toBe(200);
    const central = res.body.regions.find((r: any) => r.name === 'us-central-8');
    expect(central.supported_instance_types).toEqual(['H100_SXM', 'H200_SXM', 'B200_SXM']);
    expect(central.driver_versions).toContainEqual({ id: 'cuda-12.8-570', cuda_version: '12.8', nvidia_driver_version: '570', os: 'ubuntu-24.04' });
    const zones = await t.http.get('/v1/clusters/availability-zones').set(auth());
    expect(zones.status).toBe(200);
    expect(zones.body.avzones).toEqual(['us-central-8a', 'us-central-8b', 'us-east-4a', 'eu-north-2a', 'eu-north-2b', 'eu-north-2c']);
  });
});

describe('a cluster through its states', () => {
  test('create -> WaitingForControlPlaneNodes -> WaitingForDataPlaneNodes -> InstallingDrivers -> Ready, nodes and billing', async () => {
    const res = await create(base);
    expect(res.status).toBe(200);
    const id = res.body.cluster_id;
    expect(res.body).toMatchObject({
      status: 'WaitingForControlPlaneNodes',
      num_gpus: 0,
      gpu_worker_nodes: [],
      cuda_version: '12.8',
      nvidia_driver_version: '570',
    });
    expect(res.body.billing).toMatchObject({ on_demand_gpu_hours: 0, amount_usd: 0, currency: 'USD' });
    await t.advance(CONTROL);
    expect((await get(id)).body.status).toBe('WaitingForDataPlaneNodes');
    await t.advance(DATA);
    const installing = (await get(id)).body;
    expect(installing).toMatchObject({ status: 'InstallingDrivers', num_gpus: 16 });
    expect(installing.gpu_worker_nodes.map((n: any) => n.node_id)).toEqual(['gpu-node-1-vm1', 'gpu-node-2-vm1']);
    expect(installing.hosts.map((h: any) => h.host_name).sort()).toEqual(['host-1', 'host-2', 'host-spare']);
    await t.advance(DRIVERS);
    const ready = (await get(id)).body;
    expect(ready.status).toBe('Ready');
    expect(ready.phase_transitions.map((p: any) => p.phase)).toEqual([
      'CLUSTER_PHASE_WAITING_FOR_CONTROL_PLANE_NODES',
      'CLUSTER_PHASE_WAITING_FOR_DATA_PLANE_NODES',
      'CLUSTER_PHASE_INSTALLING_DRIVERS',
      'CLUSTER_PHASE_READY',
    ]);
    expect(ready.first_ready_at).toBe(ready.phase_transitions[3].transition_time);
    // Billing: 16 on-demand GPUs since the nodes came up (DRIVERS ms ago), at this server's H100 on-demand price.
    await t.advance(3_600_000 - DRIVERS);
    const billed = (await get(id)).body.billing;
    expect(billed).toMatchObject({ reserved_gpu_hours: 0, on_demand_gpu_hours: 16, on_demand_price_per_gpu_hour: 2.99, amount_usd: 47.84 });
    const instances = await t.http.get(`/v1/compute/clusters/${id}/instances`).set(auth());
    expect(instances.body.instances.map((i: any) => [i.instance_name, i.status, i.num_gpus])).toEqual([
      ['gpu-node-1', 'RUNNING', 8],
      ['gpu-node-2', 'RUNNING', 8],
    ]);
  });

  test('resize: up adds nodes, down releases the highest; resizing while provisioning is 409', async () => {
    const c = await readyCluster({ cluster_name: 'resize' });
    const up = await update(c.cluster_id, { num_gpus: 32 });
    expect(up.status).toBe(200);
    expect(up.body.status).toBe('WaitingForDataPlaneNodes');
    expectError(await update(c.cluster_id, { num_gpus: 24 }), 409, { code: 'invalid_state_transition', param: null });
    await t.advance(DATA);
    expect((await get(c.cluster_id)).body.num_gpus).toBe(32);
    await t.advance(DRIVERS);
    const down = await update(c.cluster_id, { num_gpus: 8 });
    expect(down.status).toBe(200);
    await t.advance(DATA);
    await t.advance(DRIVERS);
    const after = (await get(c.cluster_id)).body;
    expect(after).toMatchObject({ status: 'Ready', num_gpus: 8 });
    expect(after.gpu_worker_nodes.map((n: any) => n.node_id)).toEqual(['gpu-node-1-vm1']);
    expect(after.deleted_gpu_worker_nodes.map((n: any) => n.node_id).sort()).toEqual(['gpu-node-2-vm1', 'gpu-node-3-vm1', 'gpu-node-4-vm1']);
    const list = (await t.http.get(`/v1/compute/clusters/${c.cluster_id}/instances`).set(auth())).body.instances;
    expect(list.map((i: any) => i.instance_name)).toEqual(['gpu-node-1']);
  });

  test('update keeps configuration, changes the reservation, refuses a type change; delete -> Deleting -> gone', async () => {
    const c = await readyCluster({ cluster_name: 'reserved', billing_type: 'RESERVED' });
    expect(c.num_reserved_gpus).toBe(16);
    const cfg = { load_balancer: 'NGINX', jumphost_enabled: true };
    const res = await update(c.cluster_id, { cluster_config: cfg, num_reserved_gpus: 8, num_preemptible_gpus: 8 });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ status: 'Ready', cluster_config: cfg, num_reserved_gpus: 8, desired_preemptible_gpus: 8, allocated_preemptible_gpus: 0 });
    expectError(await update(c.cluster_id, { cluster_type: 'SLURM' }), 400, { param: 'cluster_type' });
    expectError(await update(c.cluster_id, { num_reserved_gpus: 24 }), 400, { param: 'num_reserved_gpus' });
    const gone = await del(c.cluster_id);
    expect(gone.status).toBe(200);
    expect(gone.body).toEqual({ cluster_id: c.cluster_id });
    expect((await get(c.cluster_id)).body.status).toBe('Deleting');
    expectError(await del(c.cluster_id), 409, { code: 'invalid_state_transition' });
    expectError(await update(c.cluster_id, { num_gpus: 8 }), 409, { code: 'invalid_state_transition' });
    await t.advance(TEARDOWN);
    expectError(await get(c.cluster_id), 404, { param: 'cluster_id' });
    const list = (await t.http.get('/v1/compute/clusters').set(auth())).body.clusters;
    expect(list.map((x: any) => x.cluster_id)).not.toContain(c.cluster_id);
  });

  test('a cluster deleted while provisioning is torn down before any node exists', async () => {
    const res = await create({ ...base, cluster_name: 'early' });
    await t.advance(CONTROL);
    expect((await del(res.body.cluster_id)).status).toBe(200);
    await t.advance(DATA);
    await t.advance(TEARDOWN);
    expectError(await get(res.body.cluster_id), 404);
  });

  test('remediations work on a created cluster; delete waits for a running one and cancels pending ones', async () => {
    const c = await readyCluster({ cluster_name: 'remedy', num_gpus: 8 });
    const inst = (await t.http.get(`/v1/compute/clusters/${c.cluster_id}/instances`).set(auth())).body.instances[0];
    const path = `/v1/compute/clusters/${c.cluster_id}/instances/${inst.instance_id}/remediations`;
    const r = await t.http.post(path).set(auth()).send({ mode: 'REMEDIATION_MODE_HOST_AWARE' });
    expect(r.status).toBe(200);
    await t.advance(remediationMachine.timed!.PENDING!.defaultMs);
    expect((await t.http.get(`${path}/${r.body.id}`).set(auth())).body.state).toBe('RUNNING');
    expectError(await del(c.cluster_id), 409, { code: 'remediation_running' });
    await t.advance(remediationMachine.timed!.RUNNING!.defaultMs);
    const moved = (await t.http.get(`/v1/compute/clusters/${c.cluster_id}/instances`).set(auth())).body.instances[0];
    expect(moved).toMatchObject({ status: 'RUNNING', host_name: 'host-spare' });
    const pending = await t.http.post(path).set(auth()).send({ mode: 'REMEDIATION_MODE_REBOOT_VM' });
    expect((await del(c.cluster_id)).status).toBe(200);
    expect((await t.http.get(`${path}/${pending.body.id}`).set(auth())).body.state).toBe('CANCELLED');
  });
});

describe('shared volumes', () => {
  test('create -> provisioning -> available; grow; never shrink; delete -> deleting -> gone', async () => {
    const v = await newVolume();
    expect(v.status).toBe(200);
    expect(v.body).toMatchObject({ volume_name: 'data', size_tib: 4, status: 'provisioning', is_lifecycle_independent: false, cluster_id: null });
    expectError(await t.http.delete(`${volumes}/${v.body.volume_id}`).set(auth()), 409, { code: 'invalid_state_transition' });
    expectError(await t.http.put(volumes).set(auth()).send({ volume_id: v.body.volume_id, size_tib: 5 }), 409, { code: 'invalid_state_transition' });
    await t.advance(PROVISION);
    expect((await getVolume(v.body.volume_id)).body.status).toBe('available');
    const grown = await t.http.put(volumes).set(auth()).send({ volume_id: v.body.volume_id, size_tib: 8 });
    expect(grown.body).toMatchObject({ size_tib: 8, status: 'available' });
    expectError(await t.http.put(volumes).set(auth()).send({ volume_id: v.body.volume_id, size_tib: 2 }), 400, { param: 'size_tib' });
    const listed = (await t.http.get(volumes).set(auth())).body.volumes;
    expect(listed.map((x: any) => x.volume_id)).toContain(v.body.volume_id);
    const gone = await t.http.delete(`${volumes}/${v.body.volume_id}`).set(auth());
    expect(gone.body).toEqual({ success: true });
    expect((await getVolume(v.body.volume_id)).body.status).toBe('deleting');
    await t.advance(VOLUME_DELETE);
    expectError(await getVolume(v.body.volume_id), 404, { param: 'volume_id' });
  });

  test('attached to a cluster: bound, not deletable; at teardown an independent one is available again, another deleted', async () => {
    const kept = await newVolume({ volume_name: 'kept', is_lifecycle_independent: true });
    await t.advance(PROVISION);
    const res = await create({ ...base, cluster_name: 'with-volume', volume_id: kept.body.volume_id });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.volumes.map((v: any) => [v.volume_name, v.status])).toEqual([['kept', 'bound']]);
    const fresh = await create({ ...base, cluster_name: 'with-new-volume', shared_volume: { volume_name: 'scratch', size_tib: 2, region: 'us-central-8' } });
    expect(fresh.body.volumes.map((v: any) => [v.volume_name, v.status])).toEqual([['scratch', 'provisioning']]);
    await t.advance(PROVISION);
    const scratchId = fresh.body.volumes[0].volume_id;
    expect((await getVolume(scratchId)).body).toMatchObject({ status: 'bound', cluster_id: fresh.body.cluster_id });
    expectError(await t.http.delete(`${volumes}/${kept.body.volume_id}`).set(auth()), 409, { code: 'invalid_state_transition' });
    expectError(await create({ ...base, cluster_name: 'thief', volume_id: kept.body.volume_id }), 409, { code: 'invalid_state_transition' });
    expectError(
      await create({ ...base, cluster_name: 'both', volume_id: kept.body.volume_id, shared_volume: { volume_name: 's', size_tib: 1, region: 'us-central-8' } }),
      400,
      {
        param: 'volume_id',
      },
    );
    await del(res.body.cluster_id);
    await del(fresh.body.cluster_id);
    await t.advance(TEARDOWN);
    expect((await getVolume(kept.body.volume_id)).body).toMatchObject({ status: 'available', cluster_id: null });
    expect((await getVolume(scratchId)).body.status).toBe('deleting');
    await t.advance(VOLUME_DELETE);
    expectError(await getVolume(scratchId), 404);
  });
});

describe('add-ons', () => {
  test('create, list, get, update, delete; the cluster lists the enabled ones', async () => {
    const c = await readyCluster({ cluster_name: 'addons', add_ons: [{ name: 'dash', add_on_type: 'dashboard' }] });
    expect(c.add_ons).toEqual([{ name: 'dash', add_on_type: 'dashboard', config: { dashboard: { enabled: true } }, state: { dashboard: {} } }]);
    const made = await t.http
      .post(addons(c.cluster_id))
      .set(auth())
      .send({ name: 'web', add_on_type: 'ingress', config: { ingress: { enabled: false } } });
    expect(made.status).toBe(200);
    expect(made.body).toEqual({ name: 'web', add_on_type: 'ingress', config: { ingress: { enabled: false } }, state: { ingress: {} } });
    expect((await t.http.get(addons(c.cluster_id)).set(auth())).body.add_ons.map((a: any) => a.name)).toEqual(['dash', 'web']);
    expect((await get(c.cluster_id)).body.add_ons.map((a: any) => a.name)).toEqual(['dash']);
    const upd = await t.http
      .put(addons(c.cluster_id, '/web'))
      .set(auth())
      .send({ config: { ingress: { enabled: true } } });
    expect(upd.body.config).toEqual({ ingress: { enabled: true } });
    expect((await t.http.get(addons(c.cluster_id, '/web')).set(auth())).body.config).toEqual({ ingress: { enabled: true } });
    const viaCluster = await update(c.cluster_id, { add_ons: [{ name: 'dash', config: { dashboard: { enabled: false } } }] });
    expect(viaCluster.body.add_ons.map((a: any) => a.name)).toEqual(['web']);
    expectError(await t.http.post(addons(c.cluster_id)).set(auth()).send({ name: 'web', add_on_type: 'ingress' }), 409, {
      code: 'add_on_exists',
      param: 'name',
    });
    expectError(await t.http.post(addons(c.cluster_id)).set(auth()).send({ name: 'x', add_on_type: 'grafana' }), 400, { param: 'add_on_type' });
    expectError(await t.http.post(addons(c.cluster_id)).set(auth()).send({ name: 'x', add_on_type: 'slurm_web' }), 400, { param: 'add_on_type' });
    expectError(
      await t.http
        .post(addons(c.cluster_id))
        .set(auth())
        .send({ name: 'x', add_on_type: 'ingress', config: { dashboard: {} } }),
      400,
      { param: 'config' },
    );
    expect((await t.http.delete(addons(c.cluster_id, '/web')).set(auth())).body).toEqual({});
    expectError(await t.http.get(addons(c.cluster_id, '/web')).set(auth()), 404, { param: 'addon_id' });
    expectError(await t.http.get(addons(c.cluster_id, '/%00')).set(auth()), 400);
    await del(c.cluster_id);
    // A cluster being torn down takes no add-on change.
    expectError(await t.http.post(addons(c.cluster_id)).set(auth()).send({ name: 'late', add_on_type: 'ingress' }), 409, { code: 'invalid_state_transition' });
    expectError(await t.http.put(addons(c.cluster_id, '/dash')).set(auth()).send({ config: {} }), 409, { code: 'invalid_state_transition' });
    expectError(await t.http.delete(addons(c.cluster_id, '/dash')).set(auth()), 409, { code: 'invalid_state_transition' });
  });
});

describe('the project-wide alerts list', () => {
  test('filters by cluster, instance, remediation, status and severity; pages in start order', async () => {
    const c = await readyCluster({ cluster_name: 'alerts', num_gpus: 16 });
    const [a, b] = (await t.http.get(`/v1/compute/clusters/${c.cluster_id}/instances`).set(auth())).body.instances;
    const inject = (instance: string, severity: string, name: string) =>
      t.http.post(`/v1/compute/clusters/${c.cluster_id}/passive_health_check_alerts`).set(auth()).send({ instance_id: instance, alert_name: name, severity });
    const first = (await inject(a.instance_id, 'PHC_SEVERITY_CRITICAL', 'Xid')).body;
    await t.advance(1000);
    const second = (await inject(b.instance_id, 'PHC_SEVERITY_INFO', 'Temp')).body;
    await t.advance(1000);
    const third = (await inject(a.instance_id, 'PHC_SEVERITY_WARNING', 'Ecc')).body;
    await t.http.post(`/v1/compute/clusters/${c.cluster_id}/passive_health_check_alerts/${second.passive_health_check_alert_id}/resolve`).set(auth());
    const list = (q: Record<string, unknown>) => t.http.get('/v1/compute/passive_health_check_alerts').query(q).set(auth());
    const ids = (res: any) => res.body.alerts.map((x: any) => x.passive_health_check_alert_id);
    const [i1, i2, i3] = [first, second, third].map((x) => x.passive_health_check_alert_id);
    expect(ids(await list({ cluster_id: c.cluster_id }))).toEqual([i3, i2, i1]);
    expect(ids(await list({ cluster_id: c.cluster_id, order_by: 'PHC_ALERT_ORDER_STARTED_AT_ASC' }))).toEqual([i1, i2, i3]);
    expect(ids(await list({ instance_id: a.instance_id }))).toEqual([i3, i1]);
    expect(ids(await list({ intent_id: first.node_remediation_intent_id }))).toEqual([i3, i1]);
    expect(ids(await list({ cluster_id: c.cluster_id, status: 'PHC_ALERT_STATUS_FIRING' }))).toEqual([i3, i1]);
    expect(ids(await list({ cluster_id: c.cluster_id, status: 'PHC_ALERT_STATUS_RESOLVED' }))).toEqual([i2]);
    expect(ids(await list({ cluster_id: c.cluster_id, severity_filter: ['PHC_SEVERITY_INFO', 'PHC_SEVERITY_WARNING'] }))).toEqual([i3, i2]);
    const page1 = await list({ cluster_id: c.cluster_id, page_size: 2 });
    expect(ids(page1)).toEqual([i3, i2]);
    const page2 = await list({ cluster_id: c.cluster_id, page_size: 2, page_token: page1.body.next_page_token });
    expect(ids(page2)).toEqual([i1]);
    expect(page2.body.next_page_token).toBe('');
    const stranger = await t.newCaller();
    expect((await t.http.get('/v1/compute/passive_health_check_alerts').query({ cluster_id: c.cluster_id }).set(auth(stranger.key))).body.alerts).toEqual([]);
  });
});

describe("another project's ids and bad input", () => {
  test("another project's cluster, volume and add-on answer 404 like absent ones", async () => {
    const c = await readyCluster({ cluster_name: 'mine', add_ons: [{ name: 'dash', add_on_type: 'dashboard' }] });
    const v = await newVolume();
    const other = await t.newCaller();
    for (const res of [
      await get(c.cluster_id, other.key),
      await update(c.cluster_id, { num_gpus: 8 }, other.key),
      await del(c.cluster_id, other.key),
      await t.http.get(addons(c.cluster_id)).set(auth(other.key)),
      await t.http.get(addons(c.cluster_id, '/dash')).set(auth(other.key)),
      await getVolume(v.body.volume_id, other.key),
      await t.http.put(volumes).set(auth(other.key)).send({ volume_id: v.body.volume_id, size_tib: 9 }),
      await t.http.delete(`${volumes}/${v.body.volume_id}`).set(auth(other.key)),
      await create({ ...base, volume_id: v.body.volume_id }, other.key),
    ])
      expectError(res, 404);
    expect((await get(c.cluster_id)).body.status).toBe('Ready');
    expect((await getVolume(v.body.volume_id)).body.size_tib).toBe(4);
  });

  test.each([
    [{ region: 'mars-1' }, 'region'],
    [{ gpu_type: 'L40_PCIE' }, 'gpu_type'],
    [{ num_gpus: 12 }, 'num_gpus'],
    [{ num_gpus: 0 }, 'num_gpus'],
    [{ num_gpus: 1024 }, 'num_gpus'],
    [{ cuda_version: '11.0' }, 'cuda_version'],
    [{ cuda_version: undefined, nvidia_driver_version: undefined }, 'cuda_version'],
    [{ nvidia_version_id: 'cuda-12.8-570' }, 'nvidia_version_id'],
    [{ cluster_name: ' ' }, 'cluster_name'],
    [{ project_id: 'proj_other' }, 'project_id'],
    [{ billing_type: 'ON_DEMAND', num_reserved_gpus: 8 }, 'num_reserved_gpus'],
    [{ capacity_pool_id: 'pool-1' }, 'capacity_pool_id'],
    [{ num_capacity_pool_gpus: 8 }, 'num_capacity_pool_gpus'],
    [{ auto_scale: true }, 'auto_scale'],
    [{ duration_days: 0 }, 'duration_days'],
    [{ reservation_start_time: '2026-12-02T00:00:00Z', reservation_end_time: '2026-12-01T00:00:00Z' }, 'reservation_end_time'],
    [{ shared_volume: { volume_name: 'v', size_tib: 1, region: 'us-east-4' } }, 'shared_volume.region'],
    [{ shared_volume: { volume_name: 'v', size_tib: 0, region: 'us-central-8' } }, 'shared_volume.size_tib'],
    [{ add_ons: [{ name: 'a', add_on_type: 'nope' }] }, 'add_ons.0.add_on_type'],
    [
      {
        add_ons: [
          { name: 'a', add_on_type: 'ingress' },
          { name: 'a', add_on_type: 'dashboard' },
        ],
      },
      'add_ons.1.name',
    ],
    [{ billing_type: 'SOMETIMES' }, 'billing_type'],
  ])('create %j is refused naming %s, and nothing is made', async (change, param) => {
    const before = (await t.http.get('/v1/compute/clusters').set(auth())).body.clusters.length;
    const volumesBefore = (await t.http.get(volumes).set(auth())).body.volumes.length;
    const res = await create({ ...base, ...change });
    expect(res.status, JSON.stringify(res.body)).toBeGreaterThanOrEqual(400);
    expect(res.status).toBeLessThan(500);
    expect(res.body.error.param).toBe(param);
    expect((await t.http.get('/v1/compute/clusters').set(auth())).body.clusters.length).toBe(before);
    expect((await t.http.get(volumes).set(auth())).body.volumes.length).toBe(volumesBefore);
  });

  test('volume bad input is 400 naming the field', async () => {
    expectError(await newVolume({ region: 'nowhere' }), 400, { param: 'region' });
    expectError(await newVolume({ size_tib: 2048 }), 400, { param: 'size_tib' });
    expectError(await newVolume({ volume_name: '' }), 400, { param: 'volume_name' });
    expectError(await newVolume({ project_id: 'someone-else' }), 400, { param: 'project_id' });
    expectError(await t.http.put(volumes).set(auth()).send({ volume_id: 'vol_missing', size_tib: 3 }), 404, { param: 'volume_id' });
    // A control character in a path id is bad input, not a lookup.
    expectError(await t.http.delete(`${volumes}/%00`).set(auth()), 400);
    expectError(await del('%00'), 400);
  });
});

describe('the official client', () => {
  test('beta.clusters: create, retrieve, update, list, listRegions, delete; storage: create, retrieve, update, list, delete', async () => {
    const client = new Together({ apiKey: t.caller.key, baseURL: `${t.url}/v1`, maxRetries: 0 });
    const regions = await client.beta.clusters.listRegions();
    expect(regions.regions.map((r) => r.name)).toContain('us-central-8');
    const vol = await client.beta.clusters.storage.create({ volume_name: 'sdk', size_tib: 1, region: 'us-central-8' });
    expect(vol.status).toBe('provisioning');
    await t.advance(PROVISION);
    expect((await client.beta.clusters.storage.retrieve(vol.volume_id)).status).toBe('available');
    expect((await client.beta.clusters.storage.update({ volume_id: vol.volume_id, size_tib: 2 })).size_tib).toBe(2);
    expect((await client.beta.clusters.storage.list()).volumes.map((v) => v.volume_id)).toContain(vol.volume_id);
    const made = await client.beta.clusters.create({
      cluster_name: 'sdk',
      region: 'us-central-8',
      gpu_type: 'H100_SXM',
      num_gpus: 8,
      billing_type: 'RESERVED',
      nvidia_version_id: 'cuda-12.4-550',
      volume_id: vol.volume_id,
    } as Parameters<typeof client.beta.clusters.create>[0]);
    expect(made.status).toBe('WaitingForControlPlaneNodes');
    await t.advance(CONTROL);
    await t.advance(DATA);
    await t.advance(DRIVERS);
    const got = await client.beta.clusters.retrieve(made.cluster_id);
    expect(got).toMatchObject({ status: 'Ready', num_gpus: 8, cuda_version: '12.4' });
    const resized = await client.beta.clusters.update(made.cluster_id, { num_gpus: 16 });
    expect(resized.status).toBe('WaitingForDataPlaneNodes');
    expect((await client.beta.clusters.list()).clusters.map((c) => c.cluster_id)).toContain(made.cluster_id);
    await t.advance(DATA);
    await t.advance(DRIVERS);
    const deleted = await client.beta.clusters.delete(made.cluster_id);
    expect(deleted.cluster_id).toBe(made.cluster_id);
    await t.advance(TEARDOWN);
    expect((await client.beta.clusters.storage.retrieve(vol.volume_id)).status).toBe('deleting');
    await t.advance(VOLUME_DELETE);
    const vol2 = await client.beta.clusters.storage.create({ volume_name: 'sdk2', size_tib: 1, region: 'us-central-8' });
    await t.advance(PROVISION);
    expect((await client.beta.clusters.storage.delete(vol2.volume_id)).success).toBe(true);
  });
});
