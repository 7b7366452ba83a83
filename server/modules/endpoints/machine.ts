// The v1 endpoint's state machine. v1 is retired: a running endpoint keeps serving until it is stopped, and nothing
// starts again on v1. A PATCH asks for a state: asking for the current one changes nothing; STOPPED is the `stop`
// event; STARTED is the `start` event, which no state allows and which is refused with the requirement's own 403.
import { forbidden } from '../../core/errors.ts';
import { defineMachine } from '../../core/machine.ts';

export const v1Disabled = () =>
  forbidden(
    'Creating or restarting v1 dedicated endpoints is no longer possible. This is not a permissions problem: deploy on v2 ' +
      'instead, e.g. POST /v2/projects/{projectId}/deploy with an endpoint name, a model, a config and replica counts.',
    'endpoints_v1_create_access_disabled',
  );

export const v1EndpointMachine = defineMachine({
  name: 'v1 endpoint',
  kind: 'v1_endpoint',
  states: ['PENDING', 'STARTING', 'STARTED', 'STOPPING', 'STOPPED', 'ERROR'],
  events: ['start', 'stop'],
  terminal: [],
  transitions: {
    STARTED: { stop: 'STOPPED' },
    ERROR: { stop: 'STOPPED' },
  },
  refusals: { start: () => v1Disabled() },
});

export type V1State = (typeof v1EndpointMachine.states)[number];

/** The event a PATCH's requested state is, or null when it asks for the state the endpoint is in. */
export function requestedEvent(current: string, requested: 'STARTED' | 'STOPPED'): 'start' | 'stop' | null {
  if (current === requested) return null;
  return requested === 'STARTED' ? 'start' : 'stop';
}
