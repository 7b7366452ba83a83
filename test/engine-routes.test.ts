// Engine routes: which engine serves a model, per capability, from ENGINES / ENGINES_FILE; local by default. Their
// JSON is checked with the rest of the configuration at start (core/config.ts).
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, test } from 'vitest';
import { loadConfig } from '../server/core/config.ts';
import { StartError } from '../server/core/errors.ts';
import { loadEngineRoutes } from '../server/engines/routes.ts';
import { startTestPlatform } from './support/platform.ts';

const routesOf = (env: NodeJS.ProcessEnv) => loadEngineRoutes(loadConfig(env).engines);

import { countTokens, keepLastTokens, tokenize, truncateTokens } from '../server/engines/tokens.ts';

test('without configuration every model runs on the local engines', () => {
  expect(routesOf({}).routeFor('chat', 'meta-llama/Llama-3.3-70B-Instruct-Turbo')).toEqual({ engine: 'local' });
});

test('the first route whose glob and capabilities match wins; keys may come from another variable', () => {
  const routes = routesOf({
    UPSTREAM_KEY: 'k-1',
    ENGINES: JSON.stringify({
      routes: [
        {
          models: ['meta-llama/*'],
          capabilities: ['chat'],
          engine: 'upstream',
          url: 'http://127.0.0.1:9/v1/',
          apiKeyEnv: 'UPSTREAM_KEY',
          model: 'llama3.1:8b',
        },
        { models: ['*'], capabilities: ['embeddings'], engine: 'upstream', url: 'https://emb.example/v1', apiKey: 'k-2' },
      ],
    }),
  });
  expect(routes.routeFor('chat', 'meta-llama/Meta-Llama-3.1-8B-Instruct')).toEqual({
    engine: 'upstream',
    url: 'http://127.0.0.1:9/v1',
    apiKey: 'k-1',
    model: 'llama3.1:8b',
  });
  expect(routes.routeFor('rerank', 'meta-llama/Meta-Llama-3.1-8B-Instruct')).toEqual({ engine: 'local' });
  expect(routes.routeFor('embeddings', 'BAAI/bge-base-en-v1.5')).toEqual({
    engine: 'upstream',
    url: 'https://emb.example/v1',
    apiKey: 'k-2',
    model: undefined,
  });
  expect(routes.routeFor('chat', 'Qwen/Qwen2.5-7B-Instruct')).toEqual({ engine: 'local' });
});

test('a configuration that cannot be used stops the start with one line naming the setting', () => {
  const dir = mkdtempSync(join(tmpdir(), 'engines-'));
  const notJson = join(dir, 'engines.json');
  writeFileSync(notJson, '{"routes": [');
  const valid = join(dir, 'valid.json');
  writeFileSync(valid, '{"routes": []}');
  const bad: [NodeJS.ProcessEnv, RegExp][] = [
    [{ ENGINES: '{not json' }, /^ENGINES is not valid JSON/],
    [{ ENGINES: '{"routes": {}}' }, /^ENGINES is not valid: routes must be a list of routes/],
    [{ ENGINES: '{"routes": [{"models": "x", "engine": "local"}]}' }, /routes\[0\]\.models must be a list of model id globs/],
    [{ ENGINES: '{"routes": [{"models": ["x"], "engine": "remote"}]}' }, /routes\[0\]\.engine must be "local" or "upstream"/],
    [{ ENGINES: '{"routes": [{"models": ["x"], "engine": "upstream", "url": "ftp://x"}]}' }, /routes\[0\]\.url must be the upstream's http\(s\) base URL/],
    [
      { ENGINES: '{"routes": [{"models": ["x"], "engine": "upstream", "url": "http://x", "timeoutMs": 0}]}' },
      /routes\[0\]\.timeoutMs must be a positive whole number/,
    ],
    [{ ENGINES: '{"routes": [{"models": ["x"], "capabilities": ["video"], "engine": "local"}]}' }, /routes\[0\]\.capabilities\[0\]/],
    // A misspelt field is refused rather than ignored.
    [{ ENGINES: '{"routes": [{"models": ["x"], "engine": "upstream", "url": "http://x", "timeout": 5}]}' }, /routes\[0\].*"timeout"/],
    // The key's variable must be set.
    [
      { ENGINES: '{"routes": [{"models": ["x"], "engine": "upstream", "url": "http://x", "apiKeyEnv": "NO_SUCH_KEY_VAR"}]}' },
      /apiKeyEnv names NO_SUCH_KEY_VAR, which is not set/,
    ],
    [{ ENGINES_FILE: '/nonexistent/engines.json' }, /^ENGINES_FILE=\/nonexistent\/engines\.json cannot be read \(ENOENT\)/],
    [{ ENGINES_FILE: notJson }, /^ENGINES_FILE=.* is not valid JSON/],
    [{ ENGINES: '{"routes": []}', ENGINES_FILE: valid }, /^ENGINES and ENGINES_FILE are both set/],
  ];
  try {
    for (const [env, message] of bad) {
      let thrown: unknown;
      try {
        routesOf(env);
      } catch (err) {
        thrown = err;
      }
      expect(thrown, JSON.stringify(env)).toBeInstanceOf(StartError);
      expect((thrown as Error).message, JSON.stringify(env)).toMatch(message);
      expect((thrown as Error).message.split('\n'), JSON.stringify(env)).toHaveLength(1);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("a route's apiKeyEnv is read from the environment the server starts with (not only ENGINES itself)", async () => {
  const { engines } = loadConfig({
    ROUTED_KEY: 'from-the-environment',
    ENGINES: JSON.stringify({ routes: [{ models: ['meta-llama/*'], engine: 'upstream', url: 'http://127.0.0.1:9/v1', apiKeyEnv: 'ROUTED_KEY' }] }),
  });
  const t = await startTestPlatform({ config: { engines } });
  try {
    expect(t.services.engines.routeFor('chat', 'meta-llama/Meta-Llama-3.1-8B-Instruct')).toMatchObject({ engine: 'upstream', apiKey: 'from-the-environment' });
  } finally {
    await t.close();
  }
});

test('tokens are counted with a real tokenizer', () => {
  expect(countTokens('')).toBe(0);
  expect(countTokens('Hello world')).toBe(2);
  expect(tokenize('Hello world')).toEqual(['Hello', ' world']);
  expect(truncateTokens('one two three four', 2)).toEqual({ text: 'one two', cut: true });
  expect(truncateTokens('one two', 5)).toEqual({ text: 'one two', cut: false });
  expect(keepLastTokens('one two three four', 2)).toBe(' three four');
});
