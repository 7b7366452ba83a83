// v2 dedicated lists, as the public platform's clients page and narrow them: `limit` (0 = the default page,
// larger than the largest page = the largest page), AIP-160 `filter` and AIP-132 `orderBy` on endpoints and
// deployments with cursors that follow the order, and the events feed's filters (`types`, `minLevel`, `since`,
// `until`, `deploymentIds`, `sourceKinds`, `subjectId`).
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { H100, MODEL, PROVISION_MS } from './support/endpoints.ts';
import { expectError } from './support/expect.ts';
import { type Caller, startTestPlatform, type TestPlatform } from './support/platform.ts';

let t: TestPlatform;

beforeAll(async () => {
  t = await startTestPlatform();
});
afterAll(() => t?.close());

/** A caller in a project of its own (so its lists hold only what the test makes), with helpers on its v2 paths. */
async function project() {
  const c: Caller = await t.newCaller();
  const base = `/v2/projects/${c.identity.projectId}`;
  const get = (path: string, query: Record<string, unknown> = {}) => c.http.get(`${base}${path}`).query(query);
  const names = async (path: string, query: Record<string, unknown> = {}) => {
    const res = await get(path, query);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    return res.body.data.map((x: any) => x.name.split('/').pop());
  };
  const endpoint = async (name: string) => {
    t.clock.advance(1000);
    const res = await c.http.post(`${base}/endpoints`).send({ name });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    return res.body;
  };
  const deployment = async (endpointId: string, body: Record<string, unknown>) => {
    t.clock.advance(1000);
    const res = await c.http
      .post(`${base}/endpoints/${endpointId}/deployments`)
      .send({ model: MODEL, config: H100, autoscaling: { minReplicas: 0, maxReplicas: 0 }, ...body });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    return res.body;
  };
  return { c, base, get, names, endpoint, deployment };
}

/** Every item of a list, following next_cursor; the pages' sizes too. */
async function pages(get: (q: Record<string, unknown>) => Promise<any>, query: Record<string, unknown>) {
  const items: any[] = [];
  const sizes: number[] = [];
  let after: string | undefined;
  do {
    const res = await get({ ...query, ...(after !== undefined && { after }) });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    items.push(...res.body.data);
    sizes.push(res.body.data.length);
    after = res.body.next_cursor;
    expect(typeof after).toBe('string');
  } while (after);
  return { items, sizes };
}

describe('limit', () => {
  test('absent or 0 is the default page of 50, more than 100 gives pages of 100, negative is 400 invalid_limit', async () => {
    const p = await project();
    const made: string[] = [];
    for (let i = 0; i < 101; i++) made.push((await p.endpoint(`e-${String(i).padStart(3, '0')}`)).id);
    const list = (q: Record<string, unknown>) => p.get('/endpoints', q);
    for (const limit of [undefined, 0]) {
      const res = await list(limit === undefined ? {} : { limit });
      expect(res.body.data).toHaveLength(50);
      expect(res.body.next_cursor).toBe(made[49]);
    }
    const big = await pages(list, { limit: 500 });
    expect(big.sizes).toEqual([100, 1]);
    expect(big.items.map((e) => e.id)).toEqual(made);
    expectError(await list({ limit: -1 }), 400, { code: 'invalid_limit', param: 'limit' });

    // The same on every v2 list.
    const configs = await p.get('/configs', { limit: 0 });
    expect(configs.status).toBe(200);
    expect(configs.body.data.length).toBeGreaterThan(2);
    expect(configs.body.next_cursor).toBe('');
    expectError(await p.get('/configs', { limit: -5 }), 400, { code: 'invalid_limit', param: 'limit' });
    expect((await p.get(`/endpoints/${made[0]}/deployments`, { limit: 0 })).status).toBe(200);
    expect((await p.get(`/endpoints/${made[0]}/events`, { limit: 0 })).body.data).toHaveLength(1);
    expectError(await p.get(`/endpoints/${made[0]}/events`, { limit: -1 }), 400, { code: 'invalid_limit', param: 'limit' });
  });
});

