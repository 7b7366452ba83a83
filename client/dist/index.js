// The typed client: openapi-fetch over the generated `paths`. Import it as `@inference-platform/client`.
// `npm run generate` copies generated/api.d.ts to ./api.d.ts and builds dist/ from here.
//
//   const api = createPlatformClient({ baseUrl: 'http://127.0.0.1:8080', apiKey });
//   const { data, error } = await api.GET('/v1/whoami');   // error is typed as the envelope: error.error.code
import createClient from 'openapi-fetch';
export function createPlatformClient({ baseUrl, apiKey, headers, ...rest }) {
    return createClient({
        baseUrl: baseUrl.replace(/\/+$/, ''),
        headers: { ...(apiKey ? { Authorization: `Bearer ${apiKey}` } : {}), ...headers },
        ...rest,
    });
}
