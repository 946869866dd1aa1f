/**
 * Revocation that reaches open connections. A client connection that carried a request for a share with access
 * rules (mutual TLS, login) or that was upgraded (WebSocket) is watched with the rule that admitted it; every
 * second, and at once after an access change, each rule is asked again against the current routes and
 * certificates, and a connection whose answer is now "no" (certificate deleted, session email no longer allowed,
 * share deleted or moved) is closed. Requests that arrive later are checked on their own anyway.
 */
import type { Duplex } from 'node:stream';
import { logger } from '../shared/logger.js';

/** Why the connection must close now, or undefined while it may stay. */
export type Guard = () => string | undefined;

export class OpenConnections {
  private readonly guards = new Map<Duplex, Guard>();
  private readonly timer: NodeJS.Timeout;

  constructor(intervalMs = 1000) {
    this.timer = setInterval(() => this.sweep(), intervalMs);
    this.timer.unref();
  }

  /** Watches `socket` with `guard` (replacing its previous guard) until it closes. */
  watch(socket: Duplex, guard: Guard): void {
    if (socket.destroyed) return;
    if (!this.guards.has(socket)) socket.once('close', () => this.guards.delete(socket));
    this.guards.set(socket, guard);
  }

  /** Stops watching a keep-alive connection whose next request needs no rule. */
  unwatch(socket: Duplex): void {
    this.guards.delete(socket);
  }

  get size(): number {
    return this.guards.size;
  }

  /** Asks every rule again; closes the connections refused now. */
  sweep(): void {
    for (const [socket, guard] of this.guards) {
      let reason: string | undefined;
      try {
        reason = guard();
      } catch (err) {
        reason = (err as Error).message;
      }
      if (reason) {
        this.guards.delete(socket);
        logger.info({ reason }, 'edge: open connection closed (access revoked)');
        socket.destroy();
      }
    }
  }

  close(): void {
    clearInterval(this.timer);
    this.guards.clear();
  }
}
