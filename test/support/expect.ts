import { expect } from 'vitest';

/** Asserts a supertest response is the error envelope with the given status and fields. */
export function expectError(
  res: { status: number; body: any; headers: Record<string, any> },
  status: number,
  fields: { code?: string | null; param?: string | null; type?: string } = {},
) {
  expect(res.status, JSON.stringify(res.body)).toBe(status);
  expect(res.headers['content-type']).toMatch(/application\/json/);
  expect(Object.keys(res.body)).toEqual(['error']);
  expect(Object.keys(res.body.error).sort()).toEqual(['code', 'message', 'param', 'type']);
  expect(typeof res.body.error.message).toBe('string');
  expect(res.body.error.message.length).toBeGreaterThan(0);
  for (const [k, v] of Object.entries(fields)) expect(res.body.error[k], k).toEqual(v);
}

/** Waits until `check` holds (true) or `timeoutMs` has passed (false): for events of other processes, never as a timing assertion. */
export async function until(check: () => boolean, timeoutMs: number, interval = 20): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) return false;
    await new Promise((r) => setTimeout(r, interval));
  }
  return true;
}

/** The rejection of `p`, which must fail (an official client's error object, to assert on). */
export async function refusal(p: Promise<unknown>): Promise<any> {
  return p.then(
    () => {
      throw new Error('expected the call to be refused');
    },
    (e) => e,
  );
}
