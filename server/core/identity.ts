// Who a request is: what its API key resolves to. Keys are stored only as their SHA-256 (a fast hash is right for
// 256 bits of randomness: there is nothing to brute-force).
import { hash } from 'node:crypto';

/** Who a request is, as resolved from its key: everything whoami reports, and the project every lookup is scoped to. */
export interface Identity {
  apiKeyId: string;
  projectId: string;
  projectName: string;
  projectSlug: string;
  organizationId: string;
  organizationName: string;
}

// (crypto.hash: the one-shot digest, a third of createHash's cost on a short string.)
export const hashKey = (secret: string) => hash('sha256', secret, 'hex');
