// The monitoring dashboard: one ES module, no build step. It reads a project's v2 endpoints through the API's own
// operations (whoami, endpoints, analytics, usage, A/B and shadow experiments), with the project's API key kept in
// this tab's sessionStorage and sent as a bearer header; data from the server is put in the page as text only.
import uPlot from '/dashboard/assets/uplot.js';

const KEY = 'apiKey';
const page = document.getElementById('page');
const signIn = document.getElementById('sign-in');
const range = document.getElementById('range');
const RANGES = { '1h': [3600e3, '1m'], '24h': [86400e3, '1h'], '7d': [7 * 86400e3, '6h'] };
const COLOURS = ['#1f77b4', '#d62728', '#2ca02c', '#ff7f0e', '#9467bd', '#8c564b'];

/** An element: h('td', { class: 'x' }, 'text', child...). Strings become text nodes. */
function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) if (v !== undefined && v !== null) el.setAttribute(k, String(v));
  for (const c of children.flat()) if (c !== undefined && c !== null) el.append(c instanceof Node ? c : String(c));
  return el;
}
const table = (heads, rows, attrs = {}) => h('table', attrs, h('thead', {}, h('tr', {}, heads.map((t) => h('th', {}, t)))), h('tbody', {}, rows));
const ms = (v) => `${Math.round(v)} ms`;
const pct = (v) => (v === null ? 'n/a' : `${Math.round(v * 10) / 10}%`);

class Unauthorized extends Error {}

async function get(path, query = {}) {
  const qs = new URLSearchParams(query).toString();
  const res = await fetch(qs ? `${path}?${qs}` : path, { headers: { authorization: `Bearer ${sessionStorage.getItem(KEY)}` } });
  const body = await res.json().catch(() => null);
  if (res.status === 401) throw new Unauthorized(body?.error?.message ?? 'The key was refused.');
  if (!res.ok) throw new Error(body?.error?.message ?? `${res.status} ${res.statusText}`);
  return body;
}

/** A uPlot chart of time series (epoch seconds on x); kept on window.dashboardPlots by name for whoever inspects the page. */
function chart(name, title, xs, series) {
  const el = h('div', { class: 'card', 'data-chart': name }, h('h3', {}, title));
  queueMicrotask(() => {
    const plot = new uPlot(
      {
        width: 460,
        height: 200,
        scales: { x: { time: true } },
        legend: { live: false },
        series: [{}, ...series.map((s, i) => ({ label: s.label, stroke: COLOURS[i % COLOURS.length], width: 2, spanGaps: true }))],
      },
      [xs, ...series.map((s) => s.values)],
      el,
    );
    window.dashboardPlots = { ...window.dashboardPlots, [name]: plot };
  });
  return el;
}

