/**
 * An IPsec share relay that cannot start (its tunnel's namespace gone) is not started again in a loop as fast as it
 * fails: the tunnel says when it will try again, and the host is told only after a growing wait.
 */
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import test from 'ava';
import { TunnelRuntime } from '../../edge/ipsec/tunnel.js';

const options = {
  ikeVersions: ['ikev2'],
  phase1EncryptionAlgorithms: ['AES256'],
  phase1IntegrityAlgorithms: ['SHA2-256'],
  phase1DHGroupNumbers: [14],
  phase1LifetimeSeconds: 28800,
  phase2EncryptionAlgorithms: ['AES256'],
  phase2IntegrityAlgorithms: ['SHA2-256'],
  phase2DHGroupNumbers: [14],
  phase2LifetimeSeconds: 3600,
  rekeyMarginTimeSeconds: 540,
  rekeyFuzzPercentage: 100,
  dpdTimeoutSeconds: 30,
  dpdTimeoutAction: 'clear',
};

test('a relay that cannot start is started again after a wait, not at every reconcile', async (t) => {
  const dir = mkdtempSync(path.join(process.env.TEST_WORK_DIR ?? os.tmpdir(), 'relay-'));
  // a tunnel whose namespace does not exist (never made here): `ip netns exec` fails at once
  const runtime = new TunnelRuntime(
    {
      tunnelId: `no-such-tunnel-${process.pid}`,
      vpnConnectionId: 'vpn-0',
      outside: '203.0.113.9',
      peerPublicIp: '203.0.113.10',
      peerCidr: '10.9.0.0/16',
      vpcCidr: '10.0.0.0/16',
      preSharedKey: 'not-used-0123456789',
      options,
      nlbPrivateIp: '10.0.0.9',
      insideAws: '169.254.9.1',
      insideCustomer: '169.254.9.2',
    },
    dir,
    path.join(dir, 'edge.sock'),
    undefined,
  );
  let told = 0;
  runtime.onLost = () => told++;
  await t.throwsAsync(() => runtime.listen('share-1', 7000));
  t.is(runtime.relayStarts, 1);
  // the reconciles that follow at once (other changes) do not start it again: they are told when it will be
  for (let i = 0; i < 20; i++) await t.throwsAsync(() => runtime.listen('share-1', 7000), { message: /failed to start; tried again in \d+ s/ });
  t.is(runtime.relayStarts, 1, 'no relay started while it waits');
  t.is(told, 0, 'the host is not told at once');
  await runtime.down();
});
