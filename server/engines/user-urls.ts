// Fetching a URL a caller gave (audio by URL, an evaluation's external server): the server must not become the
// caller's way into its own network. Every connection, the first and each redirect's, resolves the host and refuses
// it unless every address is a global unicast one (no loopback, private, link-local, unique-local, unspecified,
// carrier-grade NAT, multicast or reserved address, IPv4-mapped ones included), before connecting; the socket then
// connects to the addresses that were checked (net's `lookup` hook), so no second resolution can differ. A refusal
// says the same whatever the host resolved to (or whether it resolved), and comes before any connection, so neither
// its words nor its timing tell what listens there. Hosts of URL_FETCH_ALLOW_HOSTS are fetched as they are (tests,
// model servers on the operator's network). Connect and total time-outs are short (URL_FETCH_*_TIMEOUT_MS).
//
// Upstream routes of ENGINES are the operator's, not the caller's: they do not come through here.
import { type LookupAddress, lookup as resolve } from 'node:dns';
import { isIP, type LookupFunction } from 'node:net';
import ipaddr from 'ipaddr.js';
import type * as Undici from 'undici';
import type { RequestInit, Response } from 'undici';
import type { UrlFetchPolicy } from '../core/config.ts';
import { onFirstUse } from '../core/packages.ts';

/** Why a user-given URL was not fetched; `message` is safe to show its caller (it names nothing of this server's network). */
export class UserUrlError extends Error {
  constructor(
    readonly kind: 'refused' | 'connect_timeout' | 'timeout' | 'unreachable' | 'too_large',
    message: string,
  ) {
    super(message);
  }
}

/** The one refusal, whatever the host resolved to (or that it did not resolve). */
const refusal = () => new UserUrlError('refused', 'its host does not resolve to a public internet address, and this server fetches only those');

/** Whether `address` may be connected to: a global unicast address (IPv4, or IPv6 of 2000::/3), IPv4-mapped ones unwrapped. */
export function isPublicAddress(address: string): boolean {
  if (!ipaddr.isValid(address)) return false;
  const ip = ipaddr.process(address);
  if (ip.range() !== 'unicast') return false;
  return ip.kind() === 'ipv4' || ip.match(ipaddr.IPv6.parseCIDR('2000::/3'));
}

/** A URL's host as URL_FETCH_ALLOW_HOSTS lists it: lower case, an IPv6 address without brackets. */
const hostKey = (hostname: string) => hostname.toLowerCase().replace(/^\[(.*)\]$/, '$1');

/** Whether a URL's host is refused without resolving anything: an address that is not public and not allowed. */
export function refusedLiteral(url: URL, policy: UrlFetchPolicy): boolean {
  const host = hostKey(url.hostname);
  return isIP(host) !== 0 && !policy.allowHosts.includes(host) && !isPublicAddress(host);
}

/** Resolves as net would, then answers only when every address is public. */
const checkedLookup: LookupFunction = (hostname, options, callback) => {
  resolve(hostname, { ...options, all: true }, (err, addresses: LookupAddress[]) => {
    if (err || addresses.length === 0 || !addresses.every((a) => isPublicAddress(a.address))) return callback(refusal(), '', 4);
    if (options.all) return (callback as unknown as (err: null, all: LookupAddress[]) => void)(null, addresses);
    callback(null, addresses[0].address, addresses[0].family);
  });
};

// undici (1 MB of code, about 75 ms to load) is loaded with the first user-given URL, not at start.
const undici = onFirstUse<typeof Undici>('undici');

const agents = new WeakMap<UrlFetchPolicy, Undici.Agent>();

/** The connection pool of one policy: allowed hosts connect as they are; any other host only to checked addresses. */
function agentFor(policy: UrlFetchPolicy): Undici.Agent {
  let agent = agents.get(policy);
  if (agent) return agent;
  const { Agent, buildConnector } = undici();
  const open = buildConnector({ timeout: policy.connectTimeoutMs });
  const checked = buildConnector({ timeout: policy.connectTimeoutMs, lookup: checkedLookup } as Undici.buildConnector.BuildOptions);
  agent = new Agent({
    headersTimeout: policy.timeoutMs,
    bodyTimeout: policy.timeoutMs,
    connect(options, callback) {
      const host = hostKey(options.hostname);
      if (policy.allowHosts.includes(host)) return open(options, callback);
      // An address as host is never looked up by net: it is checked here.
      if (isIP(host) !== 0 && !isPublicAddress(host)) return callback(refusal(), null);
      return checked(options, callback);
    },
  });
  agents.set(policy, agent);
  return agent;
}

