// Module `experiments`: the rules an A/B experiment's members and a shadow experiment's sampling must meet (the
// tag's **A/B experiments** and **Shadow experiments**), each a 400 naming the offending field.
import { badRequest } from '../../core/errors.ts';
import type { Wire } from '../types.ts';

export type Member = Wire<'ABExperimentMember'>;
export type Sampling = Wire<'ShadowSampling'>;

export const CONTROL = 'AB_EXPERIMENT_MEMBER_ROLE_CONTROL';

/** Longest name, in characters (as the platform's): names are held in unique indexes. */
export const MAX_NAME_LENGTH = 256;
export const MAX_MEMBERS = 20;

/** A name is a string of 1 to 256 characters that is not only spaces. */
export function checkName(name: string, param = 'name'): string {
  if (name.trim() === '' || [...name].length > MAX_NAME_LENGTH) {
    throw badRequest(`'${param}' must be a name of 1 to ${MAX_NAME_LENGTH} characters, not only spaces.`, param, 'invalid_name');
  }
  return name;
}

/**
 * 2 to 20 members, deployments of the endpoint (`deploymentIds`) each named once, percents from 1 to 100 adding
 * up to 100, exactly one control.
 */
export function checkMembers(members: Member[], deploymentIds: Set<string>): Member[] {
  const seen = new Set<string>();
  members.forEach((m, i) => {
    const at = `members.${i}`;
    if (!deploymentIds.has(m.deploymentId)) {
      throw badRequest(`'${m.deploymentId}' is not a deployment of this endpoint.`, `${at}.deploymentId`, 'unknown_deployment');
    }
    if (seen.has(m.deploymentId)) throw badRequest(`Deployment '${m.deploymentId}' is named twice.`, `${at}.deploymentId`, 'duplicate_deployment');
    seen.add(m.deploymentId);
    if (m.percent < 1 || m.percent > 100) throw badRequest(`A member's percent is from 1 to 100, not ${m.percent}.`, `${at}.percent`, 'invalid_percent');
  });
  const controls = members.filter((m) => m.role === CONTROL).length;
  if (controls !== 1 || members.length < 2 || members.length > MAX_MEMBERS) {
    throw badRequest(
      `An A/B experiment has 2 to ${MAX_MEMBERS} members, exactly one of them AB_EXPERIMENT_MEMBER_ROLE_CONTROL (it has ${members.length}, ${controls} of them control).`,
      'members',
      'invalid_members',
    );
  }
  const sum = members.reduce((s, m) => s + m.percent, 0);
  if (sum !== 100) throw badRequest(`The members' percents add up to ${sum}; they must add up to 100.`, 'members', 'invalid_percent');
  return members;
}

const WINDOW_DEFAULT_S = 60;
const WINDOW_MAX_S = 3600;

/** Seconds of a `"<n>s"` duration. */
export const windowSeconds = (window: string | undefined) => (window === undefined ? WINDOW_DEFAULT_S : Number(window.slice(0, -1)));

/** Checks a sampling's values (the schema has checked its form). */
export function checkSampling(s: Sampling, param = 'source.endpoint.sampling'): Sampling {
  const bad = (field: string, why: string) => badRequest(why, `${param}.${field}`, 'invalid_sampling');
  const rate = (form: string, r: number) => {
    if (!(r >= 0 && r <= 1)) throw bad(`${form}.rate`, `'rate' is a fraction from 0 to 1, not ${r}.`);
  };
  const key = (form: string, k: string) => {
    if (k.trim() === '' || k.split('.').some((part) => part === ''))
      throw bad(`${form}.key`, `'key' is a dotted path into the request body (e.g. user), not '${k}'.`);
  };
  const adaptive = (form: string, a: { targetQps: number; window?: string }) => {
    if (!(a.targetQps > 0)) throw bad(`${form}.targetQps`, `'targetQps' must be above 0, not ${a.targetQps}.`);
    const w = windowSeconds(a.window);
    if (!(w >= 1 && w <= WINDOW_MAX_S)) throw bad(`${form}.window`, `'window' is from 1s to ${WINDOW_MAX_S}s, not '${a.window}'.`);
  };
  if ('uniform' in s) rate('uniform', s.uniform.rate);
  else if ('keyBased' in s) {
    rate('keyBased', s.keyBased.rate);
    key('keyBased', s.keyBased.key);
  } else if ('adaptiveUniform' in s) adaptive('adaptiveUniform', s.adaptiveUniform);
  else {
    adaptive('adaptiveKeyBased', s.adaptiveKeyBased);
    key('adaptiveKeyBased', s.adaptiveKeyBased.key);
  }
  return s;
}
