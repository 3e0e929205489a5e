/** Messages for leadership campaigns: lead() options, elections ended, retries, listeners. */

import { describe, truncate, errorText } from './message.format';

export const LEAD_OPTION_INVALID = (name: string, option: string, expected: string, value: unknown) =>
  `lead('${truncate(name)}') option "${option}" must be ${expected}; got ${describe(value)}.`;

export const LEAD_WATCH_ABOVE_LEASE = (name: string, watchMs: number, leaseMs: number) =>
  `lead('${truncate(name)}'): watchInterval (${watchMs} ms) must not be longer than the lease (${leaseMs} ms): followers would notice a dead or departed leader only after more than a lease. A third of the lease is the default.`;

export const LEAD_CONFLICT = (name: string, option: string) =>
  `lead('${truncate(name)}'): this process already campaigns for "${truncate(name)}" with another ${option}. One campaign per name runs in a process (lead() and @WhenLeader share it): pass the same options everywhere, or none after the first call.`;

export const LEADERSHIP_ENDED = (name: string) =>
  `The campaign for leadership "${truncate(name)}" has ended (resign() or shutdown): it will not be elected again. Call lead('${truncate(name)}') to campaign anew.`;

export const LEADERSHIP_NOT_LEADING = (name: string) => `This instance does not lead "${truncate(name)}" now.`;

export const LEADERSHIP_RETRY = (name: string, error: unknown, delayMs: number) =>
  `Campaign for leadership "${truncate(name)}" failed to reach DynamoDB (${errorText(error)}); trying again in ${Math.round(delayMs)} ms.`;

export const LEADERSHIP_LISTENER_FAILED = (name: string, kind: 'onElected' | 'onRevoked', error: unknown) =>
  `An ${kind} listener of leadership "${truncate(name)}" threw (${errorText(error)}); ignored, the campaign goes on.`;
