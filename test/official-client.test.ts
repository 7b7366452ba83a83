// The official clients, unchanged, pointed at this server with only `baseURL` changed: every operation this server
// implements that together-ai 0.52.0 has a method for is performed through that method here or in the area's own
// test file, and the OpenAI-shaped calls through openai 6.49.
//
// v1 calls: `new Together({ apiKey, baseURL: <server>/v1 })`. The v2 management API (`client.beta.endpoints.*`,
// `client.beta.models.configs.*`) carries `defaultBaseURL .../v2`, which the SDK ignores once `baseURL` is set, so
// users make a second client on `<server>/v2`; its paths are `/projects/{projectId}/...` with `projectId` from the
// `projectID` client option (or env TOGETHER_PROJECT_ID) or a per-call `projectId` argument.
//
// | SDK method (together-ai 0.52.0)                  | HTTP sent                                                  | operationId            | tested in |
// |--------------------------------------------------|------------------------------------------------------------|------------------------|-----------|
// | whoami()                                         | GET /v1/whoami                                             | whoami                 | here |
// | endpoints.listHardware({model?})                 | GET /v1/hardware[?model=]                                  | listHardware           | hardware.test.ts, here |
// | models.upload(body)                              | POST /v1/models                                            | uploadModel            | models.test.ts, here |
// | models.uploads.status(jobId)                     | GET /v1/jobs/{jobId}                                       | getJob                 | models.test.ts, here |
// | models.list({dedicated?})                        | GET /v1/models[?dedicated=]                                | listModels             | models.test.ts, here |
// | (none)                                           | GET /v1/jobs                                               | listJobs               | no SDK method |
// | endpoints.create(body)                           | POST /v1/endpoints                                         | createEndpoint (403)   | endpoints.test.ts, here |
// | endpoints.list({type?, usage_type?, mine?})      | GET /v1/endpoints                                          | listEndpoints          | endpoints.test.ts, here |
// | endpoints.retrieve(id)                           | GET /v1/endpoints/{id}                                     | getEndpoint            | endpoints.test.ts, here |
// | endpoints.update(id, body)                       | PATCH /v1/endpoints/{id}                                   | updateEndpoint         | endpoints.test.ts, inference.test.ts, here |
// | endpoints.delete(id)                             | DELETE /v1/endpoints/{id} (204)                            | deleteEndpoint         | endpoints.test.ts, here |
// | (none)                                           | GET /v1/endpoints/{id}/usage                               | getEndpointUsage       | no SDK method |
// | endpoints.adapters.list(id)                      | GET /v1/endpoints/{id}/adapters                            | listAdapters           | adapters.test.ts, here |
// | endpoints.adapters.add(id, {model_id})           | POST /v1/endpoints/{id}/adapters                           | addAdapter             | adapters.test.ts, here |
// | endpoints.adapters.remove(id, {model_id})        | DELETE /v1/endpoints/{id}/adapters (JSON body)             | removeAdapter          | adapters.test.ts, here |
// | chat.completions.create({model, messages})       | POST /v1/chat/completions                                  | createChatCompletion   | inference.test.ts, adapters.test.ts, here |
// | beta.clusters.list({projectId?})                 | GET /v1/compute/clusters[?projectId=]                      | listClusters           | compute.test.ts, here |
// | beta.clusters.retrieve(id)                       | GET /v1/compute/clusters/{id}                              | getCluster             | compute.test.ts, here |
// | beta.clusters.remediations.create(inst, {...})   | POST /v1/compute/clusters/{c}/instances/{i}/remediations   | createRemediation      | compute.test.ts, here |
// | beta.clusters.remediations.list(inst, {...})     | GET  .../instances/{i}/remediations                        | listRemediations       | compute.test.ts, here |
// | beta.clusters.remediations.retrieve(id, {...})   | GET  .../remediations/{id}                                 | getRemediation         | compute.test.ts, here |
// | beta.clusters.remediations.approve(id, {...})    | POST .../remediations/{id}/approve                         | approveRemediation     | compute.test.ts, here |
// | beta.clusters.remediations.reject(id, {...})     | POST .../remediations/{id}/reject                          | rejectRemediation      | compute.test.ts, here |
// | beta.clusters.remediations.cancel(id, {...})     | POST .../remediations/{id}/cancel                          | cancelRemediation      | compute.test.ts, here |
// | (none: cluster instances are in getCluster)      | GET /v1/compute/clusters/{c}/instances                     | listClusterInstances   | no SDK method |
// | (none: the control path injects alerts)          | POST .../passive_health_check_alerts[/{id}/resolve]        | inject/resolvePassive… | no SDK method |
// | beta.jig.volumes.create/list/retrieve/update/delete | /v1/deployments/storage/volumes[/{id}][?version=]       | create/list/get/update/deleteVolume | volumes.test.ts, here |
// | beta.jig.secrets.create/list/retrieve/update/delete | /v1/deployments/secrets[/{id}]                          | create/list/get/update/deleteSecret | secrets.test.ts, here |
// | beta.endpoints.create({name, visibility?})       | POST /v2/projects/{p}/endpoints                            | createV2Endpoint       | here |
// | beta.endpoints.list({limit?, after?, filter?, orderBy?}) | GET  /v2/projects/{p}/endpoints                    | listV2Endpoints        | dedicated.test.ts, dedicated-lists.test.ts, here |
// | beta.endpoints.retrieve(id)                      | GET  /v2/projects/{p}/endpoints/{id}                       | getV2Endpoint          | dedicated.test.ts, here |
// | beta.endpoints.update(id, {etag?, trafficSplit?, name?, visibility?, updateMask?}) | PATCH /v2/projects/{p}/endpoints/{id}[?updateMask=] | updateV2Endpoint | dedicated.test.ts, here |
// | beta.endpoints.delete(id, {etag?})               | DELETE /v2/projects/{p}/endpoints/{id}[?etag=]             | deleteV2Endpoint       | here |
// | beta.endpoints.deployments.create(ep, {..., validateOnly?}) | POST /v2/projects/{p}/endpoints/{ep}/deployments[?validateOnly=] | createDeployment | here |
// | beta.endpoints.deployments.list(ep, {filter?, orderBy?}) | GET  /v2/projects/{p}/endpoints/{ep}/deployments   | listDeployments        | dedicated-lists.test.ts, here |
// | beta.endpoints.deployments.retrieve(id, {endpointId}) | GET .../deployments/{id}                              | getDeployment          | dedicated.test.ts, here |
// | beta.endpoints.deployments.update(id, {endpointId, autoscaling?, name?, etag?, updateMask?}) | PATCH .../deployments/{id} | updateDeployment | here |
// | beta.endpoints.deployments.delete(id, {endpointId, etag?}) | DELETE .../deployments/{id}[?etag=]              | deleteDeployment       | here |
// | beta.models.configs.list({referenceModel?, referenceModelId?}) | GET /v2/projects/{p}/configs                | listConfigs            | here |
// | beta.models.configs.retrieve(id)                 | GET  /v2/projects/{p}/configs/{id}                         | getConfig              | here |
// | (none)                                           | POST /v2/projects/{p}/deploy                               | deployModel            | no SDK method (this server's one-call deploy) |
// | beta.models.create/retrieve/update/list/delete   | /v2/projects/{p}/models[/{id}][?updateMask=]               | create/get/update/listCatalogueModel(s), deleteCatalogueModel | model-catalogue.test.ts |
// | beta.models.listFiles(id, {revisionId?}) / listRevisions(id) | GET /v2/projects/{p}/models/{id}/files, /revisions | listCatalogueModelFiles, listCatalogueModelRevisions | model-catalogue.test.ts |
// | (none)                                           | GET /v2/projects/{p}/models/{id}/revisions/{revisionId}    | getCatalogueModelRevision | no SDK method |
// | beta.models.listOrgScoped(orgId)                 | GET /v2/organizations/{orgId}/models                       | listOrganizationModels | model-catalogue.test.ts |
// | beta.models.remoteUploads.create/retrieve/list/events | /v2/projects/{p}/models/uploads[/{id}[/events]]       | create/get/listRemoteModelUpload(s), listRemoteModelUploadEvents | model-catalogue.test.ts |
// | beta.endpoints.listEvents(id, {limit?, after?, types?, minLevel?, since?, until?, deploymentIds?, sourceKinds?, subjectId?}) | GET /v2/projects/{p}/endpoints/{id}/events | listV2EndpointEvents | dedicated-lists.test.ts, here |
// | (none)                                           | GET  /v2/projects/{p}/endpoints/{id}/usage                 | getV2EndpointUsage     | no SDK method |
//
// openai 6.49 (baseURL <server>/v1): chat.completions.create -> createChatCompletion (inference.test.ts, here: a v1
// endpoint, an adapter, `stream: true` refused as BadRequestError). models.list -> listModels is NOT compatible:
// the public platform (and this server, spec Models tag) answers GET /v1/models with a bare array, while openai's
// Page reads `body.data`, so openai yields an empty list (shown below); together-ai's `models.list` types the bare
// array and works.
//
// Compatibility fixes this file proved (spec/tags/dedicated.yaml, server/modules/dedicated/): configs.list's
// `referenceModel` query (the SDK's non-deprecated filter) was refused as an unknown parameter; deployment
// `autoscaling` with a bound omitted (the SDK types both optional: `maxReplicas` defaults to `minReplicas`, and an
// update keeps an omitted one) was refused as `required`.
//
// The "Compute, identity, volumes, secrets and hardware" block below calls each of those modules' methods with the
// parameters the SDK types show: whoami's user_id, listHardware with and without a model, clusters.list's
// projectId and every required Cluster field, remediations.list's order_by/page_size/page_token/state/trigger/mode
// (page_size 0, the platform's QUARANTINING/QUARANTINED states), approve's mode override, a volume whose
// source_prefix is a path in the files, a secret named with a slash.
//
// SDK methods of these areas whose operations this server does NOT implement (outside its scope):
// - endpoints.listAvzones (GET /v1/clusters/availability-zones).
// (beta.endpoints.analytics: test/v2-analytics.test.ts; beta.endpoints.adapters.*: test/v2-adapters.test.ts;
// beta.endpoints.rollouts.*: test/rollouts.test.ts; .abExperiments.*, .shadowExperiments.* and .targets:
// test/experiments.test.ts; beta.endpoints.listOrgScoped, .hardware.*, .placementProfiles.* and beta.models.listSupported/retrieveSupported:
// test/official-v2-reads.test.ts; beta.models.* and beta.models.remoteUploads.*: test/model-catalogue.test.ts.)
// - beta.clusters.create/update/delete/listRegions, beta.clusters.storage.* (cluster lifecycle and storage).
// - beta.jig.deploy/retrieve/update/list/destroy/retrieveLogs (/v1/deployments[/{id}[/logs]]): Jig containers, not
//   dedicated endpoints; beta.jig.queue.* belongs to the queue, which this server does not implement.
// - openai: models.retrieve (GET /v1/models/{id}) and every other openai resource.
// - Every query and body field the SDK types offer for the v2 endpoint, deployment and config calls above is
//   accepted (describe 'dedicated' below): list `filter`/`orderBy`, listEvents' filters, deployment `enableLora`,
//   `placement`, the deprecated `modelId`/`configId`/`modelRevisionId` aliases, a `/revisions/{id}` suffix on
//   `model`, autoscaling windows and `scalingMetrics`.
import OpenAI from 'openai';
import Together from 'together-ai';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { H100, insertUpload, insertV1Endpoint, MODEL, PROVISION_MS, STOP_MS } from './support/endpoints.ts';
import { refusal } from './support/expect.ts';
import { startTestPlatform, type TestPlatform } from './support/platform.ts';

