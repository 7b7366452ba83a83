// How listRemediations orders and pages, declared for the list kit (server/http/list.ts): the fields a remediation
// can be ordered by (its wire names), its parameters' names, and its default order, newest first. An instance has
// few remediations, so they are read whole and ordered by the kit, not by the database: every field below sorts
// alike on SQLite and PostgreSQL, and the cursor stays exact when rows change between pages.
import type { PassiveHealthCheckAlert, Remediation } from '../../../generated/prisma/sqlite/client/client.ts';
import type { ListSpec } from '../../http/list.ts';

const time = (v: bigint | null) => (v === null ? null : Number(v));

export const REMEDIATION_LIST: ListSpec<Remediation> = {
  params: { size: 'page_size', cursor: 'page_token', order: 'order_by' },
  defaultOrder: 'create_time desc',
  fields: {
    id: { kind: 'string', get: (r) => r.id },
    create_time: { kind: 'time', get: (r) => time(r.createTime) },
    update_time: { kind: 'time', get: (r) => time(r.updateTime) },
    start_time: { kind: 'time', get: (r) => time(r.startTime) },
    end_time: { kind: 'time', get: (r) => time(r.endTime) },
    review_time: { kind: 'time', get: (r) => time(r.reviewTime) },
    state: { kind: 'string', get: (r) => r.state },
    mode: { kind: 'string', get: (r) => r.mode },
    trigger: { kind: 'string', get: (r) => r.trigger },
    reason: { kind: 'string', get: (r) => r.reason },
    requested_by: { kind: 'string', get: (r) => r.requestedBy },
    reviewed_by: { kind: 'string', get: (r) => r.reviewedBy },
    error_message: { kind: 'string', get: (r) => r.errorMessage },
  },
};

/** The project-wide alerts list (listPassiveHealthCheckAlerts): by start time, then id; read whole, as alerts are few. */
export const ALERT_LIST: ListSpec<PassiveHealthCheckAlert> = {
  params: { size: 'page_size', cursor: 'page_token', order: 'order_by' },
  defaultOrder: 'started_at desc',
  fields: {
    started_at: { kind: 'time', get: (a) => Number(a.startedAt) },
  },
};

/** The contract's order values, in the kit's spelling. */
export const ALERT_ORDER = { PHC_ALERT_ORDER_STARTED_AT_ASC: 'started_at asc', PHC_ALERT_ORDER_STARTED_AT_DESC: 'started_at desc' } as const;
