// How often a crashed server is restarted. Pure.

/** Allows at most `max` restarts in any `windowMs`; past that the server stays down. */
export class RestartPolicy {
  private times: number[] = [];

  constructor(
    readonly max = 3,
    readonly windowMs = 3 * 60_000,
  ) {}

  /** Call when the connection closed; true: restart now (and count it), false: give up. */
  allow(now: number = Date.now()): boolean {
    this.times = this.times.filter((t) => now - t < this.windowMs);
    if (this.times.length >= this.max) {
      return false;
    }
    this.times.push(now);
    return true;
  }

  reset(): void {
    this.times = [];
  }
}
