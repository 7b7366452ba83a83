// The code interpreter's sessions as the database keeps them, through the official client: a session carried on
// after a restart and by another process, and its expiry. The sandbox itself is code-interpreter-sandbox.test.ts's.
import Together from 'together-ai';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { type CodeInterpreterPlatform, startCodeInterpreterPlatform } from './support/code-interpreter.ts';
import { usingPostgres } from './support/database.ts';
import { expectError } from './support/expect.ts';
import type { TestPlatform } from './support/platform.ts';
import { startServerProcess } from './support/server-process.ts';

let p: CodeInterpreterPlatform;
let t: TestPlatform;
const run: CodeInterpreterPlatform['run'] = (...args) => p.run(...args);

beforeAll(async () => {
  p = await startCodeInterpreterPlatform();
  t = p.t;
});
afterAll(() => t?.close());

test('a session goes on after its interpreter is gone (a restart): rebuilt from its recorded cells', async () => {
  const { session_id } = await run('items = [1]');
  await t.restart();
  p.together = new Together({ apiKey: t.caller.key, baseURL: `${t.url}/v1`, maxRetries: 0 });
  expect((await run('items.append(2)\nitems', session_id)).outputs).toEqual([{ type: 'execute_result', data: { 'text/plain': '[1, 2]' } }]);
});

// Two real server processes on one PostgreSQL database (SQLite serves one process).
test.runIf(usingPostgres)('a session started through one server process goes on through another, and back', async () => {
  const b = await startServerProcess({ DATABASE_URL: t.config.databaseUrl, CODE_INTERPRETER_TIMEOUT_MS: '10000', RUNNER_ENABLED: 'false' });
  try {
    const { session_id } = await run('items = [1]');
    const other = new Together({ apiKey: t.caller.key, baseURL: `${b.url}/v1`, maxRetries: 0 });
    const there = await other.codeInterpreter.execute({ code: 'items.append(2)\nitems', language: 'python', session_id });
    expect(there.data!.outputs).toEqual([{ type: 'execute_result', data: { 'text/plain': '[1, 2]' } }]);
    // The first process's interpreter is behind: it runs the cell it missed first.
    expect((await run('items.append(3)\nitems', session_id)).outputs).toEqual([{ type: 'execute_result', data: { 'text/plain': '[1, 2, 3]' } }]);
  } finally {
    await b.stop();
  }
});

test('a session expires 60 minutes after it started: gone from the list, and execute answers 404 session_expired', async () => {
  const { session_id } = await run('1');
  t.clock.advance(3_600_000);
  const { data } = await p.together.codeInterpreter.sessions.list();
  expect(data!.sessions.map((s) => s.id)).not.toContain(session_id);
  expectError(await t.caller.http.post('/v1/tci/execute').send({ code: '1', language: 'python', session_id }), 404, {
    code: 'session_expired',
    param: 'session_id',
  });
});