let t: TestPlatform;
let projectId: string;
let v1: Together;
let v2: Together;
let openai: OpenAI;

beforeAll(async () => {
  t = await startTestPlatform();
  projectId = t.caller.identity.projectId;
  v1 = new Together({ apiKey: t.caller.key, baseURL: `${t.url}/v1`, maxRetries: 0 });
  v2 = new Together({ apiKey: t.caller.key, baseURL: `${t.url}/v2`, projectID: projectId, maxRetries: 0 });
  openai = new OpenAI({ apiKey: t.caller.key, baseURL: `${t.url}/v1`, maxRetries: 0 });
});
afterAll(() => t?.close());

describe('Identity', () => {
  test('whoami() describes the key, project and organization', async () => {
    const me = await v1.whoami();
    expect(me).toMatchObject({ project_id: projectId, project_slug: 'default', api_key_id: t.caller.identity.apiKeyId });
    const anonymous = new Together({ apiKey: 'not-a-key', baseURL: `${t.url}/v1`, maxRetries: 0 });
    const err = await refusal(anonymous.whoami());
    expect(err).toBeInstanceOf(Together.AuthenticationError);
    expect(err.error.error.code).toBe('invalid_api_key');
  });
});

describe('Models', () => {
  test('models.upload of an adapter, models.uploads.status until Complete, models.list; a refused upload is a BadRequestError', async () => {
    const up = await v1.models.upload({ model_name: 'sdk-adapter', model_source: 'acme/llama-lora', model_type: 'adapter', base_model: `${MODEL}-Turbo` });
    expect(up.data.job_id).toBeTruthy();
    expect((await v1.models.uploads.status(up.data.job_id)).status).toBe('Queued');
    for (let i = 0; i < 10 && (await v1.models.uploads.status(up.data.job_id)).status !== 'Complete'; i++) await t.advance(60_000);
    const job = await v1.models.uploads.status(up.data.job_id);
    expect(job.status).toBe('Complete');
    expect((await v1.models.list()).map((m) => m.id)).toContain(up.data.model_id);
    // An adapter is never deployable on its own.
    expect((await v1.models.list({ dedicated: true })).map((m) => m.id)).not.toContain(up.data.model_id);

    const err = await refusal(v1.models.upload({ model_name: 'bad', model_source: 'not a source' }));
    expect(err).toBeInstanceOf(Together.BadRequestError);
    expect(err.error.error.param).toBe('model_source');
  });
});

