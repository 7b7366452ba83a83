// Every JSON body a handler answers is checked against the contract before it is sent: a drift is a 500 with the
// generic message, the cause logged under the request id, never a body the contract does not promise.

import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { specPath } from '../server/core/paths.ts';
import { responseValidator } from '../server/http/responses.ts';
import { expectError } from './support/expect.ts';
import { startTestPlatform, type TestPlatform } from './support/platform.ts';

const check = responseValidator(JSON.parse(readFileSync(specPath, 'utf8')));
const identity = { api_key_id: 'k', project_id: 'p', project_name: 'n', project_slug: 's', organization_id: 'o', organization_name: 'on', user_id: 'k' };

test('a body of the documented shape passes; a missing, extra or mistyped field does not; an undocumented status does not', () => {
  expect(() => check('whoami', 200, identity)).not.toThrow();
  const { project_slug: _gone, ...missing } = identity;
  expect(() => check('whoami', 200, missing)).toThrow(/project_slug/);
  expect(() => check('whoami', 200, { ...identity, extra: 1 })).toThrow(/additional/);
  expect(() => check('whoami', 200, { ...identity, api_key_id: 7 })).toThrow(/string/);
  expect(() => check('whoami', 201, identity)).toThrow(/does not document/);
  expect(() => check('listHardware', 200, { object: 'list', data: [] })).not.toThrow();
});

let t: TestPlatform;
beforeAll(async () => {
  t = await startTestPlatform();
});
afterAll(() => t?.close());

test('a handler whose answer drifts from the contract answers 500, and the cause is logged', async () => {
  const handlers = t.services.served.handlers;
  const original = handlers.whoami;
  handlers.whoami = (async () => ({ api_key_id: 'only this' })) as never;
  try {
    const res = await t.caller.http.get('/v1/whoami');
    expectError(res, 500, { code: 'internal_error' });
    expect(t.logs.some((l) => l.includes(res.headers['x-request-id']) && l.includes('does not match the spec'))).toBe(true);
  } finally {
    handlers.whoami = original;
  }
});
