// Module `files`: rows -> wire shapes.
import type { File } from '../../../generated/prisma/sqlite/client/client.ts';
import { unixSeconds } from '../../core/clock.ts';
import type { Wire } from '../types.ts';
import { AWAITING_BYTES, fileMachine } from './machine.ts';

export function fileWire(f: File): Wire<'FileResponse'> {
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
    ...(f.report !== null && { validation_report: JSON.parse(f.report) }),
  };
}
