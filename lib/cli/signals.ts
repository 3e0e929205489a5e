/** The signals the CLI handles: they interrupt a wait, and `exec` forwards them to its command. */
export const HANDLED_SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;

/** One of {@link HANDLED_SIGNALS}. */
export type HandledSignal = (typeof HANDLED_SIGNALS)[number];

/**
 * Calls `handler` on each of {@link HANDLED_SIGNALS} instead of letting it end the process.
 * @returns a function that removes the handlers again.
 */
export function onSignals(handler: (signal: HandledSignal) => void): () => void {
  const listeners = HANDLED_SIGNALS.map((signal) => {
    const listener = () => handler(signal);
    process.on(signal, listener);
    return [signal, listener] as const;
  });
  return () => {
    for (const [signal, listener] of listeners) process.removeListener(signal, listener);
  };
}
