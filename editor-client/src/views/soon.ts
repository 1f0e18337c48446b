// One call for a burst of triggers: run statuses come in bursts while an agent works, and what
// the views show is refreshed once per burst, never on a timer of its own.

/** Run statuses and file events within this many ms make one refresh of a view. */
export const REFRESH_MS = 250;

/** A trigger that runs `fn` once, `ms` after the first call of a burst; `cancel` drops a pending run. */
export function coalesced(fn: () => void, ms: number): { (): void; cancel(): void } {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const trigger = (): void => {
    if (timer === undefined) {
      timer = setTimeout(() => {
        timer = undefined;
        fn();
      }, ms);
    }
  };
  trigger.cancel = (): void => {
    if (timer !== undefined) {
      clearTimeout(timer);
      timer = undefined;
    }
  };
  return trigger;
}
