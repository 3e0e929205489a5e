/**
 * The catalogue of every message a user of the library can see is the folder `./messages/`, one
 * file per topic; errors and log lines call those functions, and nothing else builds user-facing
 * text. This barrel re-exports the whole catalogue: code imports messages from here.
 */

export * from './messages/acquire.messages';
export * from './messages/decorators.messages';
export * from './messages/fencing.messages';
export * from './messages/jobs.messages';
export * from './messages/lease.messages';
export * from './messages/leadership.messages';
export * from './messages/observability.messages';
export * from './messages/multi.messages';
export * from './messages/options.messages';
export * from './messages/read.messages';
export * from './messages/semaphore.messages';
export * from './messages/table.messages';
export * from './messages/template.messages';
export { describe, shownErrorName } from './messages/message.format';
