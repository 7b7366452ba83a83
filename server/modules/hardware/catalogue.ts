// The hardware configurations, read once per database. They are written only when the catalogue is seeded (a
// start, before the app serves), so every later read can be answered from memory; the list was the cost of most of
// a GET /v1/hardware (a query per request, about 0.45 ms of CPU under load). Capacity in use is not cached: it is
// counted per request from the open reservations.
import type { Hardware } from '../../../generated/prisma/sqlite/client/client.ts';
import type { Database } from '../../db/index.ts';
import { constant } from '../../http/reply.ts';
import { hardwareWire } from './wire.ts';

interface Catalogue {
  /** Every configuration, ordered by id. */
  rows: Hardware[];
  /** The answer of a list without a model: constant, so the pipeline checks and serialises it once. */
  list: { object: 'list'; data: ReturnType<typeof hardwareWire>[] };
}

const catalogues = new WeakMap<Database, Promise<Catalogue>>();

export function hardwareCatalogue(db: Database): Promise<Catalogue> {
  let catalogue = catalogues.get(db);
  if (!catalogue) {
    // Sorted here, not by the database, so SQLite and PostgreSQL (whose collation may ignore case) agree.
    catalogue = db.prisma.hardware.findMany().then((rows) => {
      rows.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
      return { rows, list: constant({ object: 'list' as const, data: rows.map((h) => hardwareWire(h)) }) };
    });
    catalogues.set(db, catalogue);
    // A failed read is not remembered: the next request asks again.
    catalogue.catch(() => catalogues.delete(db));
  }
  return catalogue;
}
