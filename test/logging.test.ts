// Log redaction: the Authorization header and any field named like a secret never reach a log line, at any depth.
import { Writable } from 'node:stream';
import { expect, test } from 'vitest';
import { createLogger, REDACTED, redact } from '../server/core/log.ts';

test('secret-like fields are redacted at any depth, other fields kept', () => {
  expect(
    redact({
      headers: { authorization: 'Bearer tpk_x', accept: 'application/json' },
      body: { name: 'db', value: 's3cr3t', nested: [{ hf_token: 'hf_x', api_key: 'k', password: 'p', model: 'm' }] },
      client_secret: 'c',
    }),
  ).toEqual({
    headers: { authorization: REDACTED, accept: 'application/json' },
    body: { name: 'db', value: REDACTED, nested: [{ hf_token: REDACTED, api_key: REDACTED, password: REDACTED, model: 'm' }] },
    client_secret: REDACTED,
  });
});

test('the logger applies it to every line', () => {
  const lines: string[] = [];
  const log = createLogger(
    'info',
    new Writable({
      write: (c, _e, done) => {
        lines.push(String(c));
        done();
      },
    }),
  );
  log.info({ req: { headers: { Authorization: 'Bearer tpk_live' } }, secret: { value: 'hunter2' } }, 'hello');
  expect(lines.join('')).not.toMatch(/tpk_live|hunter2/);
  expect(JSON.parse(lines[0])).toMatchObject({ msg: 'hello', req: { headers: { Authorization: REDACTED } }, secret: REDACTED });
});