describe('filter and orderBy on endpoints', () => {
  test('filter: name by whole value, wildcard, substring or qualified name; instants; AND, OR (tighter), NOT, -, parentheses', async () => {
    const p = await project();
    const slug = p.c.identity.projectSlug;
    const a = await p.endpoint('prod-a');
    const b = await p.endpoint('prod-b');
    const s = await p.endpoint('staging-a');
    t.clock.advance(1000);
    await p.c.http.patch(`${p.base}/endpoints/${a.id}`).send({ visibility: 'VISIBILITY_INTERNAL' });
    const f = (filter: string) => p.names('/endpoints', { filter });

    expect(await f('name=prod-a')).toEqual(['prod-a']);
    expect(await f('name="prod-*"')).toEqual(['prod-a', 'prod-b']);
    expect(await f('name="*-a"')).toEqual(['prod-a', 'staging-a']);
    expect(await f('name:rod')).toEqual(['prod-a', 'prod-b']);
    expect(await f(`name="${slug}/prod-b"`)).toEqual(['prod-b']);
    expect(await f('name="someone-else/prod-b"')).toEqual([]);
    expect(await f('name!=prod-a')).toEqual(['prod-b', 'staging-a']);
    expect(await f('name > prod-b')).toEqual(['staging-a']);
    expect(await f(`created_at >= "${b.createdAt}"`)).toEqual(['prod-b', 'staging-a']);
    expect(await f(`createdAt < '${b.createdAt}'`)).toEqual(['prod-a']);
    expect(await f(`updated_at > "${s.updatedAt}"`)).toEqual(['prod-a']);
    expect(await f('NOT name:staging')).toEqual(['prod-a', 'prod-b']);
    expect(await f('-name:staging')).toEqual(['prod-a', 'prod-b']);
    expect(await f(`name:prod AND created_at > "${a.createdAt}"`)).toEqual(['prod-b']);
    expect(await f(`name:prod created_at > "${a.createdAt}"`)).toEqual(['prod-b']); // juxtaposed: AND
    // OR binds tighter than AND: (prod OR staging) AND -a.
    expect(await f('name:prod OR name:staging AND name="*-a"')).toEqual(['prod-a', 'staging-a']);
    expect(await f('(name=prod-b OR name=staging-a) AND NOT name=staging-a')).toEqual(['prod-b']);
    expect(await f('   ')).toEqual(['prod-a', 'prod-b', 'staging-a']);

    for (const bad of ['colour=red', 'name', 'name=', '(name=prod-a', 'name="prod-a', 'created_at > yesterday', 'created_at:2026', 'name=a)', 'name=a OR']) {
      expectError(await p.get('/endpoints', { filter: bad }), 400, { code: 'invalid_filter', param: 'filter' });
    }
  });

  test('orderBy: created_at, updated_at or name, asc or desc, with cursors that follow the order', async () => {
    const p = await project();
    const made = [];
    for (const name of ['c', 'a', 'd', 'b']) made.push(await p.endpoint(name));
    t.clock.advance(1000);
    await p.c.http.patch(`${p.base}/endpoints/${made[0].id}`).send({ visibility: 'VISIBILITY_INTERNAL' });
    const o = (orderBy: string) => p.names('/endpoints', { orderBy });
    expect(await p.names('/endpoints')).toEqual(['c', 'a', 'd', 'b']);
    expect(await o('created_at')).toEqual(['c', 'a', 'd', 'b']);
    expect(await o('created_at desc')).toEqual(['b', 'd', 'a', 'c']);
    expect(await o('createdAt asc')).toEqual(['c', 'a', 'd', 'b']);
    expect(await o('name')).toEqual(['a', 'b', 'c', 'd']);
    expect(await o('updated_at desc')).toEqual(['c', 'b', 'd', 'a']);

    const list = (q: Record<string, unknown>) => p.get('/endpoints', q);
    const desc = await pages(list, { orderBy: 'created_at desc', limit: 1 });
    expect(desc.items.map((e) => e.name.split('/').pop())).toEqual(['b', 'd', 'a', 'c']);
    // A page continues from its position even when the row it ended on is gone.
    const first = await list({ orderBy: 'name', limit: 2 });
    expect(first.body.data.map((e: any) => e.name.split('/').pop())).toEqual(['a', 'b']);
    await p.c.http.delete(`${p.base}/endpoints/${made[3].id}`); // b
    expect((await list({ orderBy: 'name', limit: 2, after: first.body.next_cursor })).body.data.map((e: any) => e.name.split('/').pop())).toEqual(['c', 'd']);
    // A cursor belongs to its order; a filter may change between pages.
    expectError(await list({ orderBy: 'name desc', after: first.body.next_cursor }), 400, { code: 'invalid_page_token', param: 'after' });
    expect((await list({ orderBy: 'name', filter: 'name!=d', after: first.body.next_cursor })).body.data.map((e: any) => e.name.split('/').pop())).toEqual([
      'c',
    ]);
    // Without orderBy the cursor is an id, and a filter pages the same way.
    const filtered = await pages(list, { filter: 'name!=a', limit: 1 });
    expect(filtered.items.map((e) => e.name.split('/').pop())).toEqual(['c', 'd']);

    for (const bad of ['size', 'created_at sideways', 'name asc desc', 'created_at,', 'visibility']) {
      expectError(await list({ orderBy: bad }), 400, { code: 'invalid_order_by', param: 'orderBy' });
    }

    // Later keys break ties of earlier ones (two endpoints created in the same millisecond).
    t.clock.advance(1000);
    for (const name of ['y', 'x']) await p.c.http.post(`${p.base}/endpoints`).send({ name });
    expect((await o('created_at desc, name')).slice(0, 2)).toEqual(['x', 'y']);
    expect((await o('created_at desc, name desc')).slice(0, 2)).toEqual(['y', 'x']);
  });
});

