import { ConfigurableModuleBuilder } from '@nestjs/common';
import type { DynamoLockOptions } from './interfaces/dynamo-lock-options.interface';

/** Extra options of `forRoot()` / `forRootAsync()` that shape the module itself. */
export interface DynamoLockModuleExtras {
  /** Register the module globally (default `true`); `false` makes it visible only where imported. */
  isGlobal?: boolean;
}

export const {
  ConfigurableModuleClass: ConfigurableDynamoLockModule,
  MODULE_OPTIONS_TOKEN: DYNAMO_LOCK_OPTIONS,
  OPTIONS_TYPE: DYNAMO_LOCK_OPTIONS_TYPE,
  ASYNC_OPTIONS_TYPE: DYNAMO_LOCK_ASYNC_OPTIONS_TYPE,
} = new ConfigurableModuleBuilder<DynamoLockOptions>({ moduleName: 'DynamoLock' })
  .setClassMethodName('forRoot')
  .setFactoryMethodName('createDynamoLockOptions')
  .setExtras<DynamoLockModuleExtras>({ isGlobal: true }, (definition, extras) => ({ ...definition, global: extras.isGlobal }))
  .build();
