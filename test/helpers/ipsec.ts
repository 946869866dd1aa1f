/**
 * The IPsec provider the IPsec API tests run on: the local provider (shared/providers/ipsecLocal.ts), wrapped so a
 * test can make it refuse (a tunnel or share named `fail-...`), fail once (a tunnel named `flaky-...`), or wait until
 * released (`hold(key)`: keyed by tunnel or share name while provisioning, by `teardown:<tunnel id>` while tearing
 * down).
 */
import type { TestFn } from 'ava';
import { LocalIpsecProvider } from '../../shared/providers/ipsecLocal.js';
import { IpsecProviderError, setIpsecProvider, type IpsecProvider, type ShareSpec, type TunnelSpec } from '../../shared/providers/ipsec.js';
import { waitFor, type HubFixture } from './stack.js';

export class TestIpsecProvider implements IpsecProvider {
  private readonly local = new LocalIpsecProvider();
  private readonly gates = new Map<string, { promise: Promise<void>; release: () => void }>();
  private readonly flakyCalls = new Map<string, number>();

  /** Keeps the provider waiting at `key` until the returned function is called. */
  hold(key: string): () => void {
    let release!: () => void;
    const promise = new Promise<void>((r) => (release = r));
    this.gates.set(key, { promise, release });
    return () => {
      this.gates.delete(key);
      release();
    };
  }

  releaseAll(): void {
    for (const { release } of this.gates.values()) release();
  }

  private gate = (key: string) => this.gates.get(key)?.promise;

  async provisionTunnel(spec: TunnelSpec) {
    if (spec.name.startsWith('fail-')) throw new IpsecProviderError('simulated: the VPN connection quota of the account is exhausted', true);
    if (spec.name.startsWith('flaky-')) {
      const calls = (this.flakyCalls.get(spec.tunnelId) ?? 0) + 1;
      this.flakyCalls.set(spec.tunnelId, calls);
      if (calls === 1) throw new Error('simulated: request throttled');
    }
    await this.gate(spec.name);
    return this.local.provisionTunnel(spec);
  }
  async teardownTunnel(id: string) {
    await this.gate(`teardown:${id}`);
    return this.local.teardownTunnel(id);
  }
  async provisionShare(spec: ShareSpec) {
    if (spec.name.startsWith('fail-')) throw new IpsecProviderError('simulated: the load balancer refused the listener', true);
    await this.gate(spec.name);
    return this.local.provisionShare(spec);
  }
  teardownShare = (id: string) => this.local.teardownShare(id);
  tunnelStatus = (id: string) => this.local.tunnelStatus(id);
  releaseTunnels = (ids: string[]) => this.local.releaseTunnels(ids);
}

/** The test provider for the whole file: set before its tests, released and unset after them (call it before useStack). */
export function useTestIpsecProvider(test: TestFn): TestIpsecProvider {
  const provider = new TestIpsecProvider();
  test.before(() => setIpsecProvider(provider));
  test.after.always(() => {
    provider.releaseAll();
    setIpsecProvider(undefined);
  });
  return provider;
}

/** Polls the resource at `path` until its status is `status`; its JSON. */
export async function waitForStatus(hub: HubFixture, path: string, status: string) {
  return waitFor(
    async () => {
      const r = await hub.call('GET', path);
      return r.json?.status === status ? r.json : undefined;
    },
    { what: `${path} to be ${status}` },
  );
}

/** A valid tunnel create body, with `over` on top. */
export const tunnelBody = (over: Record<string, unknown> = {}) => ({ name: 'office', peerPublicIp: '203.0.113.10', peerCidr: '192.168.10.0/24', ...over });

/** A tunnel created and waited for until DEPLOYED; its JSON. */
export async function deployedTunnel(hub: HubFixture, over: Record<string, unknown> = {}) {
  const r = await hub.call('POST', `${hub.h2}/ipsec-tunnels`, { body: tunnelBody(over) });
  if (r.status !== 202) throw new Error(`create failed: ${r.status} ${r.text}`);
  return waitForStatus(hub, `${hub.h2}/ipsec-tunnels/${r.json.id}`, 'DEPLOYED');
}

/** The execution a 202 points to (its Location). */
export const executionOf = async (hub: HubFixture, location: string | null) => (await hub.call('GET', location ?? '/missing')).json;