describe('Endpoints (v1)', () => {
  test('endpoints.create is refused with PermissionDeniedError endpoints_v1_create_access_disabled', async () => {
    const err = await refusal(v1.endpoints.create({ model: MODEL, hardware: '1x_nvidia_h100_80gb_sxm', autoscaling: { min_replicas: 1, max_replicas: 1 } }));
    expect(err).toBeInstanceOf(Together.PermissionDeniedError);
    expect(err.error.error.code).toBe('endpoints_v1_create_access_disabled');
  });
});

describe('Dedicated endpoints (v2) through client.beta on <server>/v2', () => {
  test('configs.list (referenceModelId, referenceModel, paged) and configs.retrieve', async () => {
    const all: string[] = [];
    for await (const c of v2.beta.models.configs.list({ limit: 2 })) all.push(c.id);
    expect(all.length).toBeGreaterThan(2); // auto-paged through next_cursor
    expect(new Set(all).size).toBe(all.length);

    const byId: string[] = [];
    for await (const c of v2.beta.models.configs.list({ referenceModelId: MODEL })) byId.push(c.id);
    expect(byId).toContain(H100);
    expect(byId.length).toBeLessThan(all.length);
    // The SDK's non-deprecated filter is the resource name.
    for (const referenceModel of [`projects/${projectId}/models/${MODEL}`, `models/${MODEL}`]) {
      const byName: string[] = [];
      for await (const c of v2.beta.models.configs.list({ referenceModel })) byName.push(c.id);
      expect(byName).toEqual(byId);
    }
    const mismatch = await refusal(v2.beta.models.configs.list({ referenceModel: `models/${MODEL}`, referenceModelId: 'deepseek-ai/DeepSeek-V3' }));
    expect(mismatch).toBeInstanceOf(Together.BadRequestError);
    expect(mismatch.error.error).toMatchObject({ param: 'referenceModel' });

    const config = await v2.beta.models.configs.retrieve(H100);
    expect(config).toMatchObject({ id: H100, referenceModelId: MODEL, selectors: expect.any(Array), certifications: expect.any(Array) });
    const absent = await refusal(v2.beta.models.configs.retrieve('cr_absent'));
    expect(absent).toBeInstanceOf(Together.NotFoundError);
    expect(absent.error.error.code).toBe('not_found');
  });

  test('endpoints.create, deployments.create/list/retrieve/update/delete, endpoints.update (route), endpoints.delete with etags', async () => {
    const e = await v2.beta.endpoints.create({ name: 'sdk-endpoint', visibility: 'VISIBILITY_PRIVATE' });
    expect(e).toMatchObject({ name: 'default/sdk-endpoint', projectId, trafficSplit: [], endpointType: 'ENDPOINT_TYPE_DEDICATED' });
    // A name read back (`<project_slug>/<name>`) and edited is accepted as the new name.
    const renamed0 = await v2.beta.endpoints.update(e.id, { name: 'default/sdk-endpoint-2' });
    expect(renamed0.name).toBe('default/sdk-endpoint-2');
    expect((await v2.beta.endpoints.update(e.id, { name: 'sdk-endpoint', updateMask: 'name' })).name).toBe('default/sdk-endpoint');
    const taken = await refusal(v2.beta.endpoints.create({ name: 'sdk-endpoint' }));
    expect(taken).toBeInstanceOf(Together.ConflictError);
    expect(taken.error.error.code).toBe('endpoint_name_taken');

    // The resource-name forms the SDK documents for `model` and `config`.
    const d = await v2.beta.endpoints.deployments.create(e.id, {
      name: 'blue',
      model: `projects/${projectId}/models/${MODEL}`,
      config: `projects/${projectId}/configs/${H100}`,
      autoscaling: { minReplicas: 1 }, // maxReplicas defaults to minReplicas, as the SDK documents
    });
    expect(d).toMatchObject({
      endpointId: e.id,
      name: 'blue',
      configId: H100,
      autoscaling: { minReplicas: 1, maxReplicas: 1 },
      status: { state: 'DEPLOYMENT_STATE_PROVISIONING' },
    });
    const badConfig = await refusal(
      v2.beta.endpoints.deployments.create(e.id, { name: 'green', model: MODEL, config: 'cr_absent', autoscaling: { minReplicas: 1, maxReplicas: 1 } }),
    );
    expect(badConfig).toBeInstanceOf(Together.BadRequestError);
    expect(badConfig.error.error).toMatchObject({ code: 'config_not_found', param: 'config' });

    // validateOnly (a query parameter the SDK splits out of the params) answers the preview and writes nothing.
    const preview = await v2.beta.endpoints.deployments.create(e.id, {
      name: 'preview',
      model: MODEL,
      config: H100,
      autoscaling: { minReplicas: 1 },
      validateOnly: true,
    });
    expect(preview).toMatchObject({ name: 'preview', endpointId: e.id });

    const listed: string[] = [];
    for await (const x of v2.beta.endpoints.deployments.list(e.id)) listed.push(x.id);
    expect(listed).toEqual([d.id]);

    await t.advance(PROVISION_MS);
    const ready = await v2.beta.endpoints.deployments.retrieve(d.id, { endpointId: e.id });
    expect(ready.status?.state).toBe('DEPLOYMENT_STATE_READY');

    // Route traffic, then chat through both official clients on <project_slug>/<endpoint_name>.
    const current = await v2.beta.endpoints.retrieve(e.id);
    const routed = await v2.beta.endpoints.update(e.id, {
      etag: current.etag,
      trafficSplit: [{ deploymentId: d.id, weight: 100 }],
      updateMask: 'trafficSplit',
    });
    expect(routed.trafficSplit).toEqual([{ deploymentId: d.id, weight: 100 }]);
    const viaTogether = await v1.chat.completions.create({ model: 'default/sdk-endpoint', messages: [{ role: 'user', content: 'hello' }] });
    const viaOpenai = await openai.chat.completions.create({ model: 'default/sdk-endpoint', messages: [{ role: 'user', content: 'hello' }] });
    expect(viaTogether.choices[0]!.message!.content).toBe(viaOpenai.choices[0]!.message.content);

    // A deployment that receives traffic cannot be deleted; a stale etag is a ConflictError.
    const busy = await refusal(v2.beta.endpoints.deployments.delete(d.id, { endpointId: e.id }));
    expect(busy).toBeInstanceOf(Together.ConflictError);
    expect(busy.error.error.code).toBe('deployment_receives_traffic');
    const stale = await refusal(v2.beta.endpoints.deployments.update(d.id, { endpointId: e.id, etag: 'stale', name: 'blue-2' }));
    expect(stale).toBeInstanceOf(Together.ConflictError);
    expect(stale.error.error).toMatchObject({ code: 'etag_mismatch', param: 'etag' });

    // An omitted autoscaling bound keeps its value (the SDK's contract); the merged bounds must still be ordered.
    const widened = await v2.beta.endpoints.deployments.update(d.id, { endpointId: e.id, autoscaling: { maxReplicas: 3 } });
    expect(widened.autoscaling).toEqual({ minReplicas: 1, maxReplicas: 3 });
    const inverted = await refusal(v2.beta.endpoints.deployments.update(d.id, { endpointId: e.id, autoscaling: { minReplicas: 4 } }));
    expect(inverted).toBeInstanceOf(Together.BadRequestError);
    expect(inverted.error.error).toMatchObject({ code: 'invalid_autoscaling', param: 'autoscaling.minReplicas' });
    expect((await v2.beta.endpoints.deployments.retrieve(d.id, { endpointId: e.id })).autoscaling).toEqual({ minReplicas: 1, maxReplicas: 3 });

    // Scale to zero (READY -> STOPPING -> STOPPED) and rename, with the etag just read.
    const stopping = await v2.beta.endpoints.deployments.update(d.id, {
      endpointId: e.id,
      etag: widened.etag,
      autoscaling: { minReplicas: 0, maxReplicas: 0 },
      updateMask: 'autoscaling',
    });
    expect(stopping.status?.state).toBe('DEPLOYMENT_STATE_STOPPING');
    await t.advance(STOP_MS);
    const renamed = await v2.beta.endpoints.deployments.update(d.id, { endpointId: e.id, name: 'blue-2' });
    expect(renamed).toMatchObject({ name: 'blue-2', status: { state: 'DEPLOYMENT_STATE_STOPPED' } });

    // Un-route it, then delete it with its etag, then the endpoint with a stale and the current etag.
    const unrouted = await v2.beta.endpoints.update(e.id, { trafficSplit: [] });
    expect(await v2.beta.endpoints.deployments.delete(d.id, { endpointId: e.id, etag: renamed.etag })).toEqual({});
    const gone = await refusal(v2.beta.endpoints.deployments.retrieve(d.id, { endpointId: e.id }));
    expect(gone).toBeInstanceOf(Together.NotFoundError);
    const staleDelete = await refusal(v2.beta.endpoints.delete(e.id, { etag: unrouted.etag === 'x' ? 'y' : 'x' }));
    expect(staleDelete).toBeInstanceOf(Together.ConflictError);
    expect(staleDelete.error.error.code).toBe('etag_mismatch');
    // The lifecycle feed, auto-paged by the SDK (oldest first).
    const events: { type: string; sourceKind: string }[] = [];
    for await (const ev of v2.beta.endpoints.listEvents(e.id, { limit: 3 })) events.push(ev);
    expect(events[0]).toMatchObject({ type: 'endpoint.created', sourceKind: 'SOURCE_KIND_ENDPOINT' });
    expect(events.map((ev) => ev.type)).toContain('deployment.deleted');
    const latest = await v2.beta.endpoints.retrieve(e.id);
    expect(await v2.beta.endpoints.delete(e.id, { etag: latest.etag })).toEqual({});
    expect(await refusal(v2.beta.endpoints.retrieve(e.id))).toBeInstanceOf(Together.NotFoundError);
  });

  test('endpoints.list pages through next_cursor; projectId per call; another project answers NotFoundError', async () => {
    const c = await t.newCaller();
    const pid = c.identity.projectId;
    const client = new Together({ apiKey: c.key, baseURL: `${t.url}/v2`, maxRetries: 0 }); // no projectID option
    const made: string[] = [];
    for (const name of ['p-a', 'p-b', 'p-c']) {
      t.clock.advance(1);
      made.push((await client.beta.endpoints.create({ projectId: pid, name })).id);
    }
    const seen: string[] = [];
    const first = await client.beta.endpoints.list({ projectId: pid, limit: 2 });
    expect(first.data).toHaveLength(2);
    expect(first.hasNextPage()).toBe(true);
    for await (const x of client.beta.endpoints.list({ projectId: pid, limit: 2 })) seen.push(x.id);
    expect(seen).toEqual(made);

    const foreign = await refusal(client.beta.endpoints.list({ projectId }));
    expect(foreign).toBeInstanceOf(Together.NotFoundError);
    expect(foreign.error.error).toMatchObject({ code: 'not_found', param: 'projectId' });
    const other = await refusal(v2.beta.endpoints.retrieve(made[0]!));
    expect(other).toBeInstanceOf(Together.NotFoundError);
  });

  test('TOGETHER_PROJECT_ID supplies the project of v2 paths', async () => {
    const saved = process.env.TOGETHER_PROJECT_ID;
    process.env.TOGETHER_PROJECT_ID = projectId;
    try {
      const client = new Together({ apiKey: t.caller.key, baseURL: `${t.url}/v2`, maxRetries: 0 });
      expect((await client.beta.models.configs.retrieve(H100)).id).toBe(H100);
    } finally {
      if (saved === undefined) delete process.env.TOGETHER_PROJECT_ID;
      else process.env.TOGETHER_PROJECT_ID = saved;
    }
  });
});

