/**
 * IPsec on strongSwan with a real peer. The test makes a WAN namespace (the
 * internet, HUB_IPSEC_WAN_NETNS) and a peer namespace attached to it, starts the peer's own charon there, and loads
 * the tunnel's sample configuration unchanged with `swanctl --load-all`. The service's side runs in the edge (the
 * IPsec host): a namespace and a charon per tunnel, and the IPsec share's listener on the load balancer address,
 * whose connections an agent (in a private network of its own) carries to the target.
 */
import { execFile, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmdirSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import test from 'ava';
import type { Edge } from '../../edge/server.js';
import { netnsMarker, tunnelNetns } from '../../edge/ipsec/netns.js';
import { startTestEdge } from '../helpers/edge.js';
import { enrollAgent, newEnvironment, runAgent, startPrivateTarget } from '../helpers/agents.js';
import { privateNetwork, type PrivateNetwork } from '../helpers/netns.js';
import { spawnPeerCharon } from '../helpers/peerCharon.js';
import { type HubFixture, useStack, waitFor } from '../helpers/stack.js';

const run = promisify(execFile);
const ip = (...args: string[]) => run('ip', args);

const WAN = `ehip-${process.pid}-w`;
const PEER = `ehip-${process.pid}-p`;
const PEER_IP = '203.0.113.2';
const PEER_IP_2 = '203.0.113.3';
const PEER_CIDR = '192.168.77.0/24';
const PEER_HOST = '192.168.77.1';

let edge: Edge;
let hub: HubFixture;
let agentNet: PrivateNetwork;
let peerCharon: ChildProcess;
let envZId: string;
const work = mkdtempSync(path.join(process.env.TEST_WORK_DIR ?? os.tmpdir(), 'ipsec-'));
/** The peer charon's VICI socket (test/helpers/peerCharon.ts), once it is started. */
let peerVici = '';
const cleanups: (() => Promise<unknown>)[] = [];

async function peerSwanctl(...args: string[]): Promise<string> {
  return (await run('swanctl', [...args, '--uri', peerVici], { timeout: 15_000 })).stdout;
}

/** A TCP exchange from the peer's private network: connects to ip:port, sends `text`, half-closes, reads all. */
async function fromPeer(host: string, port: number, text: string): Promise<string> {
  const code = `const s=require('net').connect({host:'${host}',port:${port},localAddress:'${PEER_HOST}'},()=>s.end(${JSON.stringify(text)}));let b='';s.on('data',d=>b+=d);s.on('end',()=>{process.stdout.write('ANSWER:'+b)});s.on('error',e=>{process.stdout.write('ERROR:'+e.code);});setTimeout(()=>{process.stdout.write('ERROR:timeout');process.exit(0)},8000).unref();`;
  const { stdout } = await run('ip', ['netns', 'exec', PEER, process.execPath, '-e', code], { timeout: 20_000 });
  return stdout;
}

test.before(async () => {
  // the internet and the customer's gateway
  for (const ns of [WAN, PEER]) await ip('netns', 'del', ns).catch(() => undefined);
  await ip('netns', 'add', WAN);
  cleanups.push(() => ip('netns', 'del', WAN));
  await ip('netns', 'add', PEER);
  cleanups.push(async () => {
    const pids = (await ip('netns', 'pids', PEER).catch(() => ({ stdout: '' }))).stdout.split(/\s+/).filter(Boolean);
    for (const pid of pids) process.kill(Number(pid), 'SIGKILL');
    await ip('netns', 'del', PEER);
  });
  await ip('-n', WAN, 'link', 'set', 'lo', 'up');
  await ip('-n', PEER, 'link', 'set', 'lo', 'up');
  await ip('-n', WAN, 'link', 'add', 'peer0', 'type', 'veth', 'peer', 'name', 'gw0');
  await ip('-n', WAN, 'link', 'set', 'gw0', 'netns', PEER);
  await ip('-n', WAN, 'addr', 'add', '203.0.113.1/24', 'dev', 'peer0');
  await ip('-n', WAN, 'link', 'set', 'peer0', 'up');
  await ip('-n', PEER, 'addr', 'add', `${PEER_IP}/24`, 'dev', 'gw0');
  await ip('-n', PEER, 'addr', 'add', `${PEER_IP_2}/24`, 'dev', 'gw0');
  await ip('-n', PEER, 'link', 'set', 'gw0', 'up');
  await ip('-n', PEER, 'route', 'add', 'default', 'via', '203.0.113.1');
  await ip('-n', PEER, 'addr', 'add', `${PEER_HOST}/32`, 'dev', 'lo');
});
const stack = useStack(test, { env: { HUB_IPSEC_PROVIDER: 'strongswan', HUB_IPSEC_WAN_NETNS: WAN, HUB_EDGE_FLUSH_MS: '600000' } });
stack.onStop(async () => {
  await edge?.stop(1000);
  for (const c of cleanups.reverse()) await c().catch(() => undefined);
});
// tunnel namespaces left on the machine before the edge starts: one another deployment runs (no mark of ours, e.g.
// another test file's edge) and one a crashed host of this deployment left (marked in our data directory)
const FOREIGN = `ehv-f${String(process.pid).padStart(9, '0')}`;
const LEFTOVER = `ehv-l${String(process.pid).padStart(9, '0')}`;
const netnsList = async () => (await ip('netns', 'list')).stdout.split('\n').map((l) => l.trim().split(/\s+/)[0]);
test.before(async () => {
  for (const ns of [FOREIGN, LEFTOVER]) {
    await ip('netns', 'add', ns);
    cleanups.push(() => ip('netns', 'del', ns));
  }
  mkdirSync(path.join(stack_dataDir(), 'ipsec'), { recursive: true });
  writeFileSync(netnsMarker(path.join(stack_dataDir(), 'ipsec'), LEFTOVER), '1\n');
  edge = await startTestEdge({ host: '0.0.0.0' });
  await waitFor(async () => edge.ipsec?.isHost, { what: 'the edge holding the IPsec host role' });
  hub = await stack.hub({ ipsec: true });

  // the private target (a TCP echo) and an agent next to it
  agentNet = await privateNetwork('ehis');
  cleanups.push(() => agentNet.remove());
  const target = await startPrivateTarget(agentNet, 'T');
  cleanups.push(async () => target.kill('SIGKILL'));
  envZId = await newEnvironment(hub, 'office');
  const { dir } = await enrollAgent(hub, envZId, work);
  const agent = runAgent(agentNet, dir, [edge.httpsPort!]);
  await waitFor(async () => edge.agents.connected(hub.hubId, envZId).length > 0, { what: 'the agent connected' });
  cleanups.push(() => agent.stop('SIGKILL'));

  // the peer's own charon, with a private /run
  ({ child: peerCharon, vici: peerVici } = spawnPeerCharon(PEER, work));
  cleanups.push(async () => peerCharon.kill('SIGKILL'));
  await waitFor(
    async () =>
      peerSwanctl('--stats').then(
        () => true,
        () => false,
      ),
    { what: "the peer's charon" },
  );
});

async function deployedTunnel(peerPublicIp: string, name: string): Promise<any> {
  const created = await hub.call('POST', `${hub.h}/ipsec-tunnels`, { body: { name, peerPublicIp, peerCidr: PEER_CIDR, locationId: name } });
  if (created.status !== 202 && created.status !== 201) throw new Error(`tunnel: ${created.status} ${created.text}`);
  return waitFor(
    async () => {
      const r = await hub.call('GET', `${hub.h}/ipsec-tunnels/${created.json.id}`);
      if (r.json.status === 'ERROR') throw new Error(`tunnel ERROR: ${r.json.statusMessage}`);
      return r.json.status === 'DEPLOYED' && r.json;
    },
    { timeoutMs: 60_000, what: 'tunnel DEPLOYED' },
  );
}

const tunnelStatus = async (id: string) => (await hub.call('GET', `${hub.h}/ipsec-tunnels/${id}/tunnel-config`)).json;

test.serial(
  'a real peer loads the sample configuration unchanged, the SA comes up, and a TCP connection from the peer network reaches the private target through the agent',
  async (t) => {
    const tunnel = await deployedTunnel(PEER_IP, 'office');
    t.true((await ip('netns', 'list')).stdout.includes(tunnelNetns(tunnel.id)), "the tunnel's namespace exists once DEPLOYED");
    const sample = await hub.call('GET', `${hub.h}/ipsec-tunnels/${tunnel.id}/sample-config?vendor=strongswan`, { headers: { accept: 'text/plain' } });
    t.is(sample.status, 200);
    const file = path.join(work, 'office.conf');
    writeFileSync(file, sample.text);
    await peerSwanctl('--load-all', '--file', file);
    const up = await waitFor(
      async () => {
        const s = await tunnelStatus(tunnel.id);
        return s.tunnels?.[0]?.status === 'UP' && s.tunnels[0];
      },
      { timeoutMs: 30_000, what: 'tunnel-config UP' },
    );
    t.regex(up.statusMessage, /CHILD_SA INSTALLED/);

    const share = await hub.call('POST', `${hub.h}/ipsec-shares`, {
      body: { name: 'echo', ipsecTunnelId: tunnel.id, envZId, target: '127.0.0.1:9090', ingressPort: 7000 },
    });
    t.true(share.status === 202 || share.status === 201, share.text);
    await waitFor(async () => (await hub.call('GET', `${hub.h}/ipsec-shares/${share.json.id}`)).json.status === 'DEPLOYED', {
      timeoutMs: 30_000,
      what: 'share DEPLOYED',
    });
    const answer = await fromPeer(tunnel.nlbPrivateIp, 7000, 'hello through IPsec');
    t.is(answer, 'ANSWER:hello through IPsec');

    // the connection's bytes are settled when it closes on the edge's side: flush until they are in
    await waitFor(
      async () => {
        await edge.meter.flush();
        const metrics = await hub.call('GET', `${hub.h}/ipsec-shares/${share.json.id}/metrics`);
        return metrics.json.samples.reduce((n: number, p: { rx: number; tx: number }) => n + p.rx + p.tx, 0) === 2 * 'hello through IPsec'.length;
      },
      { what: 'the bytes carried, both ways, in the share metrics' },
    );

    // a killed charon is brought back, and the peer brings the SA up again
    const pid = edge.ipsec!.charonPid(tunnel.id)!;
    process.kill(pid, 'SIGKILL');
    await waitFor(
      async () => {
        const next = edge.ipsec!.charonPid(tunnel.id);
        return (
          next &&
          next !== pid &&
          (await run('swanctl', ['--list-conns', '--uri', `unix://${path.join(stack_dataDir(), 'ipsec', tunnelNetns(tunnel.id), 'charon.vici')}`]).then(
            (r) => r.stdout.includes('edgehub-'),
            () => false,
          ))
        );
      },
      { timeoutMs: 20_000, what: 'charon restarted with the connection loaded' },
    );
    await peerSwanctl('--terminate', '--ike', `edgehub-${tunnel.vpnConnectionId}`).catch(() => undefined);
    await peerSwanctl('--initiate', '--child', `edgehub-${tunnel.vpnConnectionId}-child`).catch(() => undefined);
    await waitFor(async () => (await fromPeer(tunnel.nlbPrivateIp, 7000, 'again')) === 'ANSWER:again', {
      timeoutMs: 30_000,
      what: 'traffic after the charon restart',
    });

    // a restart that fails (here: a directory in the way of charon's control socket) is tried again until it succeeds
    const vici = path.join(stack_dataDir(), 'ipsec', tunnelNetns(tunnel.id), 'charon.vici');
    const before = edge.ipsec!.charonPid(tunnel.id)!;
    process.kill(before, 'SIGKILL');
    rmSync(vici, { force: true });
    mkdirSync(vici);
    await new Promise((resolve) => setTimeout(resolve, 2500)); // the first attempts fail meanwhile
    rmdirSync(vici);
    await waitFor(
      async () => {
        const next = edge.ipsec!.charonPid(tunnel.id);
        return (
          next &&
          next !== before &&
          (await run('swanctl', ['--list-conns', '--uri', `unix://${vici}`]).then(
            (r) => r.stdout.includes('edgehub-'),
            () => false,
          ))
        );
      },
      { timeoutMs: 20_000, what: 'charon started again after failed attempts, the connection loaded' },
    );
    await peerSwanctl('--terminate', '--ike', `edgehub-${tunnel.vpnConnectionId}`).catch(() => undefined);
    await peerSwanctl('--initiate', '--child', `edgehub-${tunnel.vpnConnectionId}-child`).catch(() => undefined);
    await waitFor(async () => (await fromPeer(tunnel.nlbPrivateIp, 7000, 'once more')) === 'ANSWER:once more', {
      timeoutMs: 30_000,
      what: 'traffic after the failed restarts',
    });

    // deleting the share closes the listener
    t.is((await hub.call('DELETE', `${hub.h}/ipsec-shares/${share.json.id}`)).status, 202);
    await waitFor(async () => (await hub.call('GET', `${hub.h}/ipsec-shares/${share.json.id}`)).json?.status === 'DELETED', {
      timeoutMs: 30_000,
      what: 'share DELETED',
    });
    t.regex(await fromPeer(tunnel.nlbPrivateIp, 7000, 'x'), /ERROR:ECONNREFUSED/);

    // deleting the tunnel tears it down: its charon and namespace go
    t.is((await hub.call('DELETE', `${hub.h}/ipsec-tunnels/${tunnel.id}`)).status, 202);
    await waitFor(async () => !(await ip('netns', 'list')).stdout.includes(tunnelNetns(tunnel.id)), { timeoutMs: 30_000, what: "the tunnel's namespace gone" });
    t.falsy(edge.ipsec!.charonPid(tunnel.id));
  },
);

test.serial('a peer with the wrong pre-shared key never brings the tunnel up', async (t) => {
  const tunnel = await deployedTunnel(PEER_IP_2, 'wrong-key');
  const sample = (await hub.call('GET', `${hub.h}/ipsec-tunnels/${tunnel.id}/sample-config?vendor=strongswan`, { headers: { accept: 'text/plain' } })).text;
  const wrong = sample.replace(/secret = "[^"]+"/, 'secret = "not-the-key-0123456789"');
  t.not(wrong, sample);
  const file = path.join(work, 'wrong.conf');
  writeFileSync(file, wrong);
  await peerSwanctl('--load-all', '--file', file);
  // the peer tries (start_action = start) and the service refuses its authentication
  await waitFor(async () => /received AUTHENTICATION_FAILED/.test(readFileSync(path.join(work, 'peer.log'), 'utf8')), {
    timeoutMs: 60_000,
    what: 'the peer refused for its pre-shared key',
  });
  const status = await tunnelStatus(tunnel.id);
  t.is(status.tunnels[0].status, 'DOWN', JSON.stringify(status));
  t.notRegex(await peerSwanctl('--list-sas', '--raw'), new RegExp(`edgehub-${tunnel.vpnConnectionId} \\{[^}]*state=ESTABLISHED`));
});

function stack_dataDir(): string {
  return process.env.HUB_DATA_DIR!;
}

test.serial('the IPsec host sweeps the tunnel namespaces its own deployment left, and leaves those of another deployment on the machine', async (t) => {
  await waitFor(async () => !(await netnsList()).includes(LEFTOVER), { what: 'our leftover namespace removed' });
  t.true((await netnsList()).includes(FOREIGN), "another deployment's tunnel namespace is left alone");
});
