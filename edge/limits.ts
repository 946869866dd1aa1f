/**
 * Per-hub admission on one edge process: requests and upgraded connections in progress are counted per hub, and a
 * hub at its limit is answered 503 while every other hub is served as before, so one tenant's flood (or a target
 * that never answers) cannot take the edge's sockets and memory from the rest.
 */
export class HubLimiter {
  private readonly inFlight = new Map<string, number>();

  constructor(private readonly max: number) {}

  /** Counts one more for `hubId`; false (nothing counted) when the hub is at its limit. */
  enter(hubId: string): boolean {
    const n = this.inFlight.get(hubId) ?? 0;
    if (n >= this.max) return false;
    this.inFlight.set(hubId, n + 1);
    return true;
  }

  leave(hubId: string): void {
    const n = (this.inFlight.get(hubId) ?? 1) - 1;
    if (n <= 0) this.inFlight.delete(hubId);
    else this.inFlight.set(hubId, n);
  }

  current(hubId: string): number {
    return this.inFlight.get(hubId) ?? 0;
  }
}
