/** Messages for lock events, telemetry and @nestjs/event-emitter integration. */

import { errorText } from './message.format';

export const EVENT_LISTENER_FAILED = (type: string, error: unknown) =>
  `Lock event listener threw on "${type}" (ignored): ${errorText(error)}`;

export const TELEMETRY_UNAVAILABLE = (error: unknown) =>
  `@opentelemetry/api is installed but could not be loaded (${errorText(error)}); lock spans and metrics are off. Reinstall it, or set the option telemetry: false.`;

export const EVENT_EMITTER_UNAVAILABLE = (error: unknown) =>
  `@nestjs/event-emitter is installed but could not be loaded (${errorText(error)}); lock events are not emitted on it. Reinstall it, or set the option eventEmitter: false.`;

export const EVENT_EMITTER_MISSING = () =>
  `DynamoLockModule option "eventEmitter" is true, but the app has no EventEmitter2: install @nestjs/event-emitter and import EventEmitterModule.forRoot() in the app module, or set eventEmitter to 'auto' (use it when present) or false.`;
