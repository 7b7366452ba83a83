// Pages for people, outside the API, that read the platform in the browser through its own operations: the console
// (`/console`: the control operations, with the control key; switched off with the control plane, CONTROL_API=off)
// and the monitoring dashboard (`/dashboard`: a project's v2 endpoints, with the project's API key). This serves
// their files only, every one from this server (the plot library from node_modules); a page holds no data, and the
// key it asks for opens the operations it calls.
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import express from 'express';
import { root } from '../core/paths.ts';

const uplot = dirname(createRequire(import.meta.url).resolve('uplot'));
const shared: Record<string, [string, string]> = {
  'console.css': [join(root, 'server/console/console.css'), 'text/css'],
  'uplot.js': [join(uplot, 'uPlot.esm.js'), 'text/javascript'],
  'uplot.css': [join(uplot, 'uPlot.min.css'), 'text/css'],
};
// Scripts and styles from this server only; media from the page's own memory (videos are fetched with the key).
const CSP = "default-src 'self'; media-src 'self' blob:; img-src 'self' data: blob:; style-src 'self'; frame-ancestors 'none'";

function pages(folder: string, script: string, enabled: () => boolean): express.Router {
  const assets = { ...shared, [script]: [join(root, folder, script), 'text/javascript'] as [string, string] };
  const router = express.Router();
  router.use((_req, res, next) => {
    if (!enabled()) return next('router');
    res.set({ 'content-security-policy': CSP, 'referrer-policy': 'no-referrer', 'x-content-type-options': 'nosniff', 'cache-control': 'no-store' });
    next();
  });
  router.get('/', (_req, res) => res.sendFile(join(root, folder, 'index.html')));
  router.get('/assets/:name', (req, res, next) => {
    const asset = assets[req.params.name];
    if (!asset) return next('router');
    res.type(asset[1]).sendFile(asset[0]);
  });
  return router;
}

export const consolePages = (enabled: () => boolean) => pages('server/console', 'console.js', enabled);

/** The monitoring dashboard: always served (it opens nothing a project's key does not). */
export const dashboardPages = () => pages('server/dashboard', 'dashboard.js', () => true);