/** One endpoint: its traffic split, its charts over the range, its deployments' figures, and its experiments. */
async function endpointView(projectId, e, now) {
  const [span, granularity] = RANGES[range.value];
  const endTime = new Date(now).toISOString();
  const startTime = new Date(now - span).toISOString();
  const base = `/v2/projects/${projectId}/endpoints/${e.id}`;
  const series = { startTime, endTime, includeTimeSeries: 'true', granularity };
  const [analytics, usage, ab, shadow] = await Promise.all([
    get(`${base}/analytics`, series),
    get(`${base}/usage`, series),
    get(`${base}/abExperiments`),
    get(`${base}/shadowExperiments`, { includeTargets: 'true' }),
  ]);
  const names = new Map(e.deployments.map((d) => [d.id, d.name]));
  const nameOf = (id) => names.get(id) ?? id;
  const xs = analytics.timeSeries.map((p) => Date.parse(p.timestamp) / 1000);
  const col = (points, k) => points.map((p) => p.values[k] ?? 0);
  const m = analytics.metrics;
  const totals = h(
    'p',
    { class: 'totals' },
    `requests ${m.requestMetrics.totalRequests}, errors ${m.requestMetrics.failedRequests} (${pct(m.errorMetrics.errorRate)}), ` +
      `p50 ${ms(m.latencyMetrics.latencyP50Ms)}, p99 ${ms(m.latencyMetrics.latencyP99Ms)}, ` +
      `running replicas ${usage.runningReplicas}, cost ${(usage.costCents / 100).toFixed(2)} USD`,
  );
  const split = table(
    ['Deployment', 'Weight', 'State', 'Replicas', 'Share now'],
    e.deployments.map((d) =>
      h(
        'tr',
        { 'data-deployment': d.id },
        h('td', {}, d.name),
        h('td', {}, String(e.trafficSplit.find((s) => s.deploymentId === d.id)?.weight ?? 0)),
        h('td', {}, d.state),
        h('td', {}, `${d.readyReplicas} of ${d.desiredReplicas}`),
        h('td', {}, pct(d.estimatedEffectiveTrafficShare * 100)),
      ),
    ),
    { class: 'split' },
  );
  const byDeployment = table(
    ['Deployment', 'Traffic', 'Requests', 'Errors', 'p50', 'p90', 'p99'],
    analytics.deploymentAnalytics.map((d) =>
      h(
        'tr',
        { 'data-deployment': d.deploymentId, 'data-mode': d.trafficMode },
        h('td', {}, nameOf(d.deploymentId)),
        h('td', {}, d.trafficMode === 'TRAFFIC_MODE_SHADOW' ? 'shadow copies' : 'live'),
        h('td', {}, d.metrics.requestMetrics.totalRequests),
        h('td', {}, d.metrics.requestMetrics.failedRequests),
        h('td', {}, ms(d.metrics.latencyMetrics.latencyP50Ms)),
        h('td', {}, ms(d.metrics.latencyMetrics.latencyP90Ms)),
        h('td', {}, ms(d.metrics.latencyMetrics.latencyP99Ms)),
      ),
    ),
    { class: 'deployments' },
  );
  const live = new Map(analytics.deploymentAnalytics.filter((d) => d.trafficMode === 'TRAFFIC_MODE_LIVE').map((d) => [d.deploymentId, d.metrics]));
  const abTables = ab.data.map((x) =>
    h(
      'div',
      { class: 'ab', 'data-experiment': x.id },
      h('h3', {}, `A/B experiment ${x.name}`),
      table(
        ['Member', 'Role', 'Percent', 'Requests', 'Error rate', 'p50', 'p99'],
        x.members.map((mb) => {
          const f = live.get(mb.deploymentId);
          return h(
            'tr',
            { 'data-deployment': mb.deploymentId },
            h('td', {}, nameOf(mb.deploymentId)),
            h('td', {}, mb.role.replace('AB_EXPERIMENT_MEMBER_ROLE_', '').toLowerCase()),
            h('td', {}, `${mb.percent}%`),
            h('td', {}, f ? f.requestMetrics.totalRequests : '0'),
            h('td', {}, f ? pct(f.errorMetrics.errorRate) : 'n/a'),
            h('td', {}, f ? ms(f.latencyMetrics.latencyP50Ms) : 'n/a'),
            h('td', {}, f ? ms(f.latencyMetrics.latencyP99Ms) : 'n/a'),
          );
        }),
      ),
    ),
  );
  const shadowTables = await Promise.all(
    shadow.data.map(async (x) => {
      const r = await get(`${base}/shadowExperiments/${x.id}/results`, { startTime, endTime });
      return h(
        'div',
        { class: 'shadow', 'data-experiment': x.id },
        h('h3', {}, `Shadow experiment ${x.name}`),
        h('p', {}, `callers: ${r.primary.requests} requests, ${pct(r.primary.errorRate)} errors, p50 ${ms(r.primary.latencyMs.p50)}, p99 ${ms(r.primary.latencyMs.p99)}`),
        table(
          ['Target', 'Copies', 'Errors', 'p50', 'p99', 'Compared', 'Matched the callers'],
          r.targets.map((t) =>
            h(
              'tr',
              { 'data-deployment': t.targetDeploymentId },
              h('td', {}, `${t.name} (${nameOf(t.targetDeploymentId)})`),
              h('td', {}, String(t.copies)),
              h('td', {}, `${t.errors} (${pct(t.errorRate)})`),
              h('td', {}, ms(t.latencyMs.p50)),
              h('td', {}, ms(t.latencyMs.p99)),
              h('td', {}, String(t.compared)),
              h('td', {}, pct(t.matchRate)),
            ),
          ),
        ),
      );
    }),
  );
  const ux = usage.timeSeries.map((p) => Date.parse(p.timestamp) / 1000);
  return h(
    'section',
    { class: 'endpoint', 'data-endpoint': e.id },
    h('h2', {}, e.name),
    totals,
    h('h3', {}, 'Traffic split'),
    split,
    chart(`requests ${e.id}`, 'Requests and errors', xs, [
      { label: 'requests', values: col(analytics.timeSeries, 'totalRequests') },
      { label: 'errors', values: col(analytics.timeSeries, 'failedRequests') },
    ]),
    chart(`latency ${e.id}`, 'Latency (ms)', xs, [
      { label: 'p50', values: col(analytics.timeSeries, 'latencyP50Ms') },
      { label: 'p90', values: col(analytics.timeSeries, 'latencyP90Ms') },
      { label: 'p99', values: col(analytics.timeSeries, 'latencyP99Ms') },
    ]),
    chart(`replicas ${e.id}`, 'Replicas (mean) and cost (cents)', ux, [
      { label: 'replicas', values: col(usage.timeSeries, 'replicas') },
      { label: 'cost', values: col(usage.timeSeries, 'costCents') },
    ]),
    h('h3', {}, 'By deployment'),
    byDeployment,
    abTables,
    shadowTables,
  );
}

