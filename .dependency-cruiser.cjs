// The architecture's rules, checked by test/architecture.test.ts (and `npx depcruise server client --config
// .dependency-cruiser.cjs`): no import cycle anywhere in server/ or client/ (type-only imports included), and the
// layers import only downwards: core <- db <- runner <- http <- modules, engines below modules, limits (the rate
// limits' algorithm) below http, entry points (main, cli, platform, bootstrap, accounts) on top; modules meet at each
// other's index.ts; and the control plane is a guest that no module imports (the platform plugs it in).
/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    { name: 'no-circular', severity: 'error', comment: 'Import cycles make load order and reasoning fragile.', from: {}, to: { circular: true } },
    {
      name: 'core-is-the-bottom',
      severity: 'error',
      comment: 'core/ (config, clock, ids, log, paths, errors, the machine form) depends on nothing of the server.',
      from: { path: '^server/core/' },
      to: { path: '^server/(?!core/)' },
    },
    {
      name: 'db-below-the-rest',
      severity: 'error',
      from: { path: '^server/db/' },
      to: { path: '^server/(?!core/|db/)' },
    },
    {
      name: 'runner-below-http-and-modules',
      severity: 'error',
      from: { path: '^server/runner/' },
      to: { path: '^server/(?!core/|db/|runner/)' },
    },
    {
      name: 'limits-below-http',
      severity: 'error',
      comment: "The rate limits' algorithm knows nothing of HTTP: the pipeline (http/rate-limits.ts) puts requests through it.",
      from: { path: '^server/limits/' },
      to: { path: '^server/(?!core/|engines/|limits/)' },
    },
    {
      name: 'engines-below-modules',
      severity: 'error',
      comment: 'Engines (the work that needs GPUs) know nothing of the HTTP layer or the modules that call them.',
      from: { path: '^server/engines/' },
      to: { path: '^server/(?!core/|engines/)' },
    },
    {
      name: 'modules-do-not-reach-up',
      severity: 'error',
      comment: 'Modules are assembled by the platform; they never import the app, the platform or the entry points.',
      from: { path: '^server/modules/' },
      to: { path: '^server/(http/app|http/auth|http/error-handler|platform|main|cli|bootstrap|accounts)\\.ts$' },
    },
    {
      name: 'http-below-modules',
      severity: 'error',
      comment: 'The pipeline runs the operations it is given (http/context.ts); it knows no module.',
      from: { path: '^server/http/' },
      to: { path: '^server/modules/' },
    },
    {
      name: 'no-module-imports-control',
      severity: 'error',
      comment:
        'The control plane steers the platform through seams the lower layers own (engines/intercept.ts, http/guests.ts, the descriptors\' hooks): nothing but the entry points imports it.',
      from: { path: '^server/', pathNot: ['^server/modules/control/', '^server/(platform|main|cli)\\.ts$'] },
      to: { path: '^server/modules/control/' },
    },
    {
      name: 'http-below-the-entry-points',
      severity: 'error',
      comment: 'The pipeline and its kit serve the modules; the entry points and account management assemble and use them.',
      from: { path: '^server/http/' },
      to: { path: '^server/(platform|main|cli|bootstrap|accounts)\\.ts$' },
    },
    {
      name: 'modules-meet-at-their-index',
      severity: 'error',
      comment:
        "A module offers the others what its index.ts exports; its other files are its own. Test fixtures may use another module's fixtures.",
      from: { path: '^server/modules/([^/]+)/', pathNot: '/fixtures\\.ts$' },
      to: { path: '^server/modules/[^/]+/', pathNot: ['^server/modules/$1/', '^server/modules/[^/]+/index\\.ts$'] },
    },
    {
      name: 'client-is-self-contained',
      severity: 'error',
      comment: 'The client package imports nothing outside client/.',
      from: { path: '^client/' },
      to: { path: '^(?!client/)', dependencyTypesNot: ['npm', 'npm-dev', 'npm-peer', 'npm-optional', 'core'] },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^(generated|client/dist)/' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    combinedDependencies: false,
  },
};
