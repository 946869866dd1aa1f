/**
 * Per-hub admission on one edge process: requests and upgraded connections in progress are counted per hub, and a
 * hub at its limit is answered 503 while every other hub is served as before, so one tenant's flood (or a target
 * that never answers) cannot take the edge's sockets and memory from the rest.
 */
export class HubLimiter {
  /** In progress per hub: one object per busy hub, changed in place (one Map look-up per enter and per leave). */
  private readonly inFlight = new Map<string, { n: number }>();

  constructor(private readonly max: number) {}

  /** Counts one more for `hubId`; false (nothing counted) when the hub is at its limit. */
  enter(hubId: string): boolean {
    const count = this.inFlight.get(hubId);
    if (!count) {
      if (this.max < 1) return false;
      this.inFlight.set(hubId, { n: 1 });
      return true;
    }
    if (count.n >= this.max) return false;
    count.n++;
    return true;
  }

  leave(hubId: string): void {
    const count = this.inFlight.get(hubId);
    if (!count) return;
    if (--count.n <= 0) this.inFlight.delete(hubId);
  }
}
