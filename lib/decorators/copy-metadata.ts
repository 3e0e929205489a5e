/**
 * Copies every `Reflect` metadata entry of `from` onto `to`, so decorators applied before a
 * wrapping decorator (`@Cron`, `@Get`, `@UseInterceptors`, Swagger...) still find their metadata
 * on the wrapper. Entries already on `to` win.
 */
export function copyMetadata(from: object, to: object): void {
  for (const key of Reflect.getOwnMetadataKeys(from)) {
    if (!Reflect.hasOwnMetadata(key, to)) Reflect.defineMetadata(key, Reflect.getOwnMetadata(key, from), to);
  }
}
