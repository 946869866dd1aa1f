import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import test from 'ava';
import pg from 'pg';
import { useStack, waitFor } from '../helpers/stack.js';
import { scriptArgs } from '../helpers/script.js';

/**
 * Crash safety: a worker process is SIGKILLed while it provisions a tunnel; a new worker process recovers the
 * stalled job and the tunnel reaches DEPLOYED exactly once, with the allocations the first worker already made.
 */

const stack = useStack(test, { workers: false });
stack.onStop(async () => {
  for (const { child } of children) {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGKILL');
      await once(child, 'exit');
    }
  }
  await sql?.end();
});
let sql: pg.Client;
const children: { child: ChildProcess; output: string[] }[] = [];

test.before(async () => {
  sql = new pg.Client({ connectionString: stack.databaseUrl });
  await sql.connect();
});

function startWorker(): { child: ChildProcess; output: string[] } {
  const child = spawn(process.execPath, scriptArgs('workers/index.ts'), {
    env: {
      ...process.env,
      HUB_PROVISION_DELAY_MS: '1500',
      HUB_STALLED_INTERVAL_MS: '1000',
      HUB_JOB_LOCK_MS: '2000',
      LOG_LEVEL: 'info',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const output: string[] = [];
  const keep = (chunk: Buffer) => {
    output.push(chunk.toString());
    if (output.length > 200) output.shift();
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  const handle = { child, output };
  children.push(handle);
  return handle;
}

interface Allocation {
  nlb_private_ip: string;
  nlb_dns_name: string;
  vpn_connection_id: string | null;
  outside_ip_address: string | null;
  inside_cidr: string | null;
}

const allocationsOf = async (tunnelId: string) =>
  (
    await sql.query<Allocation>(
      `SELECT host(nlb_private_ip) AS nlb_private_ip, nlb_dns_name, vpn_connection_id,
              host(outside_ip_address) AS outside_ip_address, inside_cidr::text AS inside_cidr
         FROM ipsec_local_tunnels WHERE tunnel_id = $1`,
      [tunnelId],
    )
  ).rows;

test('a worker killed mid-provisioning: the next worker finishes the tunnel exactly once', async (t) => {
  const hub = await stack.hub({ ipsec: true });
  const created = await hub.call('POST', `${hub.h2}/ipsec-tunnels`, { body: { name: 'crash', peerPublicIp: '203.0.113.77', peerCidr: '10.9.0.0/16' } });
  t.is(created.status, 202);
  const tunnelId: string = created.json.id;
  const executionPath = created.headers.get('location')!;

  const first = startWorker();
  // wait until the first worker is mid-way: the execution runs and the VPN connection exists, the last step does not
  const [partial] = await waitFor(
    async () => {
      const execution = (await hub.call('GET', executionPath)).json;
      const rows = await allocationsOf(tunnelId);
      return execution.status === 'RUNNING' && rows[0]?.vpn_connection_id ? rows : undefined;
    },
    { timeoutMs: 60_000, what: 'the first worker to be mid-provisioning' },
  );
  first.child.kill('SIGKILL');
  await once(first.child, 'exit');

  t.is((await hub.call('GET', `${hub.h2}/ipsec-tunnels/${tunnelId}`)).json.status, 'NEW', 'not finished by the killed worker');
  t.is((await hub.call('GET', executionPath)).json.status, 'RUNNING', 'its execution was left running');

  const second = startWorker();
  let deployed: Record<string, string | null>;
  try {
    deployed = await waitFor(
      async () => {
        const r = await hub.call('GET', `${hub.h2}/ipsec-tunnels/${tunnelId}`);
        return r.json.status === 'DEPLOYED' ? r.json : undefined;
      },
      { timeoutMs: 90_000, what: 'the recovered tunnel to be DEPLOYED' },
    );
  } catch (err) {
    t.log(first.output.join('').slice(-4000));
    t.log(second.output.join('').slice(-4000));
    throw err;
  }

  // the allocations the killed worker made were reused, not made again
  const rows = await allocationsOf(tunnelId);
  t.is(rows.length, 1, 'one allocation for the tunnel');
  t.deepEqual(rows[0], partial, 'nothing re-allocated');
  t.is(deployed.nlbPrivateIp, partial.nlb_private_ip);
  t.is(deployed.nlbDnsName, partial.nlb_dns_name);
  t.is(deployed.vpnConnectionId, partial.vpn_connection_id);
  const live = await sql.query('SELECT count(*)::int AS n FROM ipsec_local_tunnels WHERE released_at IS NULL');
  t.is(live.rows[0].n, 1, 'no stray allocation anywhere');

  // one provisioning execution, SUCCEEDED once, recording the NEW -> DEPLOYED transition
  const execution = await waitFor(async () => {
    const e = (await hub.call('GET', executionPath)).json;
    return e.status === 'SUCCEEDED' ? e : undefined;
  });
  t.is(execution.resourceId, tunnelId);
  const audit = await hub.call('GET', `${hub.h}/executions?resourceId=${tunnelId}`);
  t.is(audit.json.totalElements, 1);
  const stored = await sql.query('SELECT result FROM executions WHERE id = $1', [execution.id]);
  t.deepEqual(stored.rows[0].result.transition, { from: 'NEW', to: 'DEPLOYED' });

  // the tunnel works as any other
  const config = await hub.call('GET', `${hub.h2}/ipsec-tunnels/${tunnelId}/tunnel-config`);
  t.is(config.status, 200);
  t.is(config.json.tunnels[0].outsideIpAddress, partial.outside_ip_address);
  t.is(config.json.tunnels[0].insideCidr, partial.inside_cidr);
});