describe('dedicated', () => {
  test('deployments.create with modelId/configId/modelRevisionId, autoscaling windows and metrics, placement and enableLora; lists with filter and orderBy; listEvents with its filters', async () => {
    const e = await v2.beta.endpoints.create({ name: 'sdk-dedicated' });
    // The revision a config was certified with is the model's one revision: the deprecated id aliases take it.
    const config = await v2.beta.models.configs.retrieve(H100);
    const revision = config.certifications[0]!.modelRevisionId;
    const autoscaling = {
      minReplicas: 1,
      maxReplicas: 2,
      scaleDownWindow: '300s',
      scaleUpWindow: '60s',
      scaleToZeroWindow: '3600s',
      scalingMetrics: [{ name: 'inflight_requests' as const, type: 'METRIC_TARGET_TYPE_AVERAGE_VALUE' as const, target: 4 }],
    };
    const placement = { inline: { regions: ['local'], constraint: 'ENFORCEMENT_REQUIRED' as const } };
    const blue = await v2.beta.endpoints.deployments.create(e.id, {
      name: 'blue',
      modelId: MODEL,
      modelRevisionId: revision,
      configId: H100,
      autoscaling,
      placement,
      enableLora: true,
    });
    expect(blue).toMatchObject({
      modelId: MODEL,
      modelRevisionId: revision,
      configId: H100,
      autoscaling,
      placement,
      enableLora: true,
      hardware: '',
      runtimeInfo: { engineType: 'local', functionCallingSupported: true },
      status: { state: 'DEPLOYMENT_STATE_PROVISIONING' },
    });
    const preview = await v2.beta.endpoints.deployments.create(e.id, {
      name: 'preview',
      model: `projects/${projectId}/models/${MODEL}/revisions/${revision}`,
      config: `projects/${projectId}/configs/${H100}`,
      autoscaling: {},
      placement: { inline: { regions: ['us-east-1'], constraint: 'ENFORCEMENT_PREFERRED' } },
      validateOnly: true,
    });
    expect(preview).toMatchObject({ autoscaling: { minReplicas: 1, maxReplicas: 1 }, modelRevisionId: revision });
    const unmet = await refusal(
      v2.beta.endpoints.deployments.create(e.id, { name: 'x', modelId: MODEL, configId: H100, autoscaling: {}, placement: { profile: 'pp_eu_only' } }),
    );
    expect(unmet).toBeInstanceOf(Together.BadRequestError);
    expect(unmet.error.error).toMatchObject({ code: 'placement_profile_not_found', param: 'placement.profile' });
    t.clock.advance(1);
    const green = await v2.beta.endpoints.deployments.create(e.id, {
      name: 'green',
      model: MODEL,
      config: H100,
      autoscaling: { minReplicas: 0, maxReplicas: 0 },
    });

    const listed: string[] = [];
    for await (const d of v2.beta.endpoints.deployments.list(e.id, {
      filter: 'state=DEPLOYMENT_STATE_STOPPED OR name:blu',
      orderBy: 'created_at desc',
      limit: 1,
    }))
      listed.push(d.name);
    expect(listed).toEqual(['green', 'blue']);
    const endpoints: string[] = [];
    for await (const x of v2.beta.endpoints.list({ filter: 'name="sdk-dedicated*" AND created_at >= "2000-01-01T00:00:00Z"', orderBy: 'name desc' }))
      endpoints.push(x.name);
    expect(endpoints).toEqual(['default/sdk-dedicated']);

    // The windows alone change no state; LoRA adapters of the model are served on the endpoint once it is READY and routed.
    const updated = await v2.beta.endpoints.deployments.update(blue.id, {
      endpointId: e.id,
      autoscaling: { scaleDownWindow: '600s' },
      updateMask: 'autoscaling',
    });
    expect(updated.autoscaling).toEqual({ ...autoscaling, scaleDownWindow: '600s' });
    await t.advance(PROVISION_MS);
    await v2.beta.endpoints.update(e.id, { trafficSplit: [{ deploymentId: blue.id, weight: 1 }] });
    const adapter = await insertUpload(t, projectId, { modelType: 'adapter', name: 'sdk-dedicated-lora', base: MODEL });
    const viaAdapter = await v1.chat.completions.create({ model: `default/sdk-dedicated:${adapter.name}`, messages: [{ role: 'user', content: 'hello' }] });
    expect(viaAdapter.choices[0]!.message!.content).toContain(`with the LoRA adapter ${adapter.name}`);

    const since = new Date(Date.parse(blue.createdAt) - 1).toISOString();
    const until = new Date(t.clock.now() + 1).toISOString();
    const events: [string, string | undefined][] = [];
    for await (const ev of v2.beta.endpoints.listEvents(e.id, {
      types: ['deployment.created', 'deployment.state_changed'],
      minLevel: 'LEVEL_INFO',
      since,
      until,
      deploymentIds: [blue.id],
      sourceKinds: ['SOURCE_KIND_DEPLOYMENT'],
      limit: 1,
    })) {
      events.push([ev.type, ev.status]);
    }
    expect(events).toEqual([
      ['deployment.created', 'DEPLOYMENT_STATE_PROVISIONING'],
      ['deployment.state_changed', 'DEPLOYMENT_STATE_READY'],
    ]);
    const bySubject = await v2.beta.endpoints.listEvents(e.id, { subjectId: 'ro_unknown' });
    expect(bySubject.data).toEqual([]);

    const configs: string[] = [];
    for await (const c of v2.beta.models.configs.list({ referenceModel: `models/${MODEL}`, limit: 0 })) configs.push(c.id);
    expect(configs).toContain(H100);
    await v2.beta.endpoints.update(e.id, { trafficSplit: [] });
    for (const d of [blue, green]) await v2.beta.endpoints.deployments.delete(d.id, { endpointId: e.id });
    expect(await v2.beta.endpoints.delete(e.id)).toEqual({});
  });
});

