import { randomBytes } from 'node:crypto';

/**
 * An unguessable token from the CSPRNG (128 bits, base64url). Used for owner tokens
 * and record version numbers, so no other client can forge a condition that matches ours.
 */
export function randomToken(): string {
  return randomBytes(16).toString('base64url');
}
