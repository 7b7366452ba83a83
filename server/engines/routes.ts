// Which engine serves a model, per capability, from declarative configuration: env ENGINES (JSON) or ENGINES_FILE
// (a path to the same JSON). Without either, every model runs on the deterministic local engines, which say in
// their output that they are local. A route sends matching models to an upstream OpenAI-compatible server (vLLM,
// llama.cpp, Ollama, another instance of this server) by URL and key:
//
//   { "routes": [ { "models": ["meta-llama/*"], "capabilities": ["chat"], "engine": "upstream",
//                   "url": "http://127.0.0.1:11434/v1", "apiKeyEnv": "OLLAMA_API_KEY", "model": "llama3.1:8b",
//                   "timeoutMs": 60000 } ] }
//
// The first route whose `models` glob (`*` matches any run of characters) and `capabilities` match wins.
import { readFileSync } from 'node:fs';
import { StartError } from '../core/errors.ts';

export const CAPABILITIES = ['chat', 'embeddings', 'rerank', 'transcription'] as const;
export type Capability = (typeof CAPABILITIES)[number];

export interface UpstreamRoute {
  engine: 'upstream';
  /** Base URL of the OpenAI-compatible API, e.g. `http://127.0.0.1:8000/v1`. */
  url: string;
  apiKey?: string;
  /** The upstream's name for the model (default: the same id). */
  model?: string;
  /** How long to wait for the upstream's answer (default UPSTREAM_TIMEOUT_MS of upstream.ts, 120 s); then 504. */
  timeoutMs?: number;
}

export type Route = { engine: 'local' } | UpstreamRoute;

interface RouteEntry {
  models: RegExp[];
  capabilities?: Capability[];
  route: Route;
}

export interface EngineRoutes {
  routeFor(capability: Capability, model: string): Route;
}

const glob = (pattern: string) =>
  new RegExp(
    `^${pattern
      .split('*')
      .map((p) => p.replace(/[.+?^${}()|[\]\\]/g, '\\$&'))
      .join('.*')}$`,
  );

export function loadEngineRoutes(env: NodeJS.ProcessEnv = process.env): EngineRoutes {
  let raw: string | undefined = env.ENGINES;
  const source = env.ENGINES_FILE ? `ENGINES_FILE=${env.ENGINES_FILE}` : 'ENGINES';
  if (env.ENGINES_FILE) {
    try {
      raw = readFileSync(env.ENGINES_FILE, 'utf8');
    } catch (err) {
      throw new StartError(`${source} cannot be read (${(err as NodeJS.ErrnoException).code}). Point ENGINES_FILE at a JSON file of engine routes.`, err);
    }
  }
  const entries: RouteEntry[] = [];
  if (raw?.trim()) {
    let parsed: { routes?: unknown };
    try {
      parsed = JSON.parse(raw);
    } catch (err) {
      throw new StartError(`${source} is not valid JSON: ${(err as Error).message}.`, err);
    }
    if (!Array.isArray(parsed.routes)) throw new StartError(`${source} must be {"routes": [...]}.`);
    // biome-ignore lint/suspicious/noExplicitAny: a configured route, checked field by field below.
    parsed.routes.forEach((r: any, i: number) => {
      const where = `${source}: routes[${i}]`;
      if (!Array.isArray(r?.models) || !r.models.every((m: unknown) => typeof m === 'string'))
        throw new StartError(`${where}.models must be a list of model id globs.`);
      if (r.capabilities !== undefined && (!Array.isArray(r.capabilities) || r.capabilities.some((c: string) => !CAPABILITIES.includes(c as Capability)))) {
        throw new StartError(`${where}.capabilities must list some of ${CAPABILITIES.join(', ')}.`);
      }
      let route: Route;
      if (r.engine === 'local') route = { engine: 'local' };
      else if (r.engine === 'upstream') {
        if (typeof r.url !== 'string' || !/^https?:\/\//.test(r.url))
          throw new StartError(`${where}.url must be the upstream's http(s) base URL, e.g. http://127.0.0.1:8000/v1.`);
        const apiKey = typeof r.apiKeyEnv === 'string' ? env[r.apiKeyEnv] : typeof r.apiKey === 'string' ? r.apiKey : undefined;
        if (r.timeoutMs !== undefined && !(Number.isInteger(r.timeoutMs) && r.timeoutMs > 0))
          throw new StartError(`${where}.timeoutMs must be a positive whole number of milliseconds.`);
        route = {
          engine: 'upstream',
          url: r.url.replace(/\/+$/, ''),
          apiKey,
          model: typeof r.model === 'string' ? r.model : undefined,
          timeoutMs: r.timeoutMs,
        };
      } else throw new StartError(`${where}.engine must be "local" or "upstream".`);
      entries.push({ models: r.models.map(glob), capabilities: r.capabilities, route });
    });
  }
  return {
    routeFor(capability, model) {
      const hit = entries.find((e) => (!e.capabilities || e.capabilities.includes(capability)) && e.models.some((m) => m.test(model)));
      return hit?.route ?? { engine: 'local' };
    },
  };
}
