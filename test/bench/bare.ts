// The baseline: a bare Express 5 app answering each scenario's route with the whole stack's own answer, from memory
// (no auth, no validation, no database). JSON request bodies are parsed, as a real handler would.
import { readFileSync } from 'node:fs';
import express from 'express';

const answers: { method: string; path: string; body: unknown }[] = JSON.parse(readFileSync(process.env.BARE_ANSWERS!, 'utf8'));
const app = express();
app.use(express.json({ limit: '10mb' }));
for (const a of answers) app[a.method.toLowerCase() as 'get' | 'post'](a.path, (_req, res) => void res.json(a.body));
const server = app.listen(Number(process.env.PORT), '127.0.0.1', () => console.log(`listening on http://127.0.0.1:${process.env.PORT}`));
process.once('SIGTERM', () => server.close(() => process.exit(0)));
