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
//
// The routes' shape is checked at start with the rest of the configuration (core/config.ts), so a route that cannot
// be used stops the start before anything is created; `apiKeyEnv` is resolved there too.
import { CAPABILITIES, type Capability, type EnginesConfig } from '../core/config.ts';

export { CAPABILITIES, type Capability };

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

export function loadEngineRoutes(config: EnginesConfig | undefined): EngineRoutes {
  const entries: RouteEntry[] = (config?.routes ?? []).map((r) => ({
    models: r.models.map(glob),
    capabilities: r.capabilities,
    route:
      r.engine === 'local'
        ? { engine: 'local' }
        : { engine: 'upstream', url: r.url.replace(/\/+$/, ''), apiKey: r.apiKey, model: r.model, timeoutMs: r.timeoutMs },
  }));
  return {
    routeFor(capability, model) {
      const hit = entries.find((e) => (!e.capabilities || e.capabilities.includes(capability)) && e.models.some((m) => m.test(model)));
      return hit?.route ?? { engine: 'local' };
    },
  };
}
