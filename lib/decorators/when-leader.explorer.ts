import { Injectable, type OnApplicationBootstrap } from '@nestjs/common';
import { DiscoveryService } from '@nestjs/core';
import { lockServiceMissing, lockServiceOf, WHEN_LEADER_METHODS } from './lock-service.injection';
import { leadershipOf, type WhenLeaderMethod } from './when-leader.decorator';

/**
 * At application bootstrap, starts the campaign of every leadership a `@WhenLeader` method of a
 * provider or controller names (one per name, shared), so that a leader is elected before the
 * first scheduled tick; fails the boot, naming the class, when Nest could not inject a
 * `LockService` into it, or when two methods ask for the same name with different options. The
 * campaigns end at shutdown, when the lock service closes (releasing the leadership).
 */
@Injectable()
export class WhenLeaderExplorer implements OnApplicationBootstrap {
  constructor(private readonly discovery: DiscoveryService) {}

  /** @internal */
  onApplicationBootstrap(): void {
    for (const wrapper of [...this.discovery.getProviders(), ...this.discovery.getControllers()]) {
      const instance: unknown = wrapper.instance;
      if (!instance || typeof instance !== 'object' || !wrapper.isDependencyTreeStatic() || wrapper.isTransient) continue;
      const methods = Reflect.getMetadata(WHEN_LEADER_METHODS, instance.constructor) as WhenLeaderMethod[] | undefined;
      if (!methods?.length) continue;
      const service = lockServiceOf(instance);
      if (!service) throw lockServiceMissing(instance.constructor);
      for (const { name, options } of methods) {
        // Each method's options are checked against the campaign of its name (one per process).
        service.lead(name, options);
        leadershipOf(instance, service, name, options);
      }
    }
  }
}
