// Module `files`: rows -> wire shapes.
import type { File } from '../../../generated/prisma/sqlite/client/client.ts';
import { unixSeconds } from '../../core/clock.ts';
import { constant } from '../../http/reply.ts';
import type { Wire } from '../types.ts';
import { AWAITING_BYTES, fileMachine } from './machine.ts';

/** The columns the wire shape reads: what a listing selects. */
export const fileColumns = {
  id: true,
  createdAt: true,
  filename: true,
  bytes: true,
  purpose: true,
  fileType: true,
  status: true,
  report: true,
} as const satisfies Partial<Record<keyof File, true>>;

type Report = Wire<'FileValidationReport'>;

// Reports by their text: a report is written once, with the file's outcome, and a long list answers the same ones
// on every request, so each is parsed once (frozen: the same object goes into every answer). Bounded by the
// reports' text (a report naming 100 bad lines is a few KB): emptied when full.
const REPORTS_KEPT_CHARS = 16 * 1024 * 1024;
const reports = new Map<string, Report>();
let keptChars = 0;

function reportOf(text: string): Report {
  let report = reports.get(text);
  if (report === undefined) {
    if (keptChars + text.length > REPORTS_KEPT_CHARS) {
      reports.clear();
      keptChars = 0;
    }
    report = constant(JSON.parse(text) as Report);
    reports.set(text, report);
    keptChars += text.length;
  }
  return report;
}

export function fileWire(f: Pick<File, keyof typeof fileColumns>): Wire<'FileResponse'> {
  return {
    id: f.id,
    object: 'file',
    created_at: unixSeconds(f.createdAt),
    filename: f.filename,
    bytes: Number(f.bytes),
    purpose: f.purpose as Wire<'FileResponse'>['purpose'],
    FileType: f.fileType as Wire<'FileResponse'>['FileType'],
    Processed: fileMachine.isTerminal(f.status),
    // A signed upload awaiting its bytes is, in the platform's terms, not processed yet (its `bytes` are 0).
    processing_status: (f.status === AWAITING_BYTES ? 'PENDING' : f.status) as Wire<'FileResponse'>['processing_status'],
    ...(f.report !== null && { validation_report: reportOf(f.report) }),
  };
}
