// Engine routes: which engine serves a model, per capability, from ENGINES / ENGINES_FILE; local by default.
import { expect, test } from 'vitest';
import { StartError } from '../server/core/errors.ts';
import { loadEngineRoutes } from '../server/engines/routes.ts';
import { countTokens, keepLastTokens, tokenize, truncateTokens } from '../server/engines/tokens.ts';

test('without configuration every model runs on the local engines', () => {
  expect(loadEngineRoutes({}).routeFor('chat', 'meta-llama/Llama-3.3-70B-Instruct-Turbo')).toEqual({ engine: 'local' });
});

test('the first route whose glob and capabilities match wins; keys may come from another variable', () => {
  const routes = loadEngineRoutes({
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
  const bad = [
    { ENGINES: '{not json' },
    { ENGINES: '{"routes": {}}' },
    { ENGINES: '{"routes": [{"models": "x", "engine": "local"}]}' },
    { ENGINES: '{"routes": [{"models": ["x"], "engine": "remote"}]}' },
    { ENGINES: '{"routes": [{"models": ["x"], "engine": "upstream", "url": "ftp://x"}]}' },
    { ENGINES: '{"routes": [{"models": ["x"], "engine": "upstream", "url": "http://x", "timeoutMs": 0}]}' },
    { ENGINES: '{"routes": [{"models": ["x"], "capabilities": ["video"], "engine": "local"}]}' },
    { ENGINES_FILE: '/nonexistent/engines.json' },
  ];
  for (const env of bad) expect(() => loadEngineRoutes(env), JSON.stringify(env)).toThrow(StartError);
});

test('tokens are counted with a real tokenizer', () => {
  expect(countTokens('')).toBe(0);
  expect(countTokens('Hello world')).toBe(2);
  expect(tokenize('Hello world')).toEqual(['Hello', ' world']);
  expect(truncateTokens('one two three four', 2)).toEqual({ text: 'one two', cut: true });
  expect(truncateTokens('one two', 5)).toEqual({ text: 'one two', cut: false });
  expect(keepLastTokens('one two three four', 2)).toBe(' three four');
});
