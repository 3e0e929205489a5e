import type { LockKeyTemplate } from './lock-key.template';

/**
 * The key templates of a multi-key `@WithLock(['account-<0>', 'account-<1>'])`: each checked as a
 * single template is (at class definition, and against the key prefix at boot); a call renders
 * them all, and the lock manager orders and deduplicates the keys.
 */
export class LockKeyTemplates {
  constructor(private readonly templates: readonly LockKeyTemplate[]) {}

  /** The templates as written. */
  get template(): string {
    return this.templates.map((one) => one.template).join(', ');
  }

  /** @throws LockConfigurationError when every key from one of the templates would be too long with the prefix. */
  checkPrefix(keyPrefix: string, suffixBytes = 0): void {
    for (const one of this.templates) one.checkPrefix(keyPrefix, suffixBytes);
  }

  /** The keys of one call's arguments, in the templates' order. @throws LockKeyError as a single template's render does. */
  render(args: readonly unknown[]): string[] {
    return this.templates.map((one) => one.render(args));
  }
}
