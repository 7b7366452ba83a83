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
