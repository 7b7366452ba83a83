// Log redaction: the Authorization header and any field named like a secret never reach a log line, at any depth.
// Failures: an answer the server gives on purpose (a 503 while an endpoint is not ready) is a warning without a stack;
// only an unexpected exception is an error, logged with its stack.
import { Writable } from 'node:stream';
import express from 'express';
import request from 'supertest';
import { describe, expect, test } from 'vitest';
import { apiError } from '../server/core/errors.ts';
import { createLogger, REDACTED, redact } from '../server/core/log.ts';
import { errorHandler } from '../server/http/error-handler.ts';

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

describe('failures are logged by what they are', () => {
  const capture = () => {
    const lines: Record<string, unknown>[] = [];
    const log = createLogger(
      'info',
      new Writable({
        write: (c, _e, done) => {
          lines.push(JSON.parse(String(c)));
          done();
        },
      }),
    );
    const app = express();
    app.get('/not-ready', () => {
      throw apiError(503, 'endpoint_not_ready', "Endpoint 'default/x' cannot serve requests now: it is stopped.", 'model');
    });
    app.get('/bug', () => {
      throw new TypeError('cannot read properties of undefined');
    });
    app.use(errorHandler(log));
    return { lines, http: request(app) };
  };

  test('a routine 503 the server answers on purpose (endpoint_not_ready) is a warning without a stack', async () => {
    const { lines, http } = capture();
    expect((await http.get('/not-ready')).status).toBe(503);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ level: 40, status: 503, code: 'endpoint_not_ready' });
    expect(JSON.stringify(lines[0])).not.toMatch(/stack|at .*\.ts/);
  });

  test('an unexpected exception is an error, with its stack', async () => {
    const { lines, http } = capture();
    expect((await http.get('/bug')).status).toBe(500);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ level: 50, err: { type: 'TypeError', stack: expect.stringContaining('TypeError') } });
  });
});
