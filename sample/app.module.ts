import { type DynamicModule, Module } from '@nestjs/common';
import { ConfigModule, ConfigService } from '@nestjs/config';
import { EventEmitterModule } from '@nestjs/event-emitter';
import { ScheduleModule } from '@nestjs/schedule';
import { DynamoLockModule } from 'nestjs-dynamo-lock';
import { LockAuditListener } from './audit/lock-audit.listener';
import { InvoiceDatabase } from './invoices/invoice.database';
import { InvoicesModule } from './invoices/invoices.module';
import { ReportsModule } from './reports/reports.module';
import { INSTANCE_NAME } from './support/instance-name';

/**
 * The sample application. `instance` names this copy of the app in logs and lock owners;
 * `database` is the one all copies share (each gets its own without it).
 */
@Module({})
export class AppModule {
  static forInstance(instance: string, database = new InvoiceDatabase()): DynamicModule {
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
      providers: [{ provide: INSTANCE_NAME, useValue: instance }, { provide: InvoiceDatabase, useValue: database }, LockAuditListener],
      exports: [INSTANCE_NAME, InvoiceDatabase],
      global: true,
    };
  }
}
