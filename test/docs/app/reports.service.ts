import { Injectable } from '@nestjs/common';

/** Stands for the app's report sender in the README's cron snippet (`./reports.service`). */
@Injectable()
export class ReportsService {
  async send(): Promise<void> {}
}