describe('filter and orderBy on deployments', () => {
  test('name (bare or fully qualified), state, model (any reference form), instants; ordered and paged', async () => {
    const p = await project();
    const e = await p.endpoint('mixed');
    const blue = await p.deployment(e.id, { name: 'blue', autoscaling: { minReplicas: 1 } });
    const green = await p.deployment(e.id, { name: 'green' });
    const qwen = await p.deployment(e.id, { name: 'qwen', model: 'Qwen/Qwen2.5-7B-Instruct', config: 'cr_qwen2_5_7b_h100' });
    const path = `/endpoints/${e.id}/deployments`;
    const f = (filter: string) => p.names(path, { filter });

    expect(await f('state=DEPLOYMENT_STATE_STOPPED')).toEqual(['green', 'qwen']);
    expect(await f('state!=DEPLOYMENT_STATE_STOPPED')).toEqual(['blue']);
    expect(await f('state:DEPLOYMENT_STATE_PROVISIONING OR state=DEPLOYMENT_STATE_READY')).toEqual(['blue']);
    expect(await f(`model="${MODEL}"`)).toEqual(['blue', 'green']);
    expect(await f(`model="models/${MODEL}"`)).toEqual(['blue', 'green']);
    expect(await f(`model="projects/${p.c.identity.projectId}/models/Qwen/Qwen2.5-7B-Instruct/revisions/rev_x"`)).toEqual(['qwen']);
    expect(await f('model:Qwen')).toEqual(['qwen']);
    expect(await f(`name="${p.c.identity.projectSlug}/mixed/green"`)).toEqual(['green']);
    expect(await f(`name="${p.c.identity.projectSlug}/other/green"`)).toEqual([]);
    expect(await f(`created_at > "${blue.createdAt}" AND name!=qwen`)).toEqual(['green']);
    expectError(await p.get(path, { filter: 'state=RUNNING' }), 400, { code: 'invalid_filter', param: 'filter' });
    expectError(await p.get(path, { filter: 'state>DEPLOYMENT_STATE_READY' }), 400, { code: 'invalid_filter', param: 'filter' });
    expectError(await p.get(path, { filter: 'hardware=x' }), 400, { code: 'invalid_filter', param: 'filter' });

    expect(await p.names(path, { orderBy: 'created_at desc' })).toEqual(['qwen', 'green', 'blue']);
    expect(await p.names(path, { orderBy: 'name desc' })).toEqual(['qwen', 'green', 'blue']);
    await t.advance(PROVISION_MS); // blue becomes READY: its updatedAt moves
    expect(await p.names(path, { orderBy: 'updated_at desc' })).toEqual(['blue', 'qwen', 'green']);
    const paged = await pages((q) => p.get(path, q), { orderBy: 'updated_at desc', limit: 2 });
    expect(paged.items.map((d) => d.id)).toEqual([blue.id, qwen.id, green.id]);
    expect(paged.sizes).toEqual([2, 1]);
  });
});