describe('Inference through openai 6.49', () => {
  test('a running v1 endpoint and an adapter on it answer openai chat.completions.create', async () => {
    const ep = await insertV1Endpoint(t, projectId, { name: 'openai-v1' });
    const answer = await openai.chat.completions.create({ model: 'default/openai-v1', messages: [{ role: 'user', content: 'ping' }] });
    expect(answer).toMatchObject({ object: 'chat.completion', model: 'default/openai-v1' });
    expect(answer.choices[0]!.message.role).toBe('assistant');

    const adapter = await insertUpload(t, projectId, { modelType: 'adapter', name: 'openai-lora', base: MODEL });
    const modelId = `${(await v1.endpoints.retrieve(ep.id)).name}:${adapter.name}`; // <project_slug>/<endpoint>:<adapter>
    await v1.endpoints.adapters.add(ep.id, { model_id: modelId });
    const viaAdapter = await openai.chat.completions.create({ model: modelId, messages: [{ role: 'user', content: 'ping' }] });
    expect(viaAdapter.model).toBe(modelId);
  });

  test("stream: true streams the dedicated endpoint's answer as chunks", async () => {
    const stream = await openai.chat.completions.create({ model: 'default/openai-v1', messages: [{ role: 'user', content: 'x' }], stream: true });
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
    expect(text).toMatch(/^\[local engine\]/);
  });

  test('models.list: the bare array of the public platform is not an openai page (openai sees no data)', async () => {
    const page = await openai.models.list();
    expect(page.data).toEqual([]);
    const raw = await openai.models.list().asResponse();
    expect(Array.isArray(await raw.json())).toBe(true);
  });
});

