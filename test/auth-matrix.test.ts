// For every operation in the spec: no key and a bad key answer 401 with the envelope; and every operation that
// takes an id (in its path, or as a required `id`/`*_id` query parameter or body field: `request_id`, `ft_id`)
// answers 404 for another project's resource, exactly as for an absent one (each module's fixtures say how to make,
// as another project, what the operation addresses), unless the id names something of the platform's that every
// caller reads alike (the fixture says `shared`): then another project gets the owner's answer.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { operations } from '../generated/operations.ts';
import { modules } from '../server/modules/index.ts';
import type { FixtureKit, FixtureRequest } from '../server/modules/types.ts';
import { expectError } from './support/expect.ts';
import { controlled, deref, fillPath, jsonBodySchema, keyless, operationIds, operationSpec, pathParamNames, withMultipart } from './support/operations.ts';
import { startTestPlatform, type TestPlatform } from './support/platform.ts';
import { sample } from './support/schema-sample.ts';

let t: TestPlatform;
const crossProject: Record<string, (kit: FixtureKit) => Promise<FixtureRequest>> = {};
beforeAll(async () => {
  t = await startTestPlatform();
  for (const m of modules) Object.assign(crossProject, (await m.fixtures?.())?.crossProject ?? {});
});

const isId = (name: string) => /(^|_)id$/.test(name);
/** Whether the operation addresses a resource by id: in its path, or in a required query parameter or body field. */
function takesId(id: (typeof operationIds)[number]): boolean {
  if (pathParamNames(id).length > 0) return true;
  const query = (operationSpec(id).parameters ?? []).map(deref).filter((p: any) => p.in === 'query' && p.required);
  if (query.some((p: any) => isId(p.name))) return true;
  return (deref(jsonBodySchema(id))?.required ?? []).some(isId);
}
afterAll(() => t?.close());

const send = (id: (typeof operationIds)[number], path: string, headers: Record<string, string>, req?: { query?: any; body?: any }) => {
  const op = operations[id];
  let r = t.http[op.method](path).set(headers);
  if (req?.query) r = r.query(req.query);
  if (req?.body !== undefined) r = r.send(req.body);
  return r;
};

describe.each(operationIds.filter((id) => !keyless(id)))('%s', (id) => {
  const params = Object.fromEntries(pathParamNames(id).map((n) => [n, 'x']));

  test('without a key: 401 missing_api_key', async () => {
    expectError(await send(id, fillPath(id, params), {}), 401, { code: 'missing_api_key', param: null });
  });

  test('with a bad key: 401 invalid_api_key', async () => {
    expectError(await send(id, fillPath(id, params), { Authorization: 'Bearer tpk_not-a-real-key' }), 401, { code: 'invalid_api_key', param: null });
  });

  // The control plane's ids (fault rules) belong to no project: its key sees them all.
  test.runIf(takesId(id) && !controlled(id))("with another project's id: 404 as if absent", async () => {
    const fixture = crossProject[id];
    expect(fixture, `server/modules/${operations[id].module}/fixtures.ts needs crossProject.${id}`).toBeDefined();
    const req = await fixture!(t.fixtureKit(t.other));
    const path = fillPath(id, req.params);
    // The stranger first (so a delete cannot make the id absent for real), then the owner, proving the id exists.
    const res = await send(id, path, { Authorization: `Bearer ${t.caller.key}` }, req);
    const owner = await send(id, path, { Authorization: `Bearer ${t.other.key}` }, req);
    expect(owner.status, `the owner can use ${id}: ${JSON.stringify(owner.body)}`).toBeLessThan(400);
    if (req.shared) expect([res.status, res.body]).toEqual([owner.status, owner.body]);
    else expectError(res, 404, { type: 'not_found_error' });
  });
});

// Operations a signed URL authorises (the signed upload's PUT): no key is asked for and none is enough; without the
// URL's signature, 403 before the body is read. The signature, not a key, names the file, so there is no other
// project's id to try (test/files-signed-upload.test.ts covers another file's id under a signature).
describe.each(operationIds.filter(keyless))('%s (signed URL)', (id) => {
  const params = Object.fromEntries(pathParamNames(id).map((n) => [n, 'x']));
  const req = (headers: Record<string, string>) => withMultipart(id, send(id, fillPath(id, params), headers).query({ expires: 1 }), sample);

  test('without a signature, with no key or a valid key: 403 invalid_signature', async () => {
    expectError(await req({}), 403, { code: 'invalid_signature', param: 'signature' });
    expectError(await req({ Authorization: `Bearer ${t.caller.key}` }), 403, { code: 'invalid_signature', param: 'signature' });
  });
});