/** What an error of the fetch was, from its causes: our refusal, or one of undici's time-outs. */
function causeOf(err: unknown): UserUrlError | 'connect_timeout' | 'timeout' | undefined {
  for (let e = err as { cause?: unknown; code?: string } | undefined, depth = 0; e && depth < 5; e = e.cause as typeof e, depth++) {
    if (e instanceof UserUrlError) return e;
    if (e.code === 'UND_ERR_CONNECT_TIMEOUT') return 'connect_timeout';
    if (e.code === 'UND_ERR_HEADERS_TIMEOUT' || e.code === 'UND_ERR_BODY_TIMEOUT') return 'timeout';
  }
  return undefined;
}

/**
 * Fetches a user-given URL under `policy`, redirects followed (each one checked). Answers the response (any status:
 * the caller decides); its body must be read within the total time-out too. Throws a UserUrlError otherwise.
 */
export async function fetchUserUrl(url: URL | string, init: RequestInit, policy: UrlFetchPolicy): Promise<Response> {
  const timeout = AbortSignal.timeout(policy.timeoutMs);
  const signal = init.signal ? AbortSignal.any([init.signal, timeout]) : timeout;
  try {
    const dispatcher = agentFor(policy);
    return await undici().fetch(url, { ...init, signal, redirect: 'follow', dispatcher });
  } catch (err) {
    const cause = causeOf(err);
    if (cause instanceof UserUrlError) throw cause;
    if (cause === 'connect_timeout') throw new UserUrlError('connect_timeout', `it did not accept a connection within ${policy.connectTimeoutMs / 1000} s`);
    if (cause === 'timeout' || timeout.aborted) throw new UserUrlError('timeout', `it did not answer within ${policy.timeoutMs / 1000} s`);
    if (init.signal?.aborted) throw err;
    throw new UserUrlError('unreachable', 'it could not be reached');
  }
}

/** A download's refusals, in the caller's words (its field, its limit). */
export interface DownloadRefusals {
  unreachable: (why: string) => Error;
  tooLarge: () => Error;
}

/**
 * Downloads a user-given URL under `policy`, handing its body to `sink` a chunk at a time: refused (`refuse`) when it
 * cannot be fetched or does not answer 2xx, when its `Content-Length` is over `limit`, and stopped as soon as more
 * than `limit` bytes have arrived, so nothing larger is ever held. Answers the bytes read.
 */
export async function downloadUserUrl(
  url: URL,
  policy: UrlFetchPolicy,
  limit: number,
  refuse: DownloadRefusals,
  sink: (chunk: Uint8Array) => unknown,
): Promise<number> {
  const controller = new AbortController();
  let res: Response;
  try {
    res = await fetchUserUrl(url, { signal: controller.signal }, policy);
  } catch (err) {
    if (err instanceof UserUrlError) throw refuse.unreachable(err.message);
    throw err;
  }
  if (!res.ok || !res.body) {
    controller.abort();
    throw refuse.unreachable(`it answered ${res.status}`);
  }
  const declared = Number(res.headers.get('content-length'));
  if (Number.isFinite(declared) && declared > limit) {
    controller.abort();
    throw refuse.tooLarge();
  }
  let bytes = 0;
  let sinkFailed: unknown;
  try {
    for await (const chunk of res.body) {
      bytes += chunk.length;
      if (bytes > limit) break;
      try {
        await sink(chunk);
      } catch (err) {
        sinkFailed = err;
        throw err;
      }
    }
  } catch (err) {
    controller.abort();
    if (sinkFailed) throw err;
    throw refuse.unreachable(`it could not be read whole (the connection failed, or the download took over ${policy.timeoutMs / 1000} s)`);
  }
  if (bytes > limit) {
    controller.abort();
    throw refuse.tooLarge();
  }
  return bytes;
}

/** Reads a response's body as text, at most `limit` bytes (then throws a UserUrlError): an answer never fills the memory. */
export async function readCapped(body: AsyncIterable<Uint8Array> | null, limit: number): Promise<string> {
  const chunks: Uint8Array[] = [];
  let bytes = 0;
  // Leaving the loop early cancels the stream.
  for await (const chunk of body ?? []) {
    bytes += chunk.length;
    if (bytes > limit) throw new UserUrlError('too_large', `its answer is larger than ${limit} bytes`);
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}