describe('Compute, identity, volumes, secrets and hardware (together-ai)', () => {
  test('whoami() reads user_id: the key itself, the principal that authenticated', async () => {
    const me = await v1.whoami();
    expect(me.user_id).toBe(t.caller.identity.apiKeyId);
    expect(me.user_id).toBe(me.api_key_id);
  });

  test('endpoints.listHardware() lists every configuration; with a model, the ones that run it, each with availability', async () => {
    const all = await v1.endpoints.listHardware();
    expect(all.data.length).toBeGreaterThan(1);
    expect(all.data.every((h) => h.availability === undefined)).toBe(true);
    const forModel = await v1.endpoints.listHardware({ model: MODEL });
    expect(forModel.data.length).toBeGreaterThan(0);
    for (const h of forModel.data) expect(['available', 'insufficient', 'unavailable']).toContain(h.availability?.status);
  });

  test('beta.clusters.list({projectId}) and retrieve: every field the SDK types as required', async () => {
    const { clusters } = await v1.beta.clusters.list();
    expect(clusters).toHaveLength(1);
    expect((await v1.beta.clusters.list({ projectId })).clusters.map((c) => c.cluster_id)).toEqual([clusters[0]!.cluster_id]);
    expect((await v1.beta.clusters.list({ projectId: t.other.identity.projectId })).clusters).toEqual([]);
    const cluster = await v1.beta.clusters.retrieve(clusters[0]!.cluster_id);
    expect(cluster).toMatchObject({
      gpu_type: 'H100_SXM',
      billing_type: 'RESERVED',
      cuda_version: '12.4',
      nvidia_driver_version: '550',
      num_reserved_gpus: 32,
      num_capacity_pool_gpus: 0,
      desired_preemptible_gpus: 0,
      allocated_preemptible_gpus: 0,
      num_cpu_workers: 0,
      kube_config: '',
      volumes: [],
      control_plane_nodes: [],
      add_ons: [],
    });
    expect(cluster.phase_transitions.map((p) => p.phase)).toEqual(['CLUSTER_PHASE_READY']);
    for (const node of cluster.gpu_worker_nodes) {
      expect(node).toMatchObject({ num_cpu_cores: 104, memory_gib: 1600, networks: [] });
      expect(node.phase_transitions.map((p) => p.phase)).toEqual(['NODE_PHASE_BOOTING', 'NODE_PHASE_RUNNING']);
    }
  });

  test('beta.clusters.remediations: create (remediation_id, reason), approve (comment, mode), reject, cancel, retrieve, list (order_by, page_size, page_token, state/trigger/mode)', async () => {
    const cluster = (await v1.beta.clusters.list()).clusters[0]!;
    const cluster_id = cluster.cluster_id;
    const node = cluster.gpu_worker_nodes.find((n) => n.node_id === 'gpu-node-3-vm1')!;
    const instance_id = node.instance_id!;
    const alert = async (alert_name: string) =>
      (await t.caller.http.post(`/v1/compute/clusters/${cluster_id}/passive_health_check_alerts`).send({ instance_id, alert_name })).body
        .node_remediation_intent_id as string;

    const manual = await v1.beta.clusters.remediations.create(instance_id, {
      cluster_id,
      mode: 'REMEDIATION_MODE_VM_ONLY',
      reason: 'GPU fell off the bus',
      remediation_id: 'sdk-compute-1',
    });
    expect(manual).toMatchObject({
      state: 'PENDING',
      trigger: 'REMEDIATION_TRIGGER_MANUAL',
      reason: 'GPU fell off the bus',
      requested_by: t.caller.identity.apiKeyId,
    });
    expect(
      (
        await v1.beta.clusters.remediations.create(instance_id, {
          cluster_id,
          mode: 'REMEDIATION_MODE_VM_ONLY',
          reason: 'GPU fell off the bus',
          remediation_id: 'sdk-compute-1',
        })
      ).id,
    ).toBe(manual.id);
    t.clock.advance(10);

    const automated = await alert('DmesgXidError');
    const approved = await v1.beta.clusters.remediations.approve(automated, {
      cluster_id,
      instance_id,
      comment: 'reboot is enough',
      mode: 'REMEDIATION_MODE_REBOOT_VM',
    });
    expect(approved).toMatchObject({
      state: 'PENDING',
      mode: 'REMEDIATION_MODE_REBOOT_VM',
      review_comment: 'reboot is enough',
      reviewed_by: t.caller.identity.apiKeyId,
    });
    t.clock.advance(10);
    expect((await v1.beta.clusters.remediations.cancel(automated, { cluster_id, instance_id })).state).toBe('CANCELLED');
    t.clock.advance(10);
    const second = await alert('NvlinkDown');
    const rejected = await v1.beta.clusters.remediations.reject(second, { cluster_id, instance_id, comment: 'known flake' });
    expect(rejected).toMatchObject({ state: 'CANCELLED', review_comment: 'known flake' });
    expect(await v1.beta.clusters.remediations.retrieve(manual.id, { cluster_id, instance_id })).toMatchObject({ id: manual.id, state: 'PENDING' });

    // Newest first by default; any ordering expression; page_size 0 is the default page.
    const all = await v1.beta.clusters.remediations.list(instance_id, { cluster_id, page_size: 0 });
    expect(all.remediations.map((r) => r.id)).toEqual([second, automated, manual.id]);
    const byUpdate = await v1.beta.clusters.remediations.list(instance_id, { cluster_id, order_by: 'update_time asc' });
    expect(byUpdate.remediations.map((r) => r.id)).toEqual([manual.id, automated, second]);
    const paged: string[] = [];
    let page_token: string | undefined;
    do {
      const page = await v1.beta.clusters.remediations.list(instance_id, {
        cluster_id,
        order_by: 'create_time',
        page_size: 2,
        ...(page_token ? { page_token } : {}),
      });
      paged.push(...page.remediations.map((r) => r.id));
      page_token = page.has_next ? page.next_page_token : undefined;
    } while (page_token);
    expect(paged).toEqual([manual.id, automated, second]);

    const cancelled = await v1.beta.clusters.remediations.list(instance_id, {
      cluster_id,
      state: ['CANCELLED', 'QUARANTINED'],
      trigger: ['REMEDIATION_TRIGGER_AUTOMATED'],
      mode: ['REMEDIATION_MODE_REBOOT_VM', 'REMEDIATION_MODE_VM_ONLY'],
    });
    expect(cancelled.remediations.map((r) => r.id).sort()).toEqual([automated, second].sort());
    const quarantining = await v1.beta.clusters.remediations.list(instance_id, { cluster_id, state: ['QUARANTINING'] });
    expect(quarantining).toEqual({ remediations: [], next_page_token: '', has_next: false });
  });

  test('beta.jig.volumes: create with a path prefix in the files, list, retrieve (version), update, delete', async () => {
    const created = await v1.beta.jig.volumes.create({ name: 'sdk-models', type: 'readOnly', content: { type: 'files', source_prefix: 'models/' } });
    expect(created).toMatchObject({ object: 'volume', current_version: 1, content: { type: 'files', source_prefix: 'models/', files: [] } });
    expect((await v1.beta.jig.volumes.list()).data!.map((v) => v.name)).toContain('sdk-models');
    const updated = await v1.beta.jig.volumes.update(created.id!, {
      name: 'sdk-models-2',
      type: 'readOnly',
      content: { type: 'files', source_prefix: 'models/v2/' },
    });
    expect(updated).toMatchObject({ name: 'sdk-models-2', current_version: 2 });
    expect((await v1.beta.jig.volumes.retrieve(created.id!, { version: 1 })).content!.source_prefix).toBe('models/');
    expect((await v1.beta.jig.volumes.retrieve('sdk-models-2')).content!.source_prefix).toBe('models/v2/');
    expect(await v1.beta.jig.volumes.delete(created.id!)).toEqual({});
    expect(await refusal(v1.beta.jig.volumes.retrieve(created.id!))).toBeInstanceOf(Together.NotFoundError);
  });

  test('beta.jig.secrets: create (a name with a slash, as the SDK documents), list, retrieve and update by name, delete', async () => {
    const created = await v1.beta.jig.secrets.create({ name: 'team/HF_TOKEN', value: 'hf_sdk_secret', description: 'Hub token', project_id: projectId });
    expect(created).toMatchObject({ object: 'secret', name: 'team/HF_TOKEN', description: 'Hub token', created_by: t.caller.identity.apiKeyId });
    expect(JSON.stringify(created)).not.toContain('hf_sdk_secret');
    expect((await v1.beta.jig.secrets.list()).data!.map((s) => s.name)).toContain('team/HF_TOKEN');
    expect((await v1.beta.jig.secrets.retrieve('team/HF_TOKEN')).id).toBe(created.id);
    const updated = await v1.beta.jig.secrets.update('team/HF_TOKEN', { value: 'hf_rotated', description: 'rotated' });
    expect(updated).toMatchObject({ id: created.id, description: 'rotated' });
    expect(await v1.beta.jig.secrets.delete('team/HF_TOKEN')).toEqual({});
    expect(await refusal(v1.beta.jig.secrets.retrieve(created.id!))).toBeInstanceOf(Together.NotFoundError);
  });
});

