// The v2 reads of test/v2-reads.test.ts through the official client, unchanged, on `<server>/v2` (the v2 trap: its
// defaultBaseURL is ignored once baseURL is set): the SDK's own calls, paths and paging.
//
// | SDK method (together-ai 0.52.0)                      | HTTP sent                                         | operationId                |
// |------------------------------------------------------|---------------------------------------------------|----------------------------|
// | beta.endpoints.listOrgScoped(orgId, {limit?, ...})   | GET /v2/organizations/{orgId}/endpoints           | listOrganizationEndpoints  |
// | beta.endpoints.placementProfiles.list({projectId?})  | GET /v2/projects/{p}/placement-profiles           | listPlacementProfiles      |
// | beta.endpoints.placementProfiles.retrieve(id)        | GET /v2/projects/{p}/placement-profiles/{id}      | getPlacementProfile        |
// | beta.endpoints.hardware.list()                       | GET /v2/public/inference-instance-types           | listInferenceInstanceTypes |
// | beta.endpoints.hardware.retrieve(id)                 | GET /v2/public/inference-instance-types/{id}      | getInferenceInstanceType   |
// | beta.models.listSupported({product?, search?, ...})  | GET /v2/supported-models                          | listSupportedModels        |
// | beta.models.retrieveSupported(id)                    | GET /v2/supported-models/{id} (`/` sent as %2F)   | getSupportedModel          |
// | (none: the SDK has no method for it)                 | GET /v2/public/endpoints                          | listPublicEndpoints        |
import Together from 'together-ai';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { H100, MODEL } from './support/endpoints.ts';
import { refusal } from './support/expect.ts';
import { startTestPlatform, type TestPlatform } from './support/platform.ts';

let t: TestPlatform;
let v2: Together;
beforeAll(async () => {
  t = await startTestPlatform();
  v2 = new Together({ apiKey: t.caller.key, baseURL: `${t.url}/v2`, projectID: t.caller.identity.projectId, maxRetries: 0 });
});
afterAll(() => t?.close());

describe('v2 reads through client.beta', () => {
  test('endpoints.listOrgScoped pages the organization-shared endpoints; another organization is NotFound', async () => {
    const made: string[] = [];
    for (const name of ['org-a', 'org-b', 'org-c']) made.push((await v2.beta.endpoints.create({ name, visibility: 'VISIBILITY_INTERNAL' })).id);
    await v2.beta.endpoints.create({ name: 'org-private' });
    const seen: string[] = [];
    for await (const e of v2.beta.endpoints.listOrgScoped(t.caller.identity.organizationId, { limit: 2 })) seen.push(e.id);
    expect(seen).toEqual(made);
    const other = await refusal(v2.beta.endpoints.listOrgScoped(t.other.identity.organizationId));
    expect(other).toBeInstanceOf(Together.NotFoundError);
    expect(other.error.error).toMatchObject({ code: 'not_found', param: 'organizationId' });
  });

  test('endpoints.placementProfiles.list and .retrieve', async () => {
    const all = [];
    for await (const p of v2.beta.endpoints.placementProfiles.list()) all.push(p);
    expect(all).toEqual([
      { id: 'pp_local', name: 'local', preferredRegions: ['local'], projectId: t.caller.identity.projectId, organizationId: t.caller.identity.organizationId },
    ]);
    expect(await v2.beta.endpoints.placementProfiles.retrieve('pp_local')).toEqual(all[0]);
    expect(await refusal(v2.beta.endpoints.placementProfiles.retrieve('pp_absent'))).toBeInstanceOf(Together.NotFoundError);
  });

  test('endpoints.hardware.list and .retrieve', async () => {
    const list = await v2.beta.endpoints.hardware.list();
    expect(list.data.length).toBe(8);
    const one = await v2.beta.endpoints.hardware.retrieve('2x_nvidia_h100_80gb_sxm');
    expect(one).toEqual(list.data.find((x) => x.id === '2x_nvidia_h100_80gb_sxm'));
    expect(one).toMatchObject({
      gpuType: 'h100-80gb',
      gpuCount: 2,
      gpuMemoryGib: 80,
      priceCentsPerHour: 672,
      regions: [{ name: 'local', headroom: { relation: 'RELATION_EQ' } }],
    });
    expect(await refusal(v2.beta.endpoints.hardware.retrieve('1x_absent'))).toBeInstanceOf(Together.NotFoundError);
  });

  test('models.listSupported (auto-paged, filtered) and .retrieveSupported; a profile deploys as given', async () => {
    const ids: string[] = [];
    for await (const m of v2.beta.models.listSupported({ limit: 3 })) ids.push(m.id);
    expect(ids.length).toBe(11);
    expect(ids).toContain(MODEL);
    const qwen: string[] = [];
    for await (const m of v2.beta.models.listSupported({ search: 'qwen', product: 'PRODUCT_SERVERLESS' })) qwen.push(m.id);
    expect(qwen).toEqual(['Qwen/Qwen2.5-72B-Instruct-Turbo']);
    const llama = await v2.beta.models.retrieveSupported(MODEL);
    expect(llama.id).toBe(MODEL);
    const profile = llama.deploymentProfiles.find((p) => p.profileId === H100)!;
    expect(await refusal(v2.beta.models.retrieveSupported('BAAI/bge-base-en-v1.5'))).toBeInstanceOf(Together.NotFoundError);

    const e = await v2.beta.endpoints.create({ name: 'from-profile' });
    const d = await v2.beta.endpoints.deployments.create(e.id, { name: 'primary', model: profile.model, config: profile.config, autoscaling: {} });
    expect(d).toMatchObject({ modelId: MODEL, configId: H100, modelRevisionId: profile.model.split('/revisions/')[1] });
  });
});
