import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { revokeApiKey } from '../server/accounts.ts';
import { expectError } from './support/expect.ts';
import { startTestPlatform, type TestPlatform } from './support/platform.ts';

let t: TestPlatform;
beforeAll(async () => {
  t = await startTestPlatform();
});
afterAll(() => t?.close());

describe('GET /v1/whoami', () => {
  test('reports the six fields of the calling key, and user_id: the key itself, the principal that authenticated', async () => {
    const { data, response } = await t.api.GET('/v1/whoami');
    expect(response.status).toBe(200);
    expect(data).toEqual({
      api_key_id: t.caller.identity.apiKeyId,
      project_id: t.caller.identity.projectId,
      project_name: 'Default Project',
      project_slug: 'default',
      organization_id: t.caller.identity.organizationId,
      organization_name: 'Default Organization',
      user_id: t.caller.identity.apiKeyId,
    });
    expect(response.headers.get('x-request-id')).toBeTruthy();
  });

  test('another project key reports its own project', async () => {
    const { data } = await t.other.api.GET('/v1/whoami');
    expect(data!.project_id).toBe(t.other.identity.projectId);
    expect(data!.project_id).not.toBe(t.caller.identity.projectId);
    expect(data!.project_slug).toBe('other-project');
    expect(data!.user_id).toBe(t.other.identity.apiKeyId);
  });

  test('an unknown query parameter is refused with its name', async () => {
    const res = await t.http.get('/v1/whoami?verbose=1').set('Authorization', `Bearer ${t.caller.key}`);
    expectError(res, 400, { code: 'unknown_parameter', param: 'verbose' });
  });

  test('a revoked key answers 401 at once', async () => {
    const c = await t.newCaller(t.caller.identity.projectId);
    expect((await c.api.GET('/v1/whoami')).response.status).toBe(200);
    const revoked = await revokeApiKey(t.services.db, t.clock, c.identity.apiKeyId);
    t.services.keys.evict(revoked.hash);
    const { error, response } = await c.api.GET('/v1/whoami');
    expect(response.status).toBe(401);
    expect(error!.error.code).toBe('invalid_api_key');
  });

  test('a database failure answers a generic 500 and logs the cause under the request id', async () => {
    const fresh = await t.newCaller(t.caller.identity.projectId);
    const restore = t.breakDatabase();
    try {
      const res = await t.http.get('/v1/whoami').set('Authorization', `Bearer ${fresh.key}`);
      expectError(res, 500, { code: 'internal_error', type: 'server_error' });
      expect(res.body.error.message).not.toMatch(/database|injected/i);
      const requestId = res.headers['x-request-id'];
      expect(t.logs.some((l) => l.includes(requestId) && l.includes('injected by the test'))).toBe(true);
    } finally {
      restore();
    }
  });
});
