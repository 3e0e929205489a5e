/** Stands for the app's alerting in the README's `onEvent` snippet (`./alerts`). */
export function pageOnCall(_message: string): void {}
