// The console (`/console`): a page for people, outside the API, that reads and steers the platform through the
// control operations in the browser. This serves its files only, every one from this server (the plot library from
// node_modules); the page itself holds no data, and the control key it asks for opens the operations it calls.
// Switched off with the control plane (CONTROL_API=off): then none of it exists.
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import express from 'express';
import { root } from '../core/paths.ts';

const uplot = dirname(createRequire(import.meta.url).resolve('uplot'));
const assets: Record<string, [string, string]> = {
  'console.js': [join(root, 'server/console/console.js'), 'text/javascript'],
  'console.css': [join(root, 'server/console/console.css'), 'text/css'],
  'uplot.js': [join(uplot, 'uPlot.esm.js'), 'text/javascript'],
  'uplot.css': [join(uplot, 'uPlot.min.css'), 'text/css'],
};
// Scripts and styles from this server only; media from the page's own memory (videos are fetched with the key).
const CSP = "default-src 'self'; media-src 'self' blob:; img-src 'self' data: blob:; style-src 'self'; frame-ancestors 'none'";

export function consolePages(enabled: () => boolean): express.Router {
  const router = express.Router();
  router.use((_req, res, next) => {
    if (!enabled()) return next('router');
    res.set({ 'content-security-policy': CSP, 'referrer-policy': 'no-referrer', 'x-content-type-options': 'nosniff', 'cache-control': 'no-store' });
    next();
  });
  router.get('/', (_req, res) => res.sendFile(join(root, 'server/console/index.html')));
  router.get('/assets/:name', (req, res, next) => {
    const asset = assets[req.params.name];
    if (!asset) return next('router');
    res.type(asset[1]).sendFile(asset[0]);
  });
  return router;
}
