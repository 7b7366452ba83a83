// The file's validation machine, and the runner's steps. A signed upload (POST /v1/files) is recorded UPLOADING,
// awaiting its bytes: their arrival moves it on (`receive`, `accept`), and its timed step, the upload URL's expiry,
// deletes a file still waiting (nothing of it was kept, so there is nothing to show). A `fine-tune` file is
// stored PENDING; the runner reads it outside any transaction (a long step: a worker that dies mid-read leaves the
// file to another, which reads it again with the same outcome) and moves it to COMPLETED or INVALID_FORMAT; a read
// that keeps failing (the bytes are gone, the reader throws) is given up as FAILED.
import { join } from 'node:path';
import type { File } from '../../../generated/prisma/sqlite/client/client.ts';
import type { Config } from '../../core/config.ts';
import { withoutPaths } from '../../core/errors.ts';
import { defineMachine } from '../../core/machine.ts';
import type { Database } from '../../db/index.ts';
import { type Progression, stored, type Timing, transition } from '../../runner/progress.ts';
import { type FileType, type Purpose, type Report, validateDataset } from './rules.ts';

export const fileMachine = defineMachine({
  name: 'file',
  kind: 'file_validation',
  states: ['UPLOADING', 'PENDING', 'COMPLETED', 'INVALID_FORMAT', 'FAILED'],
  events: ['receive', 'accept', 'validate', 'reject', 'fail'],
  terminal: ['COMPLETED', 'INVALID_FORMAT', 'FAILED'],
  transitions: {
    UPLOADING: { receive: 'PENDING', accept: 'COMPLETED' },
    PENDING: { validate: 'COMPLETED', reject: 'INVALID_FORMAT', fail: 'FAILED' },
  },
  // UPLOADING's duration is also the upload URL's lifetime (signature.ts).
  timed: { UPLOADING: { duration: 'file_upload', defaultMs: 3_600_000 }, PENDING: { duration: 'file_validation', defaultMs: 0 } },
});

/** The state of a signed upload whose bytes have not arrived: not listed, absent to other modules. */
export const AWAITING_BYTES = 'UPLOADING';

export type FileEvent = (typeof fileMachine.events)[number];

export const files = stored<File>()({ machine: fileMachine, table: (c) => c.file, field: 'status' });

export function fileProgression(services: Timing & { db: Database; config: Pick<Config, 'dataDir'> }): Progression<(typeof fileMachine.states)[number]> {
  return {
    stored: files,
    steps: {
      // The upload URL has expired with the bytes still missing: the record goes (only a file still waiting).
      UPLOADING: async (tx, id) => {
        await tx.file.deleteMany({ where: { id, status: AWAITING_BYTES } });
      },
      PENDING: {
        async work(_id, f: File): Promise<Report> {
          const path = join(services.config.dataDir, f.path);
          try {
            return await validateDataset(path, f.fileType as FileType, f.purpose as Purpose, f.id);
          } catch (err) {
            // A read that fails (ENOENT...) names the file's place on disk: the report names the file.
            throw new Error(withoutPaths(err instanceof Error ? err.message : String(err), { [path]: f.id }));
          }
        },
        async apply(tx, _id, report: Report, f: File) {
          await transition(tx, services, files, f, report.valid ? 'validate' : 'reject', { data: { report: JSON.stringify(report) } });
        },
      },
    },
    giveUp: async (tx, id, error) => {
      const f = await tx.file.findUniqueOrThrow({ where: { id } });
      const report: Report = { valid: false, file_id: id, error: `The file could not be read: ${error.slice(0, 500)}` };
      await transition(tx, services, files, f, 'fail', { data: { report: JSON.stringify(report) } });
    },
  };
}
