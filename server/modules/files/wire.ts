// Module `files`: rows -> wire shapes.
import type { File } from '../../../generated/prisma/sqlite/client/client.ts';
import { unixSeconds } from '../../core/clock.ts';
import type { Wire } from '../types.ts';
import { fileMachine } from './machine.ts';

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
    processing_status: f.status as Wire<'FileResponse'>['processing_status'],
    ...(f.report !== null && { validation_report: JSON.parse(f.report) }),
  };
}
