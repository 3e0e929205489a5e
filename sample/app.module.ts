import { type DynamicModule, Module } from '@nestjs/common';
import { ConfigModule, ConfigService } from '@nestjs/config';
import { EventEmitterModule } from '@nestjs/event-emitter';
import { ScheduleModule } from '@nestjs/schedule';
import { DynamoLockModule } from 'nestjs-dynamo-lock';
import { LockAuditListener } from './audit/lock-audit.listener';
import { InvoicesModule } from './invoices/invoices.module';
import { ReportsModule } from './reports/reports.module';
import { INSTANCE_NAME } from './support/instance-name';

/**
 * The sample application. `instance` names this copy of the app in logs and lock owners. The
 * copies share their locks (table `DYNAMO_LOCK_TABLE`) and their invoices (`SAMPLE_INVOICE_TABLE`)
 * through DynamoDB, as copies of one app on separate hosts would.
 */
@Module({})
export class AppModule {
  static forInstance(instance: string): DynamicModule {
    return {
      module: AppModule,
      imports: [
        ConfigModule.forRoot({ ignoreEnvFile: true }),
        ScheduleModule.forRoot(),
        // Lock events arrive as `dynamo-lock.<type>` (see LockAuditListener).
        EventEmitterModule.forRoot(),
        DynamoLockModule.forRootAsync({
          imports: [ConfigModule],
          inject: [ConfigService],
          useFactory: (config: ConfigService) => ({
            tableName: config.get('DYNAMO_LOCK_TABLE', 'sample-locks'),
            leaseDuration: config.get('LOCK_LEASE', '10s'),
            createTable: true,
            ownerName: `sample-${instance}:${process.pid}`,
            clientConfig: { endpoint: config.get('DYNAMODB_ENDPOINT') },
          }),
        }),
        InvoicesModule,
        ReportsModule,
      ],
      providers: [{ provide: INSTANCE_NAME, useValue: instance }, LockAuditListener],
      exports: [INSTANCE_NAME],
      global: true,
    };
  }
}
