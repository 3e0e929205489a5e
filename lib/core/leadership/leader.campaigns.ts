import { LockValidationError } from '../../errors/lock.errors';
import { LEAD_CONFLICT } from '../../errors/lock.messages';
import { toStoredKey } from '../../utils/lock-key.validation';
import type { Lock } from '../engine/lock';
import type { LockEvents } from '../engine/lock.events';
import type { ResolvedLockOptions } from '../engine/lock-options.resolver';
import type { KeyView } from '../mutex/key.watcher';
import { type CampaignHost, LeaderCampaign } from './leader-campaign';
import { type LeadOptions, resolveLeadOptions } from './lead-options';
import { createLeadership, type Leadership } from './leadership';

/** What the campaigns need of their manager: its mutex, seen through one attempt and one read. */
export interface CampaignsContext {
  readonly options: ResolvedLockOptions;
  readonly events: LockEvents;
  /** One attempt at a lock (a lease this process saw stall for a whole lease is passed). */
  tryAcquire(name: string, leaseMs: number, data: unknown): Promise<Lock | null>;
  /** One read of a key held elsewhere (mutex form), noted in the key's history. */
  watch(storedKey: string): Promise<KeyView>;
  releaseQuietly(lock: Lock): Promise<void>;
  /** @throws LockValidationError when a caller of this process uses the key through another primitive. */
  assertMutex(name: string, storedKey: string): void;
}

/**
 * The leaderships a manager campaigns for (`lead()`): one {@link LeaderCampaign} per name in a
 * process, behind one `Leadership` handle. Leadership adds no primitive: a leader holds a mutex.
 */
export class LeaderCampaigns {
  /** The campaign this process runs per leadership (stored key), with its handle. */
  private readonly campaigns = new Map<string, { campaign: LeaderCampaign; handle: Leadership }>();
  private readonly host: CampaignHost;

  constructor(private readonly context: CampaignsContext) {
    const { options, events } = context;
    this.host = {
      logger: options.logger,
      tryAcquire: ({ name, leaseMs, data }) => context.tryAcquire(name, leaseMs, data),
      watch: (name) => context.watch(toStoredKey(name, options.keyPrefix)),
      releaseQuietly: (lock) => context.releaseQuietly(lock),
      ended: (campaign) => {
        const storedKey = toStoredKey(campaign.settings.name, options.keyPrefix);
        if (this.campaigns.get(storedKey)?.campaign === campaign) this.campaigns.delete(storedKey);
      },
      emit: (event) => events.emit(event),
    };
  }

  /**
   * The campaign for `name`: a new one, or the running one with the listeners of `options` added.
   * @throws LockValidationError for a bad name or option, a key this process uses as another
   *   primitive, or options that differ from the running campaign's.
   */
  lead(name: string, options: LeadOptions | undefined): Leadership {
    const settings = resolveLeadOptions(name, options, this.context.options);
    const storedKey = toStoredKey(name, this.context.options.keyPrefix);
    // A key this process uses as another primitive cannot be led (a leader holds its mutex).
    this.context.assertMutex(name, storedKey);
    let running = this.campaigns.get(storedKey);
    if (running) {
      const current = running.campaign.settings;
      const conflict =
        options?.leaseDuration !== undefined && settings.leaseMs !== current.leaseMs
          ? 'leaseDuration'
          : options?.watchInterval !== undefined && settings.watchMs !== current.watchMs
            ? 'watchInterval'
            : options?.data !== undefined && settings.dataJson !== current.dataJson
              ? 'data'
              : undefined;
      if (conflict) throw new LockValidationError(LEAD_CONFLICT(name, conflict));
    } else {
      const campaign = new LeaderCampaign(this.host, settings);
      running = { campaign, handle: createLeadership(campaign) };
      this.campaigns.set(storedKey, running);
    }
    if (options?.onElected) running.campaign.onElected(options.onElected);
    if (options?.onRevoked) running.campaign.onRevoked(options.onRevoked);
    return running.handle;
  }

  /** Stops every campaign's watching (their leaders' locks are released with every held lock). */
  stop(): Promise<void>[] {
    const campaigns = [...this.campaigns.values()].map(({ campaign }) => campaign);
    for (const campaign of campaigns) campaign.stop();
    return campaigns.map((campaign) => campaign.done);
  }
}
