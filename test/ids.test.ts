// Resource ids (server/core/ids.ts): `<prefix>_` and 26 lower-case Crockford base32 characters, the creation time
// first, so id order is creation order; lists and their cursors rely on it, also for ids made in one millisecond.
import { afterAll, beforeAll, expect, test } from 'vitest';
import { idMaker } from '../server/core/ids.ts';
import { startTestPlatform, type TestPlatform } from './support/platform.ts';

const ALPHABET = '0123456789abcdefghjkmnpqrstvwxyz';
/** The time part as ids have always written it: 10 base32 digits of the milliseconds, most significant first. */
const timePart = (ms: number) => Array.from({ length: 10 }, (_, i) => ALPHABET[Math.floor(ms / 32 ** (9 - i)) % 32]).join('');

test('the form is unchanged: prefix, then the creation time (10 characters), then 16 more, all lower-case Crockford base32', () => {
  // A maker of its own: the process's (newId, the same code) has made ids at other times already.
  const newId = idMaker();
  const ms = Date.now();
  const id = newId('ep', ms);
  expect(id).toMatch(/^ep_[0-9a-hjkmnp-tv-z]{26}$/);
  expect(id.slice(3, 13)).toBe(timePart(ms));
});

test('ids made in one millisecond come out in creation order', () => {
  const newId = idMaker();
  const ms = Date.now();
  for (let round = 0; round < 20; round++) {
    const made = Array.from({ length: 5 }, () => newId('x', ms + round));
    expect([...made].sort()).toEqual(made);
    expect(new Set(made).size).toBe(5);
  }
});

test('an id made while the clock stands still or steps back still sorts after the ones before it', () => {
  const newId = idMaker();
  const ms = Date.now();
  const first = newId('x', ms);
  const back = newId('x', ms - 5_000);
  expect(back > first).toBe(true);
});

let t: TestPlatform;
beforeAll(async () => {
  t = await startTestPlatform();
});
afterAll(() => t?.close());

test('five resources created in one millisecond are listed, and paged, in creation order', async () => {
  const c = await t.newCaller();
  const pid = c.identity.projectId;
  const names = ['e1', 'e2', 'e3', 'e4', 'e5'];
  // The test clock does not move between the creates: every id carries the same millisecond.
  for (const name of names) await c.api.POST('/v2/projects/{projectId}/endpoints', { params: { path: { projectId: pid } }, body: { name } });
  const listed: string[] = [];
  let cursor: string | undefined;
  do {
    const page = await c.api.GET('/v2/projects/{projectId}/endpoints', { params: { path: { projectId: pid }, query: { limit: 2, after: cursor } } });
    listed.push(...page.data!.data.map((e) => e.name.split('/')[1]!));
    cursor = page.data!.next_cursor || undefined;
  } while (cursor);
  expect(listed).toEqual(names);
});