describe('Modules models, endpoints (v1) and adapters: every SDK call with realistic values', () => {
  const SDK_TYPES = ['chat', 'language', 'code', 'image', 'embedding', 'moderation', 'rerank'];
  const UUID = '[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}';

  test('models.upload (an ordinary hub repository, the README example, an adapter with base_model), uploads.status, list, endpoints.listHardware({model})', async () => {
    const plain = await v1.models.upload({
      model_name: 'acc-model',
      model_source: 'acc-org/acc-model',
      description: 'An ordinary hub repository',
      hf_token: 'hf_example',
    });
    expect(plain.data).toMatchObject({ model_name: 'acc-model', model_source: 'huggingface' });
    expect(plain.data.job_id).toMatch(new RegExp(`^job-${UUID}$`));
    expect(plain.data.model_id).toMatch(/^ml_[0-9a-z]{26}$/);
    const readme = await v1.models.upload({ model_name: 'Qwen2.5-72B-Instruct', model_source: 'unsloth/Qwen2.5-72B-Instruct' });
    const adapter = await v1.models.upload({
      model_name: 'default/my-adapter',
      model_source: 'acc-org/my-lora',
      model_type: 'adapter',
      base_model: 'meta-llama/Meta-Llama-3.1-8B-Instruct-Reference',
      description: 'A LoRA adapter for the serverless pool',
    });
    const jobs = [plain, readme, adapter].map((u) => u.data.job_id);
    for (let i = 0; i < 10 && (await Promise.all(jobs.map((j) => v1.models.uploads.status(j)))).some((s) => s.status !== 'Complete'); i++)
      await t.advance(60_000);
    for (const j of jobs) expect(await v1.models.uploads.status(j)).toMatchObject({ job_id: j, status: 'Complete' });
    expect((await v1.models.uploads.status(adapter.data.job_id)).args).toEqual({
      description: 'A LoRA adapter for the serverless pool',
      modelName: 'default/my-adapter',
      modelSource: 'acc-org/my-lora',
    });

    const models = await v1.models.list();
    for (const m of models) expect(SDK_TYPES, m.id).toContain(m.type);
    const ids = models.map((m) => m.id);
    expect(ids).toEqual(
      expect.arrayContaining([plain.data.model_id, readme.data.model_id, adapter.data.model_id, 'deepseek-ai/DeepSeek-R1', 'Salesforce/Llama-Rank-v1']),
    );
    const dedicated = (await v1.models.list({ dedicated: true })).map((m) => m.id);
    expect(dedicated).toContain(readme.data.model_id);
    expect(dedicated).not.toContain(plain.data.model_id); // unknown architecture: nothing here runs it
    expect(dedicated).not.toContain(adapter.data.model_id);

    for (const model of [
      'deepseek-ai/DeepSeek-R1',
      'openai/gpt-oss-120b',
      'mistralai/Mixtral-8x7B-Instruct-v0.1',
      'meta-llama/Llama-2-70b-hf',
      readme.data.model_id,
    ]) {
      const hw = await v1.endpoints.listHardware({ model });
      expect(hw.data.length, model).toBeGreaterThan(0);
      for (const h of hw.data) expect(h.availability?.status, `${model} on ${h.id}`).toBe('available');
    }
    const notRunnable = await refusal(v1.endpoints.listHardware({ model: plain.data.model_id }));
    expect(notRunnable).toBeInstanceOf(Together.BadRequestError);
    expect(notRunnable.error.error).toMatchObject({ code: 'model_not_available', param: 'model' });
  });

  test('endpoints.create (the SDK example) is refused; endpoints.list/retrieve/update/delete and endpoints.adapters.add/list/remove on a running one', async () => {
    const created = await refusal(
      v1.endpoints.create({ autoscaling: { max_replicas: 5, min_replicas: 2 }, hardware: '1x_nvidia_a100_80gb_sxm', model: 'deepseek-ai/DeepSeek-R1' }),
    );
    expect(created).toBeInstanceOf(Together.PermissionDeniedError);
    expect(created.error.error.code).toBe('endpoints_v1_create_access_disabled');

    const row = await insertV1Endpoint(t, projectId); // v1 endpoints cannot be created any more: one already running
    const listed = (await v1.endpoints.list({ type: 'dedicated', usage_type: 'on-demand', mine: true })).data.find((e) => e.id === row.id)!;
    expect(listed.name).toMatch(/^default\/Meta-Llama-3\.1-8B-Instruct-[0-9a-f]{6}$/);
    const ep = await v1.endpoints.retrieve(row.id);
    expect(ep).toMatchObject({ id: row.id, name: listed.name, model: MODEL, state: 'STARTED', type: 'dedicated', owner: 'default' });
    const updated = await v1.endpoints.update(ep.id, {
      display_name: 'Support bot (Llama 3.1 8B)',
      autoscaling: { min_replicas: 1, max_replicas: 4 },
      inactive_timeout: 0,
    });
    expect(updated).toMatchObject({ display_name: 'Support bot (Llama 3.1 8B)', autoscaling: { min_replicas: 1, max_replicas: 4 } });

    const lora = await v1.models.upload({
      model_name: 'username/support-adapter-abc123',
      model_source: 'acc-org/support-lora',
      model_type: 'adapter',
      base_model: 'meta-llama/Meta-Llama-3.1-8B-Instruct-Reference',
    });
    for (let i = 0; i < 10 && (await v1.models.uploads.status(lora.data.job_id)).status !== 'Complete'; i++) await t.advance(60_000);
    const modelId = `${ep.name}:username/support-adapter-abc123`; // the SDK's form: '<endpoint name>:<adapter model name>'
    expect(await v1.endpoints.adapters.add(ep.id, { model_id: modelId })).toEqual({ model_id: modelId });
    expect(await v1.endpoints.adapters.list(ep.id)).toEqual({
      object: 'list',
      data: [{ model_id: modelId, adapter_name: 'username/support-adapter-abc123', endpoint_name: ep.name }],
    });
    expect(await v1.endpoints.adapters.remove(ep.id, { model_id: modelId })).toEqual({ model_id: modelId, deleted: true });
    expect((await v1.endpoints.adapters.list(ep.id)).data).toEqual([]);

    expect((await v1.endpoints.update(ep.id, { state: 'STOPPED' })).state).toBe('STOPPED');
    await v1.endpoints.delete(ep.id);
    expect(await refusal(v1.endpoints.retrieve(ep.id))).toBeInstanceOf(Together.NotFoundError);
  });
});
