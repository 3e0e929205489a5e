import { Module } from '@nestjs/common';
import { ReportJob } from './report.job';

@Module({ providers: [ReportJob] })
export class ReportsModule {}
