// The typed client as a user imports it: by the package's own name, through package.json `exports`.

import { createPlatformClient, type ErrorEnvelope } from '@inference-platform/client';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { startTestPlatform, type TestPlatform } from './support/platform.ts';

let t: TestPlatform;
beforeAll(async () => {
  t = await startTestPlatform();
});
afterAll(() => t?.close());

test('calls are typed by the contract and errors come back as the envelope', async () => {
  const api = createPlatformClient({ baseUrl: `${t.url}/`, apiKey: t.caller.key });
  const { data } = await api.GET('/v1/whoami');
  expect(data?.project_slug).toBe('default');

  const anonymous = createPlatformClient({ baseUrl: t.url });
  const { error, response } = await anonymous.GET('/v1/whoami');
  expect(response.status).toBe(401);
  const envelope: ErrorEnvelope | undefined = error;
  expect(envelope?.error.code).toBe('missing_api_key');
});

test('headers given as a Headers instance or as a list of pairs are sent as given, beside the key', async () => {
  for (const headers of [new Headers({ 'x-request-id': 'from-headers-instance' }), [['x-request-id', 'from-pairs']] as [string, string][]]) {
    const api = createPlatformClient({ baseUrl: t.url, apiKey: t.caller.key, headers });
    const { data, response } = await api.GET('/v1/whoami');
    const expected = headers instanceof Headers ? 'from-headers-instance' : 'from-pairs';
    // The server echoes a well-formed x-request-id; the key still authenticates the call.
    expect(response.headers.get('x-request-id')).toBe(expected);
    expect(data?.project_slug).toBe('default');
  }
});

test('a header given to the client replaces the Authorization the key would set; null removes it', async () => {
  const other = createPlatformClient({ baseUrl: t.url, apiKey: 'tpk_not_used', headers: new Headers({ Authorization: `Bearer ${t.other.key}` }) });
  expect((await other.GET('/v1/whoami')).data?.project_id).toBe(t.other.identity.projectId);
  const none = createPlatformClient({ baseUrl: t.url, apiKey: t.caller.key, headers: { Authorization: null } });
  expect((await none.GET('/v1/whoami')).error?.error.code).toBe('missing_api_key');
});