describe("the events feed's filters", () => {
  test('types, minLevel, since and until, sourceKinds, deploymentIds (deleted ones too), subjectId; each combined with AND and with paging', async () => {
    const p = await project();
    const e = await p.endpoint('feed');
    const start = new Date(t.clock.now()).toISOString();
    const ok = await p.deployment(e.id, { name: 'ok' });
    const bad = await p.deployment(e.id, { name: 'bad', config: 'cr_llama_3_1_8b_b200', autoscaling: { minReplicas: 1 } });
    const mid = new Date(t.clock.now() + 1).toISOString();
    await t.advance(PROVISION_MS); // bad: PROVISIONING -> FAILED (LEVEL_ERROR)
    await p.c.http.delete(`${p.base}/endpoints/${e.id}/deployments/${ok.id}`);
    const path = `/endpoints/${e.id}/events`;
    const feed = async (query: Record<string, unknown> | string) => {
      const res = typeof query === 'string' ? await p.c.http.get(`${p.base}${path}?${query}`) : await p.get(path, query);
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      return res.body.data.map((v: any) => [v.type, v.deploymentId === ok.id ? 'ok' : v.deploymentId === bad.id ? 'bad' : '-']);
    };
    expect(await feed({})).toEqual([
      ['endpoint.created', '-'],
      ['deployment.created', 'ok'],
      ['deployment.created', 'bad'],
      ['deployment.state_changed', 'bad'],
      ['deployment.deleted', 'ok'],
    ]);

    expect(await feed({ types: 'deployment.created' })).toEqual([
      ['deployment.created', 'ok'],
      ['deployment.created', 'bad'],
    ]);
    expect(await feed('types=endpoint.created,deployment.deleted')).toEqual([
      ['endpoint.created', '-'],
      ['deployment.deleted', 'ok'],
    ]);
    expect(await feed('types=endpoint.created&types=deployment.deleted')).toEqual([
      ['endpoint.created', '-'],
      ['deployment.deleted', 'ok'],
    ]);
    expect(await feed({ types: 'pod.log' })).toEqual([]);

    expect(await feed({ minLevel: 'LEVEL_ERROR' })).toEqual([['deployment.state_changed', 'bad']]);
    expect(await feed({ minLevel: 'LEVEL_WARN' })).toEqual([['deployment.state_changed', 'bad']]);
    expect(await feed({ minLevel: 'LEVEL_DEBUG' })).toHaveLength(5);

    expect(await feed({ since: mid })).toEqual([
      ['deployment.state_changed', 'bad'],
      ['deployment.deleted', 'ok'],
    ]);
    expect(await feed({ until: mid })).toEqual([
      ['endpoint.created', '-'],
      ['deployment.created', 'ok'],
      ['deployment.created', 'bad'],
    ]);
    expect(await feed({ since: start, until: mid, types: 'endpoint.created' })).toEqual([['endpoint.created', '-']]); // since is inclusive
    expect(await feed({ since: mid, types: 'deployment.created' })).toEqual([]);
    expectError(await p.get(path, { since: 'yesterday' }), 400, { param: 'since' });

    expect(await feed({ sourceKinds: 'SOURCE_KIND_ENDPOINT' })).toEqual([['endpoint.created', '-']]);
    // Naming deployments drops the endpoint's own events unless sourceKinds keeps them; a deleted deployment is named too.
    expect(await feed({ deploymentIds: ok.id })).toEqual([
      ['deployment.created', 'ok'],
      ['deployment.deleted', 'ok'],
    ]);
    expect(await feed({ deploymentIds: ok.id, sourceKinds: 'SOURCE_KIND_ENDPOINT,SOURCE_KIND_DEPLOYMENT' })).toEqual([
      ['endpoint.created', '-'],
      ['deployment.created', 'ok'],
      ['deployment.deleted', 'ok'],
    ]);
    expect(await feed(`deploymentIds=${ok.id},${bad.id}&types=deployment.created`)).toEqual([
      ['deployment.created', 'ok'],
      ['deployment.created', 'bad'],
    ]);
    expectError(await p.get(path, { deploymentIds: 'dep_elsewhere' }), 400, { code: 'unknown_deployment', param: 'deploymentIds' });
    expectError(await p.get(path, { sourceKinds: 'SOURCE_KIND_CLUSTER' }), 400, { code: 'enum', param: 'sourceKinds.0' });

    // No event here has a subject.
    expect(await feed({ subjectId: 'ro_123' })).toEqual([]);

    // Filters page like the whole feed.
    const paged = await pages((q) => p.get(path, q), { types: 'deployment.created,deployment.deleted', limit: 1 });
    expect(paged.items.map((v) => v.type)).toEqual(['deployment.created', 'deployment.created', 'deployment.deleted']);
  });
});
