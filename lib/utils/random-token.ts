import { randomBytes } from 'node:crypto';

/**
 * An unguessable token from the CSPRNG (128 bits, hex). Used for owner tokens and record
 * version numbers, so no other client can forge a condition that matches ours. Hex, so a lease
 * id never starts with `-` and survives any shell or argument parser.
 */
export function randomToken(): string {
  return randomBytes(16).toString('hex');
}
