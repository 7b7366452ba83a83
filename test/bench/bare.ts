// The baseline: a bare Express 5 route answering whoami's shape from memory (no auth, no validation, no database).
import express from 'express';

const app = express();
const body = {
  api_key_id: 'key_01jcq5m2v8x7k3n4p5q6r7s8t9',
  project_id: 'proj_01jcq5m2v8x7k3n4p5q6r7s8t9',
  project_name: 'Default Project',
  project_slug: 'default',
  organization_id: 'org_01jcq5m2v8x7k3n4p5q6r7s8t9',
  organization_name: 'Default Organization',
  user_id: 'key_01jcq5m2v8x7k3n4p5q6r7s8t9',
};
app.get('/v1/whoami', (_req, res) => void res.json(body));
const server = app.listen(Number(process.env.PORT), '127.0.0.1', () => console.log(`listening on http://127.0.0.1:${process.env.PORT}`));
process.once('SIGTERM', () => server.close(() => process.exit(0)));
