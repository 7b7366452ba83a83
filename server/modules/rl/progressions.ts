// The runner's steps that move the three machines of reinforcement learning (machine.ts): resources provisioned and
// stopped, a session started, expired and stopped, an operation run by the engine and settled (operations.ts).
import type { RlOperation, RlSession } from '../../../generated/prisma/sqlite/client/client.ts';
import { instant } from '../../core/clock.ts';
import { duration } from '../../core/config.ts';
import { type Progression, transition } from '../../runner/progress.ts';
import type { Services } from '../types.ts';
import {
  type OperationStatus,
  operations,
  type ResourcesStatus,
  type resourcesMachine,
  resourcesRows,
  type SessionStatus,
  sessionMachine,
  sessions,
} from './machine.ts';
import {
  abandonPending,
  hasRunning,
  lockSession,
  type Ran,
  runOperation,
  type Started,
  sessionRow,
  settleOperation,
  startNext,
  startSession,
} from './operations.ts';

const R = 'MODEL_RESOURCES_STATUS_';
const S = 'TRAINING_SESSION_STATUS_';
const O = 'TRAINING_OPERATION_STATUS_';

export function resourcesProgression(services: Services): Progression<ResourcesStatus> {
  const move = (event: (typeof resourcesMachine.events)[number]) => async (tx: Parameters<Progression<ResourcesStatus>['giveUp'] & {}>[0], id: string) => {
    await transition(tx, services, resourcesRows, await tx.rlModelResources.findUniqueOrThrow({ where: { id } }), event);
  };
  return {
    stored: resourcesRows,
    steps: { [`${R}PENDING`]: move('provision'), [`${R}CREATING`]: move('ready'), [`${R}STOPPING`]: move('stopped') },
    failure: {
      events: ['fail'],
      fail: (tx, r, event, error) =>
        transition(tx, services, resourcesRows, r, event as 'fail', {
          data: { errorCode: error.code, errorMessage: error.message, erroredAt: instant(services.clock) },
        }),
    },
  };
}

/** Fails a session with `code`: its waiting operations fail too. */
async function failSession(tx: Parameters<typeof transition>[0], services: Services, s: RlSession, code: string, message: string) {
  await abandonPending(tx, services, s.id, 'TRAINING_OPERATION_ERROR_CODE_SESSION_NOT_ACTIVE', `Training session '${s.id}' failed: ${message}`);
  return transition(tx, services, sessions, s, 'fail', { data: { errorCode: code, errorMessage: message, erroredAt: instant(services.clock) } });
}

export function sessionProgression(services: Services): Progression<SessionStatus> {
  return {
    stored: sessions,
    steps: {
      // Starts once the resources are READY: the engine makes the model (or loads the checkpoint resumed from).
      [`${S}CREATING`]: {
        work: (id: string) => startSession(services, id),
        async apply(tx, id, started: Started) {
          // The session's lock before its row is written, as a submission takes them (settleOperation says why).
          await lockSession(tx, services, id);
          const s = await sessionRow(tx, id);
          if (started.kind === 'wait') return 'wait';
          if (started.kind === 'failed') {
            await failSession(tx, services, s, started.code, started.message);
            return;
          }
          await transition(tx, services, sessions, s, 'start', {
            data: { trainer: started.trainer, sampler: started.sampler, stateVersion: 1, step: started.step, weightsVersion: started.step },
          });
          // The operations that waited for the session run now, in order.
          await startNext(tx, services, id);
        },
      },
      // Expires once no operation has been submitted for the idle duration (checked every that long) and none runs.
      [`${S}RUNNING`]: async (tx, id) => {
        await lockSession(tx, services, id);
        const s = await sessionRow(tx, id);
        const idle = duration(services.config, 'rl_session_idle', 3_600_000);
        if (services.clock.now() - Number(s.lastActivityAt) < idle || (await hasRunning(tx, id))) return 'wait';
        await abandonPending(tx, services, id, 'TRAINING_OPERATION_ERROR_CODE_SESSION_NOT_ACTIVE', `Training session '${id}' expired.`);
        await transition(tx, services, sessions, s, 'expire');
      },
      // Stops once the operation in hand (if any) has finished: nothing a caller was told is running is cut short.
      [`${S}STOPPING`]: async (tx, id) => {
        await lockSession(tx, services, id);
        if (await hasRunning(tx, id)) return 'wait';
        await transition(tx, services, sessions, await sessionRow(tx, id), 'stopped');
      },
    },
    failure: {
      events: ['fail'],
      fail: (tx, s, _event, error) => failSession(tx, services, s, 'TRAINING_SESSION_ERROR_CODE_SESSION_FAILED', error.message),
    },
    giveUp: async (tx, id, error) => {
      const s = await sessionRow(tx, id);
      if (sessionMachine.can(s.status, 'fail')) await failSession(tx, services, s, 'TRAINING_SESSION_ERROR_CODE_SESSION_FAILED', error.slice(0, 500));
    },
  };
}

export function operationProgression(services: Services): Progression<OperationStatus> {
  return {
    stored: operations,
    steps: {
      [`${O}RUNNING`]: {
        work: (_id: string, row: RlOperation) => runOperation(services, row),
        apply: (tx, _id, ran: Ran, row: RlOperation) => settleOperation(tx, services, row, ran),
      },
    },
    failure: {
      events: ['fail'],
      fail: (tx, op, _event, error) =>
        settleOperation(tx, services, op, { kind: 'failed', code: 'TRAINING_OPERATION_ERROR_CODE_INTERNAL_ERROR', message: error.message }),
    },
    giveUp: async (tx, id, error) => {
      const op = await tx.rlOperation.findUniqueOrThrow({ where: { id } });
      if (op.status === `${O}RUNNING`)
        await settleOperation(tx, services, op, { kind: 'failed', code: 'TRAINING_OPERATION_ERROR_CODE_INTERNAL_ERROR', message: error.slice(0, 500) });
    },
  };
}