async function show() {
  page.dataset.ready = 'false';
  try {
    const me = await get('/v1/whoami');
    document.getElementById('project').textContent = `${me.project_name} (${me.project_slug})`;
    const endpoints = await get(`/v2/projects/${me.project_id}/endpoints`, { limit: '100' });
    // "Now" is the platform's (its clock may run ahead of this browser's): the end of a range the server chose.
    const probe = endpoints.data.length ? await get(`/v2/projects/${me.project_id}/endpoints/${endpoints.data[0].id}/analytics`) : null;
    const now = probe ? Date.parse(probe.timeRange.endTime) : Date.now();
    const views = await Promise.all(endpoints.data.map((e) => endpointView(me.project_id, e, now)));
    page.replaceChildren(h('h1', {}, 'v2 endpoints'), ...(views.length ? views : [h('p', {}, 'This project has no v2 endpoint.')]));
  } catch (err) {
    if (err instanceof Unauthorized) return signOut(err.message);
    page.replaceChildren(h('p', { class: 'error' }, err.message));
  }
  page.dataset.ready = 'true';
}

function signOut(message = '') {
  sessionStorage.removeItem(KEY);
  page.replaceChildren();
  for (const id of ['sign-out', 'range-label']) document.getElementById(id).hidden = true;
  signIn.hidden = false;
  document.getElementById('sign-in-error').textContent = message;
}

function signedIn() {
  signIn.hidden = true;
  for (const id of ['sign-out', 'range-label']) document.getElementById(id).hidden = false;
  show();
}

signIn.addEventListener('submit', (event) => {
  event.preventDefault();
  sessionStorage.setItem(KEY, document.getElementById('api-key').value);
  signedIn();
});
document.getElementById('sign-out').addEventListener('click', () => signOut());
range.addEventListener('change', () => show());
if (sessionStorage.getItem(KEY)) signedIn();
else signOut();
