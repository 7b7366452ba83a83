// The console: one ES module, no build step. It reads and changes the platform only through the control
// operations (spec/tags/control.yaml), with the control key kept in this tab's sessionStorage and sent as a bearer
// header; data from the server is always put in the page as text, never as HTML.
import uPlot from '/console/assets/uplot.js';

const KEY = 'controlKey';
const page = document.getElementById('page');
const nav = document.getElementById('nav');
const signIn = document.getElementById('sign-in');

/** An element: h('td', { class: 'x' }, 'text', child...). Strings become text nodes. */
function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else if (v !== undefined && v !== null && v !== false) el.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children.flat()) if (c !== undefined && c !== null) el.append(c instanceof Node ? c : String(c));
  return el;
}
const table = (heads, rows) =>
  h(
    'table',
    {},
    h(
      'thead',
      {},
      h(
        'tr',
        {},
        heads.map((t) => h('th', {}, t)),
      ),
    ),
    h('tbody', {}, rows),
  );
const ms = (v) => `${Math.round(v)} ms`;
const pct = (v) => (v === null ? 'n/a' : `${Math.round(v * 10) / 10}%`);
const time = (at) => new Date(at).toISOString().replace('T', ' ').slice(0, 19);

class Unauthorized extends Error {}

/** A control operation: JSON in and out; a refusal throws with the platform's error message. */
async function api(method, path, body) {
  const res = await fetch(path, {
    method,
    headers: { authorization: `Bearer ${sessionStorage.getItem(KEY)}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  if (res.status === 401) throw new Unauthorized((await res.json()).error.message);
  if (!res.ok) throw new Error((await res.json().catch(() => null))?.error?.message ?? `${res.status} ${res.statusText}`);
  return res;
}
const json = async (method, path, body) => (await api(method, path, body)).json();

const pages = {
  async projects() {
    const { projects } = await json('GET', '/_control/overview?limit=1');
    return [
      h('h1', {}, 'Projects and keys'),
      table(
        ['Organization', 'Project', 'Slug', 'Keys (masked)'],
        projects.map((p) =>
          h(
            'tr',
            { 'data-project': p.id },
            h('td', {}, p.organization_name),
            h('td', {}, p.name, h('br'), h('span', { class: 'mono' }, p.id)),
            h('td', {}, p.slug),
            h(
              'td',
              {},
              h(
                'ul',
                {},
                p.keys.map((k) =>
                  h('li', {}, h('span', { class: 'mono' }, k.masked), ` ${k.name}${k.development ? ' (development)' : ''}${k.revoked_at ? ' revoked' : ''}`),
                ),
              ),
            ),
          ),
        ),
      ),
    ];
  },

  async resources() {
    const { resources } = await json('GET', '/_control/overview');
    return [h('h1', {}, 'Resources and jobs'), resourceTable(resources)];
  },

  async queue() {
    const { queue, resources } = await json('GET', '/_control/overview');
    const jobs = resources.filter((r) => r.kind === 'queue_job');
    return [
      h('h1', {}, 'Queue'),
      table(
        ['Model', 'Depth', 'Claimed', 'Done', 'Retries'],
        queue.map((q) =>
          h('tr', { 'data-model': q.model }, h('td', {}, q.model), h('td', {}, q.depth), h('td', {}, q.claimed), h('td', {}, q.done), h('td', {}, q.retries)),
        ),
      ),
      h('h2', {}, 'Jobs'),
      table(
        ['Id', 'Model', 'State', 'Created'],
        jobs.map((j) => h('tr', {}, h('td', { class: 'mono' }, j.id), h('td', {}, j.label), h('td', {}, j.state), h('td', {}, time(j.created_at)))),
      ),
    ];
  },

  async endpoints() {
    const { endpoints, resources } = await json('GET', '/_control/overview');
    const v1 = resources.filter((r) => r.kind === 'endpoint');
    return [
      h('h1', {}, 'Endpoints, deployments and traffic'),
      endpoints.length === 0 ? h('p', {}, 'No dedicated endpoint.') : null,
      endpoints.map((e) =>
        h(
          'div',
          { 'data-endpoint': e.id },
          h('h2', {}, e.name, ' ', h('span', { class: 'mono' }, e.id)),
          h('p', {}, 'Traffic split: ', h('code', {}, JSON.stringify(e.traffic_split))),
          table(
            ['Deployment', 'Model', 'State', 'Replicas (ready / min-max)'],
            e.deployments.map((d) =>
              h(
                'tr',
                {},
                h('td', {}, d.name),
                h('td', {}, d.model),
                h('td', {}, d.state),
                h('td', {}, `${d.ready_replicas} / ${d.min_replicas}-${d.max_replicas}`),
              ),
            ),
          ),
        ),
      ),
      h('h2', {}, 'v1 endpoints'),
      table(
        ['Id', 'Name', 'State'],
        v1.map((e) => h('tr', {}, h('td', { class: 'mono' }, e.id), h('td', {}, e.label), h('td', {}, e.state))),
      ),
    ];
  },

  // Every project's A/B and shadow experiments over the last 24 hours of the platform's clock: each A/B member's live
  // figures side by side, each shadow target's copies against the callers' answers (what a project's own users see on
  // its dashboard, /dashboard).
  async experiments() {
    const { abExperiments, shadowExperiments, timeRange } = await json('GET', '/_control/experiments');
    const figures = (f) => [h('td', {}, String(f.requests)), h('td', {}, pct(f.errorRate)), h('td', {}, ms(f.latencyMs.p50)), h('td', {}, ms(f.latencyMs.p99))];
    const title = (kind, { experiment, endpointName }) =>
      h('h3', {}, `${kind} ${experiment.name} on ${endpointName} `, h('span', { class: 'mono' }, `${experiment.projectId} ${experiment.id}`));
    return [
      h('h1', {}, 'Experiments'),
      h('p', {}, `From ${time(timeRange.startTime)} to ${time(timeRange.endTime)} (the platform's clock).`),
      h('h2', {}, 'A/B experiments'),
      abExperiments.length === 0 ? h('p', {}, 'No A/B experiment.') : null,
      abExperiments.map((x) =>
        h(
          'div',
          { class: 'ab', 'data-experiment': x.experiment.id },
          title('A/B experiment', x),
          table(
            ['Member deployment', 'Role', 'Percent', 'Requests', 'Error rate', 'p50', 'p99'],
            x.members.map(({ member, results }) =>
              h(
                'tr',
                { 'data-deployment': member.deploymentId },
                h('td', { class: 'mono' }, member.deploymentId),
                h('td', {}, member.role.replace('AB_EXPERIMENT_MEMBER_ROLE_', '').toLowerCase()),
                h('td', {}, `${member.percent}%`),
                ...figures(results),
              ),
            ),
          ),
        ),
      ),
      h('h2', {}, 'Shadow experiments'),
      shadowExperiments.length === 0 ? h('p', {}, 'No shadow experiment.') : null,
      shadowExperiments.map((x) =>
        h(
          'div',
          { class: 'shadow', 'data-experiment': x.experiment.id },
          title('Shadow experiment', x),
          h('p', { class: 'callers' }, `callers: ${x.results.primary.requests} requests, ${pct(x.results.primary.errorRate)} errors`),
          table(
            ['Target', 'Deployment', 'Copies', 'Errors', 'p50', 'p99', 'Compared', 'Matched the callers'],
            x.results.targets.map((t) =>
              h(
                'tr',
                { 'data-deployment': t.targetDeploymentId },
                h('td', {}, t.name),
                h('td', { class: 'mono' }, t.targetDeploymentId),
                h('td', {}, String(t.copies)),
                h('td', {}, `${t.errors} (${pct(t.errorRate)})`),
                h('td', {}, ms(t.latencyMs.p50)),
                h('td', {}, ms(t.latencyMs.p99)),
                h('td', {}, String(t.compared)),
                h('td', {}, pct(t.matchRate)),
              ),
            ),
          ),
        ),
      ),
    ];
  },

  // Requests and refusals per organization x model over time, as this process's journal saw them: the operations the
  // contract marks rate-limited (`x-rate-limited`), by their body's model; beside them the limit in force now, as
  // `getRateLimit` reads it (per window, drawn per second: the plot's unit).
  async 'rate-limits'() {
    const [{ projects }, { data }, limited] = await Promise.all([
      json('GET', '/_control/overview?limit=1'),
      json('GET', '/_control/journal?limit=1000'),
      rateLimited(),
    ]);
    const projectOf = new Map(projects.map((p) => [p.id, p]));
    const keyOf = new Map();
    const nameOf = (e) => {
      const p = projectOf.get(e.project_id);
      const name = `${p?.organization_name ?? e.project_id} x ${e.request_body.model}`;
      if (p) keyOf.set(name, { organization_id: p.organization_id, model: e.request_body.model });
      return name;
    };
    const entries = data.filter((e) => limited.has(e.operation) && e.project_id && typeof e.request_body?.model === 'string').reverse();
    const series = [...new Set(entries.map(nameOf))];
    const second = (e) => Math.floor(Date.parse(e.at) / 1000);
    // A second either side with nothing counted, so that one busy second still draws as lines.
    const busy = [...new Set(entries.map(second))].sort((a, b) => a - b);
    const seconds = busy.length ? [...new Set([busy[0] - 1, ...busy, busy.at(-1) + 1])] : [];
    const count = (name, refused) => seconds.map((s) => entries.filter((e) => second(e) === s && nameOf(e) === name && (e.status === 429) === refused).length);
    const limits = await Promise.all(series.map((name) => (keyOf.has(name) ? readLimit(keyOf.get(name)).catch(keepUnauthorized) : null)));
    const perSecond = (l) => (l instanceof Error || !l ? null : l.limit.requests / l.window.seconds);
    const plot = h('div', { id: 'rate-plot' });
    if (seconds.length)
      queueMicrotask(() =>
        draw(
          plot,
          'rate-limits',
          [seconds, ...series.flatMap((name, i) => [count(name, false), count(name, true), seconds.map(() => perSecond(limits[i]))])],
          series.flatMap((name, i) => [
            { label: name, stroke: COLOURS[i % COLOURS.length] },
            { label: `${name}: 429`, stroke: COLOURS[i % COLOURS.length], dash: [4, 4] },
            { label: `${name}: limit`, stroke: COLOURS[i % COLOURS.length], dash: [1, 3], width: 1 },
          ]),
        ),
      );
    const organizations = [...new Map(projects.map((p) => [p.organization_id, p.organization_name]))];
    const first = keyOf.get(series[0]);
    const error = h('p', { class: 'error', role: 'alert' });
    const field = (name, label, attrs = {}) => h('label', {}, `${label} `, h('input', { name, type: 'number', ...attrs }));
    const set = (event) => {
      event.preventDefault();
      const f = new FormData(event.target);
      const num = (k) => (String(f.get(k) ?? '').trim() === '' ? undefined : Number(f.get(k)));
      const dynamic = f.get('dynamic') ? { requests: null, tokens: null } : undefined;
      const limit = dynamic ?? { requests: num('limit_requests'), tokens: num('limit_tokens') };
      const usage = { requests: num('usage_requests'), tokens: num('usage_tokens') };
      const body = { organization_id: f.get('organization_id'), model: String(f.get('model')).trim(), limit, usage, resets_in_ms: num('resets_in_ms') };
      attempt(error, async () => {
        // Fields left empty are not sent: they keep what the limiter holds (JSON drops undefined, and empty objects go).
        const clean = JSON.parse(JSON.stringify(body));
        for (const k of ['limit', 'usage']) if (clean[k] && Object.keys(clean[k]).length === 0) delete clean[k];
        const l = await json('PATCH', '/_control/rate-limits', clean);
        flash = `In force for ${organizations.find(([id]) => id === l.organization_id)?.[1] ?? l.organization_id} x ${l.model}: ${describeLimit(l)}.`;
        await show();
      });
    };
    return [
      h('h1', {}, 'Rate limits: requests per second, by organization x model'),
      h(
        'p',
        {},
        "From this process's request journal: the rate-limited operations' answered requests (solid) and 429 refusals (dashed); dotted, the request limit in force now (per window, divided by the window's seconds).",
      ),
      table(
        ['Organization x model', 'Requests', '429', 'In force now'],
        series.map((name, i) =>
          h(
            'tr',
            { 'data-series': name },
            h('td', {}, name),
            h('td', {}, sum(count(name, false))),
            h('td', {}, sum(count(name, true))),
            h('td', { class: 'limit' }, limits[i] instanceof Error ? limits[i].message : limits[i] ? describeLimit(limits[i]) : ''),
          ),
        ),
      ),
      seconds.length ? plot : h('p', {}, 'No rate-limited request in the journal.'),
      h(
        'form',
        { id: 'set-limit', class: 'inline', onsubmit: set },
        h('h2', {}, 'Set a limit, its usage or its window'),
        h('p', {}, 'Empty fields keep what the limiter holds. Usage at the limit refuses the next request (429) until the window ends.'),
        h(
          'label',
          {},
          'Organization ',
          h(
            'select',
            { name: 'organization_id' },
            organizations.map(([id, name]) => h('option', { value: id, selected: id === first?.organization_id }, name)),
          ),
        ),
        h('label', {}, 'Model ', h('input', { name: 'model', required: true, value: first?.model ?? '' })),
        field('limit_requests', 'Requests per window', { min: 1 }),
        field('limit_tokens', 'Tokens per window', { min: 1 }),
        field('usage_requests', 'Requests counted', { min: 0 }),
        field('usage_tokens', 'Tokens counted', { min: 0 }),
        field('resets_in_ms', 'Window ends in (ms)', { min: 1, max: 3600000 }),
        h('label', {}, h('input', { type: 'checkbox', name: 'dynamic' }), ' Back to the dynamic limit (instead of the two limits above)'),
        h('button', { type: 'submit' }, 'Set'),
      ),
      error,
    ];
  },

  async 'fine-tunes'() {
    const { resources } = await json('GET', '/_control/overview');
    const jobs = resources.filter((r) => r.kind === 'fine_tune');
    const cards = await Promise.all(
      jobs.map(async (j) => {
        const { metrics } = await json('GET', `/_control/fine-tunes/${encodeURIComponent(j.id)}/metrics`);
        const plot = h('div', { class: 'loss-plot', 'data-fine-tune': j.id });
        const card = h('div', { class: 'card' }, h('h2', {}, j.id), h('p', {}, `${j.label}: ${j.state}, ${metrics.length} steps logged`), plot);
        if (metrics.length) {
          const steps = metrics.map((m) => m['train/global_step']);
          const col = (k) => metrics.map((m) => (k in m ? m[k] : null));
          queueMicrotask(() =>
            draw(plot, `loss ${j.id}`, [steps, col('train/loss'), col('eval/loss')], [{ label: 'train/loss' }, { label: 'eval/loss', points: { show: true } }]),
          );
        }
        return card;
      }),
    );
    return [h('h1', {}, "Fine-tunes' loss curves"), jobs.length ? cards : h('p', {}, 'No fine-tune.')];
  },

  async videos() {
    const { resources } = await json('GET', '/_control/overview');
    const videos = resources.filter((r) => r.kind === 'video');
    const cards = videos.map((v) => {
      const card = h('div', { class: 'card', 'data-video': v.id }, h('h2', {}, v.id), h('p', {}, `${v.label}: ${v.state}`));
      if (v.state === 'completed') {
        // A <video> cannot send the bearer header: the file is fetched with it and played from memory.
        const video = h('video', { controls: true, muted: true, loop: true, playsinline: true });
        video.muted = true;
        card.append(video);
        api('GET', `/_control/videos/${encodeURIComponent(v.id)}/content`)
          .then((res) => res.blob())
          .then((blob) => {
            video.src = URL.createObjectURL(blob);
            return video.play();
          })
          .catch((err) => card.append(h('p', { class: 'error' }, err.message)));
      }
      return card;
    });
    return [h('h1', {}, 'Videos'), videos.length ? cards : h('p', {}, 'No video.')];
  },

  async journal() {
    const { data } = await json('GET', '/_control/journal?limit=200');
    return [
      h('h1', {}, 'Request journal'),
      h('button', { type: 'button', id: 'clear-journal', onclick: () => json('DELETE', '/_control/journal').then(show) }, 'Clear'),
      table(
        ['#', 'At', 'Method', 'Path', 'Operation', 'Project', 'Status', 'ms', 'Fault'],
        data.map((e) =>
          h(
            'tr',
            { 'data-entry': e.id },
            h('td', {}, e.id),
            h('td', {}, time(e.at)),
            h('td', {}, e.method),
            h('td', { class: 'mono' }, e.path),
            h('td', {}, e.operation ?? ''),
            h('td', { class: 'mono' }, e.project_id ?? ''),
            h('td', { class: 'status' }, e.status),
            h('td', {}, e.ms),
            h('td', { class: 'mono' }, e.fault ?? ''),
          ),
        ),
      ),
    ];
  },

  async faults() {
    const [{ data }, { projects }] = await Promise.all([json('GET', '/_control/faults'), json('GET', '/_control/overview?limit=1')]);
    const error = h('p', { class: 'error', role: 'alert' });
    const field = (name, label, attrs = {}) => h('label', {}, `${label} `, h('input', { name, ...attrs }));
    const add = async (event) => {
      event.preventDefault();
      const f = new FormData(event.target);
      const text = (k) => String(f.get(k) ?? '').trim();
      const num = (k) => (text(k) === '' ? undefined : Number(text(k)));
      const match = {
        ...(text('operations') ? { operations: text('operations').split(/[\s,]+/) } : {}),
        ...(text('path') ? { path: text('path') } : {}),
        ...(text('model') ? { model: text('model') } : {}),
        ...(text('project_id') ? { project_id: text('project_id') } : {}),
      };
      const rule = {
        ...(Object.keys(match).length ? { match } : {}),
        status: num('status'),
        code: text('code') || undefined,
        delay_ms: num('delay_ms'),
        retry_after_seconds: num('retry_after_seconds'),
        count: num('count'),
        after: num('after'),
        probability: num('probability'),
        ttl_seconds: num('ttl_seconds'),
        ...(f.get('drop') ? { drop: true } : {}),
      };
      await attempt(error, () => json('POST', '/_control/faults', JSON.parse(JSON.stringify(rule))).then(show));
    };
    return [
      h('h1', {}, 'Fault rules'),
      table(
        ['Id', 'Match', 'Does', 'Left', 'Hits', ''],
        data.map((r) =>
          h(
            'tr',
            { 'data-fault': r.id },
            h('td', { class: 'mono' }, r.id),
            h('td', {}, h('code', {}, JSON.stringify(r.match ?? {}))),
            h('td', {}, [r.status && `${r.status} ${r.code ?? ''}`, r.delay_ms && `delay ${r.delay_ms} ms`, r.drop && 'drop'].filter(Boolean).join(', ')),
            h('td', {}, r.count ?? '∞'),
            h('td', {}, r.hits),
            h(
              'td',
              {},
              h(
                'button',
                { type: 'button', class: 'remove', onclick: () => json('DELETE', `/_control/faults/${encodeURIComponent(r.id)}`).then(show) },
                'Remove',
              ),
            ),
          ),
        ),
      ),
      h(
        'form',
        { id: 'add-fault', class: 'inline', onsubmit: add },
        h('h2', {}, 'Add a rule'),
        field('operations', 'Operations', { placeholder: 'createChatCompletion' }),
        field('path', 'Path prefix', { placeholder: '/v1/chat' }),
        field('model', 'Model'),
        h(
          'label',
          {},
          'Project ',
          h(
            'select',
            { name: 'project_id' },
            h('option', { value: '' }, 'any'),
            projects.map((p) => h('option', { value: p.id }, p.name)),
          ),
        ),
        field('status', 'Status', { type: 'number', min: 400, max: 599 }),
        field('code', 'Code'),
        field('delay_ms', 'Delay (ms)', { type: 'number', min: 0 }),
        field('retry_after_seconds', 'Retry-After (s)', { type: 'number', min: 0 }),
        field('count', 'Count', { type: 'number', min: 1 }),
        field('after', 'After', { type: 'number', min: 0 }),
        field('probability', 'Probability', { type: 'number', min: 0, max: 1, step: 'any' }),
        field('ttl_seconds', 'TTL (s)', { type: 'number', min: 1 }),
        h('label', {}, h('input', { type: 'checkbox', name: 'drop' }), ' Drop the connection'),
        h('button', { type: 'submit' }, 'Add'),
      ),
      error,
    ];
  },

  async snapshots() {
    const { data } = await json('GET', '/_control/snapshots');
    const error = h('p', { class: 'error', role: 'alert' });
    const path = (name) => `/_control/snapshots/${encodeURIComponent(name)}`;
    const restore = (name) => () =>
      confirm(`Put the whole platform back as snapshot ${name} found it? (This process's journal and fault rules are cleared.)`) &&
      attempt(error, async () => {
        const r = await json('POST', `${path(name)}/restore`);
        flash = `Restored ${r.name}: ${r.rows} rows and ${r.files} files written back in ${Math.round(r.ms)} ms.`;
        await show();
      });
    const remove = (name) => () => confirm(`Delete snapshot ${name}?`) && attempt(error, () => json('DELETE', path(name)).then(show));
    const take = (event) => {
      event.preventDefault();
      const name = String(new FormData(event.target).get('name')).trim();
      attempt(error, async () => {
        const s = await json('POST', '/_control/snapshots', { name });
        flash = `Took ${s.name}: ${s.rows} rows, ${s.files} files.`;
        await show();
      });
    };
    return [
      h('h1', {}, 'Snapshots'),
      h('p', {}, 'A snapshot holds every table and stored file of the platform; a restore puts the platform back as it was, everything made since gone.'),
      data.length === 0
        ? h('p', {}, 'No snapshot.')
        : table(
            ['Name', 'Taken', 'Rows', 'Files', 'Bytes', ''],
            data.map((s) =>
              h(
                'tr',
                { 'data-snapshot': s.name },
                h('td', {}, s.name),
                h('td', {}, time(s.created_at)),
                h('td', {}, s.rows),
                h('td', {}, s.files),
                h('td', {}, s.file_bytes),
                h(
                  'td',
                  {},
                  h('button', { type: 'button', class: 'restore', onclick: restore(s.name) }, 'Restore'),
                  ' ',
                  h('button', { type: 'button', class: 'remove', onclick: remove(s.name) }, 'Delete'),
                ),
              ),
            ),
          ),
      h(
        'form',
        { id: 'take-snapshot', class: 'inline', onsubmit: take },
        h('label', {}, 'Name ', h('input', { name: 'name', required: true, maxlength: 100, placeholder: 'before-suite' })),
        h('button', { type: 'submit' }, 'Take a snapshot'),
        h('span', {}, ' (a name kept already is replaced)'),
      ),
      error,
    ];
  },

  async scripts() {
    const { data } = await json('GET', '/_control/scripts');
    const error = h('p', { class: 'error', role: 'alert' });
    const editor = h('textarea', { name: 'rule', rows: 12, cols: 80, spellcheck: 'false' });
    editor.value = JSON.stringify(
      { capability: 'chat', match: { message_contains: 'hello' }, answers: [{ content: 'Hello from a scripted answer.' }], after_last: 'repeat' },
      null,
      2,
    );
    const add = (event) => {
      event.preventDefault();
      let rule;
      try {
        rule = JSON.parse(editor.value);
      } catch (err) {
        error.textContent = `The rule is not JSON: ${err.message}`;
        return;
      }
      attempt(error, () => json('POST', '/_control/scripts', rule).then(show));
    };
    const brief = (value) => {
      const text = JSON.stringify(value ?? {});
      return text.length > 200 ? `${text.slice(0, 200)}…` : text;
    };
    return [
      h('h1', {}, 'Scripted answers'),
      h('p', {}, 'Tried oldest first; the first that matches answers in place of the engine, marked by the header x-scripted.'),
      table(
        ['Id', 'Capability', 'Match', 'Answers', 'Hits', 'Expires', ''],
        data.map((r) =>
          h(
            'tr',
            { 'data-script': r.id },
            h('td', { class: 'mono' }, r.id),
            h('td', {}, r.capability),
            h('td', {}, h('code', {}, brief(r.match))),
            h('td', {}, `${r.answers.length} (${r.after_last}) `, h('code', {}, brief(r.answers))),
            h('td', { class: 'hits' }, r.hits),
            h('td', {}, r.expires_at ? time(r.expires_at) : ''),
            h(
              'td',
              {},
              h(
                'button',
                {
                  type: 'button',
                  class: 'remove',
                  onclick: () => attempt(error, () => json('DELETE', `/_control/scripts/${encodeURIComponent(r.id)}`).then(show)),
                },
                'Remove',
              ),
            ),
          ),
        ),
      ),
      h(
        'form',
        { id: 'add-script', onsubmit: add },
        h('h2', {}, 'Add a rule (JSON, as createScript takes it)'),
        editor,
        h('br'),
        h('button', { type: 'submit' }, 'Add'),
      ),
      error,
    ];
  },

  async time() {
    const [clock, { resources }] = await Promise.all([json('GET', '/_control/time'), json('GET', '/_control/overview')]);
    const error = h('p', { class: 'error', role: 'alert' });
    const advance = (event) => {
      event.preventDefault();
      const seconds = Number(new FormData(event.target).get('seconds'));
      attempt(error, async () => {
        const r = await json('POST', '/_control/time/advance', { seconds });
        flash = `Advanced ${r.advanced_ms} ms: ${r.steps} timed steps run.`;
        await show();
      });
    };
    return [
      h('h1', {}, "The platform's clock"),
      h(
        'dl',
        { id: 'clock' },
        h('dt', {}, 'Now'),
        h('dd', { id: 'clock-now' }, clock.now),
        h('dt', {}, 'Ahead of the system clock by'),
        h('dd', { id: 'clock-offset' }, `${clock.offset_ms} ms`),
      ),
      h(
        'form',
        { id: 'advance-time', class: 'inline', onsubmit: advance },
        h('label', {}, 'Advance by (s) ', h('input', { name: 'seconds', type: 'number', min: 0, max: 31536000, step: 'any', required: true, value: 60 })),
        h('button', { type: 'submit' }, 'Advance'),
        h('span', {}, ' (every timed step due on the way runs; the clock never goes back)'),
      ),
      error,
      h('h2', {}, 'Jobs'),
      resourceTable(resources.filter((r) => MOVABLE.has(r.kind))),
    ];
  },

  async reset() {
    const { projects } = await json('GET', '/_control/overview?limit=1');
    const result = h('p', { id: 'reset-result', role: 'status' });
    const select = h(
      'select',
      { name: 'project' },
      h('option', { value: '' }, 'The whole platform'),
      projects.map((p) => h('option', { value: p.id }, `Project ${p.name} (${p.id})`)),
    );
    const run = async (event) => {
      event.preventDefault();
      if (!confirm(select.value ? `Delete every resource of project ${select.value}?` : 'Reset the whole platform to its first start?')) return;
      const r = await json('POST', '/_control/reset', select.value ? { project_id: select.value } : {});
      result.textContent = `Reset ${r.scope}: ${r.deleted} rows deleted in ${r.ms} ms.`;
    };
    return [h('h1', {}, 'Reset'), h('form', { id: 'reset-form', onsubmit: run }, select, ' ', h('button', { type: 'submit' }, 'Reset')), result];
  },
};

/** The operationIds the contract marks `x-rate-limited` (read once from /openapi.json). */
let limitedIds;
async function rateLimited() {
  limitedIds ??= fetch('/openapi.json')
    .then((res) => res.json())
    .then(
      (spec) =>
        new Set(
          Object.values(spec.paths).flatMap((item) =>
            Object.values(item)
              .filter((op) => op?.['x-rate-limited'] === true)
              .map((op) => op.operationId),
          ),
        ),
    );
  return limitedIds;
}

const sum = (xs) => xs.reduce((a, b) => a + b, 0);

/** A message for the next page drawn (what a change did), shown above it once. */
let flash = '';

/** Runs a change the page asked for: a refusal's message goes in `errorEl`, an invalid key signs out. */
async function attempt(errorEl, change) {
  errorEl.textContent = '';
  try {
    await change();
  } catch (err) {
    if (err instanceof Unauthorized) signOut(err.message);
    else errorEl.textContent = err.message;
  }
}
const keepUnauthorized = (err) => {
  if (err instanceof Unauthorized) throw err;
  return err;
};

const readLimit = ({ organization_id, model }) => json('GET', `/_control/rate-limits?${new URLSearchParams({ organization_id, model })}`);
const describeLimit = (l) =>
  `${l.limit.requests} requests, ${l.limit.tokens} tokens per ${l.window.seconds} s window${l.set_limit.requests !== null || l.set_limit.tokens !== null ? ' (set)' : ''}; ` +
  `counted ${l.usage.requests} requests, ${l.usage.tokens} tokens${l.window.resets_in_ms ? `, window ends in ${l.window.resets_in_ms} ms` : ''}`;

/** The kinds of job `transitionJob` moves (its `kind`); other resources have no buttons. */
const MOVABLE = new Set(['video', 'fine_tune', 'evaluation', 'model_upload', 'remote_upload', 'remediation', 'deployment', 'queue_job']);

/** Resources with their timelines; a job gets "next" and "terminal" buttons (transitionJob), a refusal shown in its row. */
function resourceTable(resources) {
  return table(
    ['Kind', 'Id', 'Project', 'What', 'State', 'Timeline', 'Move'],
    resources.map((r) => {
      const error = h('p', { class: 'error', role: 'alert' });
      const move = (to) => () =>
        attempt(error, () => json('POST', `/_control/jobs/${encodeURIComponent(r.kind)}/${encodeURIComponent(r.id)}/transition`, { to }).then(show));
      return h(
        'tr',
        { 'data-resource': r.id },
        h('td', {}, r.kind),
        h('td', { class: 'mono' }, r.id),
        h('td', { class: 'mono' }, r.project_id),
        h('td', {}, r.label),
        h('td', { class: 'state' }, r.state),
        h(
          'td',
          {},
          h(
            'ol',
            { class: 'timeline' },
            r.timeline.map((s) => h('li', { title: s.message ?? '' }, `${time(s.at)} ${s.event}`)),
          ),
        ),
        h(
          'td',
          {},
          MOVABLE.has(r.kind)
            ? [
                h('button', { type: 'button', class: 'next', onclick: move('next') }, 'Next'),
                ' ',
                h('button', { type: 'button', class: 'terminal', onclick: move('terminal') }, 'Terminal'),
                error,
              ]
            : null,
        ),
      );
    }),
  );
}
const COLOURS = ['#1f77b4', '#d62728', '#2ca02c', '#ff7f0e', '#9467bd', '#8c564b'];

/** A uPlot line chart in `el`; the plots drawn are kept on window.consolePlots (by name) for whoever inspects the page. */
function draw(el, name, data, series) {
  const plot = new uPlot(
    {
      width: 560,
      height: 260,
      // One point in time alone would get a range of years: a minute around it.
      scales: { x: { time: name === 'rate-limits', range: (_u, min, max) => (min === max ? [min - 30, max + 30] : [min, max]) } },
      legend: { live: false },
      series: [{}, ...series.map((s, i) => ({ stroke: COLOURS[i % COLOURS.length], width: 2, spanGaps: true, ...s }))],
    },
    data,
    el,
  );
  window.consolePlots = { ...window.consolePlots, [name]: plot };
}

async function show() {
  const name = location.hash.slice(1) || 'projects';
  for (const a of nav.querySelectorAll('a')) a.classList.toggle('current', a.getAttribute('href') === `#${name}`);
  page.dataset.page = name;
  page.dataset.ready = 'false';
  try {
    const notice = flash && h('p', { id: 'notice', role: 'status' }, flash);
    flash = '';
    page.replaceChildren(...[notice, ...(await (pages[name] ?? pages.projects)())].flat().filter(Boolean));
  } catch (err) {
    if (err instanceof Unauthorized) return signOut(err.message);
    page.replaceChildren(h('p', { class: 'error' }, err.message));
  }
  page.dataset.ready = 'true';
}

function signOut(message = '') {
  sessionStorage.removeItem(KEY);
  nav.hidden = true;
  page.replaceChildren();
  signIn.hidden = false;
  document.getElementById('sign-in-error').textContent = message;
}

signIn.addEventListener('submit', (event) => {
  event.preventDefault();
  sessionStorage.setItem(KEY, document.getElementById('control-key').value);
  signIn.hidden = true;
  nav.hidden = false;
  show();
});
document.getElementById('sign-out').addEventListener('click', () => signOut());
window.addEventListener('hashchange', () => sessionStorage.getItem(KEY) && show());
// The page already shown, chosen again: read it afresh.
nav.addEventListener('click', (event) => event.target.getAttribute?.('href') === location.hash && show());

if (sessionStorage.getItem(KEY)) {
  nav.hidden = false;
  show();
} else signOut();
