import { Inject, Injectable, Logger } from '@nestjs/common';
import { Cron } from '@nestjs/schedule';
import { LockService, WithLock } from 'nestjs-dynamo-lock';
import { INSTANCE_NAME } from '../support/instance-name';

/**
 * A scheduled job that must run once per tick across all instances: every instance's timer
 * fires, one takes the lock and runs, the others skip without a word above debug level.
 */
@Injectable()
export class ReportJob {
  private readonly logger = new Logger(ReportJob.name);
  /** Ticks this instance ran (read by the e2e test). */
  readonly runs: Date[] = [];

  constructor(
    private readonly locks: LockService,
    @Inject(INSTANCE_NAME) private readonly instance: string,
  ) {}

  @Cron(process.env.SAMPLE_REPORT_CRON ?? '*/5 * * * * *', { name: 'report' })
  @WithLock('report', { onBusy: 'skip' })
  async run(): Promise<void> {
    const lock = this.locks.current('report')!;
    this.runs.push(new Date());
    this.logger.log(`Instance ${this.instance} ran the report tick (fencing token ${lock.fencingToken})`);
  }
}
