/**
 * `edgehub share` and its options, end to end, as a user on another machine runs it: the machine is a network
 * namespace where the service is 127.0.0.1:<api port> (a forwarder, as PUBLIC_BASE_URL says) and the edge is the
 * host's side of the veth (HUB_EDGE_AGENT_ADDRESSES); the target listens on the namespace's loopback. The edge's
 * ports are the configured ones, so the addresses the service prints are the ones that answer.
 */
import { execFile, spawn } from 'node:child_process';
import net from 'node:net';
import { existsSync, mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import test from 'ava';
import type { Edge } from '../../edge/server.js';
import { resetConfig } from '../../shared/config.js';
import { freePort } from '../../scripts/services/index.js';
import { startPrivateTarget } from '../helpers/agents.js';
import { edgeRequest, freeRange, publicFrontendCertificate, startTestEdge } from '../helpers/edge.js';
import { privateNetwork, type PrivateNetwork } from '../helpers/netns.js';
import { type HubFixture, useStack, waitFor } from '../helpers/stack.js';

const runFile = promisify(execFile);
let ports: { http: number; https: number; tcp: number };
test.before(async () => {
  ports = { http: await freePort(), https: await freePort(), tcp: await freeRange(2) };
});
const stack = useStack(test, () => ({
  env: {
    HUB_EDGE_HTTP_PORT: String(ports.http),
    HUB_EDGE_HTTPS_PORT: String(ports.https),
    HUB_EDGE_TCP_PORTS: `${ports.tcp}-${ports.tcp + 1}`,
    HUB_EDGE_FLUSH_MS: '600000',
  },
}));
stack.onStop(async () => {
  for (const c of cleanups.reverse()) await c().catch(() => undefined);
  // the edge stops while the namespace still exists, so that its connections to the agents there can end
  await edge?.stop(1000);
  await ns?.remove();
  delete process.env.HUB_EDGE_AGENT_ADDRESSES;
  resetConfig();
});
const cleanups: (() => Promise<unknown>)[] = [];
const work = mkdtempSync(path.join(process.env.TEST_WORK_DIR ?? os.tmpdir(), 'agent-share-'));
let edge: Edge;
let hub: HubFixture;
let ns: PrivateNetwork;
let apiPort: string;

test.before(async () => {
  edge = await startTestEdge({ host: '0.0.0.0', httpPort: ports.http, httpsPort: ports.https });
  hub = await stack.hub();
  ns = await privateNetwork();
  await startPrivateTarget(ns, 'private');
  // more targets on the same machine, for several `edgehub share` processes side by side
  await startPrivateTarget(ns, 'second', { http: 8081, tcp: 9190 });
  await startPrivateTarget(ns, 'third', { http: 8082, tcp: 9290 });
  await publicFrontendCertificate(stack.databaseUrl);
  apiPort = new URL(stack.baseUrl).port;
  const forwarder = ns.spawn(process.execPath, [
    '-e',
    `const net = require('net'); net.createServer((s) => { const u = net.connect(${apiPort}, '${ns.hostIp}'); s.pipe(u).pipe(s); u.on('error', () => s.destroy()); s.on('error', () => u.destroy()); }).listen(${apiPort}, '127.0.0.1', () => console.log('ready'));`,
  ]);
  await new Promise((resolve) => forwarder.stdout!.once('data', resolve));
  process.env.HUB_EDGE_AGENT_ADDRESSES = `${ns.hostIp}:${ports.https}`;
  resetConfig();
  // the public frontend on this edge's port, so that the addresses the service prints are the ones that answer
  await stack.sql.query(`UPDATE frontends SET url_template = $1 WHERE hub_id IS NULL AND public_name = 'public'`, [
    `http://{token}.share.localhost:${ports.http}`,
  ]);
});

/** `edgehub share ...` in the namespace; `url` is EDGEHUB_URL (default: the service as the namespace reaches it). */
function share(args: string[], options: { url?: string; key?: string } = {}) {
  const child = ns.spawn(process.execPath, ['agent/bin/edgehub.js', 'share', ...args], {
    env: { ...process.env, EDGEHUB_URL: options.url ?? `http://127.0.0.1:${apiPort}`, EDGEHUB_API_KEY: options.key ?? hub.token },
  });
  let out = '';
  let err = '';
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (err += d));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  cleanups.push(async () => child.kill('SIGKILL'));
  const up = () =>
    waitFor(async () => /share (\S+): (\S+) ->/.exec(out), { what: 'the share line' })
      .then(async (m) => {
        await waitFor(async () => /connected to edge/.test(out), { what: 'the agent connected' });
        return { zId: m[1], endpoint: m[2] };
      })
      .catch((e) => {
        throw new Error(`${(e as Error).message}; stdout: ${out}; stderr: ${err}`);
      });
  return { child, exited, up, out: () => out, err: () => err };
}

const dirOf = (name: string) => path.join(mkdtempSync(path.join(work, `${name}-`)), 'agent');
const whoami = (host: string) => edgeRequest(edge.httpPort!, host, { path: '/whoami' });

test.serial('--name: a reserved share keeps its address over two runs and is kept on Ctrl-C', async (t) => {
  const dir = dirOf('reserved');
  const first = share(['http://localhost:8080', '--name', 'my-app', '--dir', dir]);
  const one = await first.up();
  const host = new URL(one.endpoint).hostname;
  await waitFor(async () => (await whoami(host)).text === 'private', { what: 'the reserved share answering' });
  first.child.kill('SIGINT');
  t.is(await first.exited, 0, first.err());
  t.regex(first.out(), /kept \(reserved as 'my-app'\)/);
  const kept = await hub.call('GET', `${hub.h}/shares/${one.zId}`);
  t.is(kept.status, 200);
  t.is(kept.json.status, 'ACTIVE');

  const second = share(['http://localhost:8080', '--name', 'my-app', '--dir', dir]);
  const two = await second.up();
  t.is(two.zId, one.zId, 'the same share');
  t.is(two.endpoint, one.endpoint, 'the same public address');
  await waitFor(async () => (await whoami(host)).text === 'private', { what: 'the reserved share answering on the second run' });
  second.child.kill('SIGINT');
  t.is(await second.exited, 0);
  const shares = await hub.call('GET', `${hub.h}/shares?size=100`);
  t.is(shares.json.content.filter((s: { name: string }) => s.name === 'my-app').length, 1, 'one share of that name, not two');

  // another target under the same name is refused, not silently re-pointed
  const other = share(['http://localhost:9090', '--name', 'my-app', '--dir', dir]);
  t.is(await other.exited, 1);
  t.regex(other.err(), /reserved share 'my-app' publishes http:\/\/localhost:8080\//);
});

test.serial('--mtls: the printed curl line works with the served CA and the enrolled certificate; without it, refused', async (t) => {
  const dir = dirOf('mtls');
  const run = share(['http://localhost:8080', '--mtls', '--dir', dir]);
  const { endpoint } = await run.up();
  t.regex(endpoint, new RegExp(`^https://[a-z0-9]+\\.share\\.localhost:${ports.https}$`));
  const line = await waitFor(async () => /^curl .*$/m.exec(run.out())?.[0], { what: 'the curl line' });
  t.regex(line, /--cacert \S+frontend-ca\.pem --cert \S+\.crt --key \S+\.key https:\/\//);
  const args = line.split(/\s+/).slice(1);
  // exactly the printed command (curl resolves *.localhost to loopback by itself)
  await waitFor(
    async () => (await runFile('curl', ['-sS', ...args.slice(0, -1), `${args.at(-1)}/whoami`]).catch(() => ({ stdout: '' }))).stdout === 'private',
    { what: 'curl through mutual TLS' },
  );
  // without a certificate: refused, never served (a few tries: one curl on a loaded machine may fail to connect)
  const outcomes: string[] = [];
  for (let i = 0; i < 5 && outcomes.at(-1) !== '403'; i++) {
    outcomes.push(
      await runFile('curl', ['-sS', '-o', '/dev/null', '-w', '%{http_code}', '--cacert', args[1], `${args.at(-1)}/whoami`]).then(
        (r) => r.stdout,
        (e: { stdout?: string; stderr?: string }) => `failed (${e.stdout ?? ''}): ${e.stderr ?? ''}`,
      ),
    );
  }
  t.is(outcomes.at(-1), '403', `no client certificate: refused (${outcomes.join(' | ')})`);
  t.false(outcomes.includes('200'), 'never served without a certificate');
  run.child.kill('SIGINT');
  t.is(await run.exited, 0, run.err());
});

test.serial('--login with --email: a request without a session is refused; the share carries the provider and domains', async (t) => {
  const provider = await hub.call('POST', `${hub.h}/auth-providers`, {
    body: { name: 'gh', type: 'GITHUB', config: { clientId: 'placeholder', clientSecret: 'placeholder' }, emailPatterns: ['*@example.com'] },
  });
  t.is(provider.status, 201, provider.text);
  const missing = share(['http://localhost:8080', '--login', 'nope', '--dir', dirOf('login-missing')]);
  t.is(await missing.exited, 1);
  t.regex(missing.err(), /--login nope: no such auth provider/);

  const run = share(['http://localhost:8080', '--login', provider.json.id, '--email', '*@example.com', '--dir', dirOf('login')]);
  const { zId, endpoint } = await run.up();
  const made = await hub.call('GET', `${hub.h}/shares/${zId}`);
  t.is(made.json.authProviderId, provider.json.id);
  t.deepEqual(made.json.oauthEmailDomains, ['example.com']);
  // the edge routes a new share within 2 s of its creation: until then it is a 404
  const r = await waitFor(
    async () => {
      const answer = await edgeRequest(edge.httpPort!, new URL(endpoint).hostname, { path: '/whoami', headers: { accept: 'application/json' } });
      return answer.status !== 404 && answer;
    },
    { what: 'the edge routing the share' },
  );
  t.is(r.status, 401, r.text);
  t.not(r.text, 'private');
  run.child.kill('SIGINT');
  t.is(await run.exited, 0);
});

test.serial('a failed first run leaves nothing behind and names the setting to change', async (t) => {
  const before = await hub.call('GET', `${hub.h}/environments?size=100`);
  const shares = await hub.call('GET', `${hub.h}/shares?size=100`);
  // the service reached at another address than PUBLIC_BASE_URL names: enrollment cannot be trusted
  const dir = dirOf('failed');
  const run = share(['http://localhost:8080', '--dir', dir], { url: `http://${ns.hostIp}:${apiPort}` });
  t.is(await run.exited, 1);
  t.regex(run.err(), /^edgehub: .*set PUBLIC_BASE_URL on the service/);
  t.is(run.err().trim().split('\n').length, 1, 'one line');
  const after = await hub.call('GET', `${hub.h}/environments?size=100`);
  t.deepEqual(
    after.json.content.map((e: { envZId: string }) => e.envZId).sort(),
    before.json.content.map((e: { envZId: string }) => e.envZId).sort(),
    'no environment left',
  );
  t.is((await hub.call('GET', `${hub.h}/shares?size=100`)).json.totalElements, shares.json.totalElements, 'no share left');
  t.false(existsSync(path.join(dir, 'agent.json')), 'no identity left');

  // what can be checked before anything is made is checked first
  const noFrontend = share(['http://localhost:8080', '--frontend', 'nope', '--dir', dirOf('no-frontend')]);
  t.is(await noFrontend.exited, 1);
  t.regex(noFrontend.err(), /--frontend nope: no such frontend in this hub/);
  const emailAlone = share(['http://localhost:8080', '--email', '*@example.com', '--dir', dirOf('email')]);
  t.is(await emailAlone.exited, 1);
  t.regex(emailAlone.err(), /--email needs --login/);
  t.is((await hub.call('GET', `${hub.h}/environments?size=100`)).json.totalElements, before.json.totalElements, 'still no environment left');

  const noKey = share(['3000'], { key: '' });
  t.is(await noKey.exited, 1);
  t.regex(noKey.err(), /EDGEHUB_API_KEY/);
  const badKey = share(['3000', '--dir', dirOf('bad-key')], { key: 'ehk_wrong' });
  t.is(await badKey.exited, 1);
  t.regex(badKey.err(), /refused EDGEHUB_API_KEY/);
});

/** Sends `text` over a TCP connection to the edge's port, half-closes, and resolves with everything that came back. */
function echoThrough(port: number, text: string, host = '127.0.0.1'): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, host, () => socket.end(text));
    let got = '';
    socket.setTimeout(5000, () => socket.destroy(new Error('no answer within 5 s')));
    socket.on('data', (d) => (got += d));
    socket.once('error', reject);
    socket.once('close', () => resolve(got));
  });
}

test.serial(
  '--tcp: prints tcp://HOST:PORT and a line to connect with; bytes cross the agent both ways; Ctrl-C deletes the share and frees its port',
  async (t) => {
    const run = share(['9090', '--tcp', '--dir', dirOf('tcp')]);
    const { zId, endpoint } = await run.up();
    const url = new URL(endpoint);
    t.is(url.protocol, 'tcp:');
    t.true(Number(url.port) >= ports.tcp && Number(url.port) <= ports.tcp + 1, endpoint);
    const line = await waitFor(async () => /^connect with .*$/m.exec(run.out())?.[0], { what: 'the connect line' });
    // the line's host is one this machine's resolver answers (a `.localhost` frontend's name is printed as localhost)
    const [, dialed, dialedPort] = /nc (\S+) (\d+)$/.exec(line) ?? [];
    t.is(dialedPort, url.port, line);
    t.is(dialed, url.hostname.endsWith('.localhost') ? 'localhost' : url.hostname, line);
    const share_ = await hub.call('GET', `${hub.h}/shares/${zId}`);
    t.like(share_.json, { protocol: 'tcp', frontendEndpoint: endpoint });
    // the agent says it carries its one target, at connection or once the edge has loaded the new share
    await waitFor(async () => /(, 1 target\)|: 1 target now)$/m.test(run.out()), { what: `the agent's line with its target (${run.out()})` });
    const text = 'through the agent to the echo server, and back';
    t.is(
      await waitFor(async () => (await echoThrough(Number(url.port), text, dialed).catch(() => '')) || undefined, {
        what: 'the echo through the TCP share, by the line printed',
      }),
      text,
    );
    run.child.kill('SIGINT');
    t.is(await run.exited, 0, run.err());
    t.is((await hub.call('GET', `${hub.h}/shares/${zId}`)).status, 404, 'deleted on Ctrl-C');
    await waitFor(async () => (await echoThrough(Number(url.port), 'x').catch(() => 'refused')) === 'refused', { what: 'the port refusing' });
  },
);

/**
 * `openssl s_client ARGS -quiet` (the printed line's arguments) sending `text`: what came back once it holds `text`,
 * or '' when the connection ended or 5 s passed without it.
 */
function sClient(args: string[], text: string): Promise<string> {
  return new Promise((resolve) => {
    const child = spawn('openssl', [...args, '-quiet', '-verify_return_error'], { stdio: ['pipe', 'pipe', 'ignore'] });
    let got = '';
    const done = (value: string) => {
      clearTimeout(timer);
      child.kill();
      resolve(value);
    };
    const timer = setTimeout(() => done(''), 5000);
    child.stdout.on('data', (d) => {
      got += d;
      if (got.includes(text)) done(got.trim());
    });
    child.once('exit', () => done(''));
    child.stdin.on('error', () => undefined);
    child.stdin.write(`${text}\n`);
  });
}

test.serial('--tcp --mtls: the printed openssl line carries bytes with the enrolled certificate; a client without one gets none', async (t) => {
  const run = share(['9090', '--tcp', '--mtls', '--dir', dirOf('tcp-mtls')]);
  const { endpoint } = await run.up();
  const url = new URL(endpoint);
  t.is(url.protocol, 'tcp:');
  const line = await waitFor(async () => /^openssl s_client .*$/m.exec(run.out())?.[0], { what: 'the openssl line' });
  // a `.localhost` frontend's name is dialed as localhost and sent as SNI
  t.regex(
    line,
    new RegExp(
      `^openssl s_client -connect localhost:${url.port} -servername ${url.hostname.replaceAll('.', '\\.')} -CAfile \\S+ -cert \\S+\\.crt -key \\S+\\.key$`,
    ),
  );
  const args = line.split(/\s+/).slice(1);
  const text = 'mutual TLS through the agent, and back';
  t.is(await waitFor(async () => (await sClient(args, text)) || undefined, { what: 'the echo through the printed openssl line' }), text);
  // the same line without the certificate and its key: the edge closes before a byte reaches the target
  const withoutCertificate = args.filter((a, i) => !['-cert', '-key'].includes(a) && !['-cert', '-key'].includes(args[i - 1]));
  t.is(await sClient(withoutCertificate, text), '', 'no client certificate: nothing comes back');
  run.child.kill('SIGINT');
  t.is(await run.exited, 0, run.err());
});

test.serial('--inspect: the requests that reach the share are recorded, and another share of the run records nothing', async (t) => {
  const run = share(['http://localhost:8080', '--inspect', '--dir', dirOf('inspect')]);
  const { zId, endpoint } = await run.up();
  t.true((await hub.call('GET', `${hub.h}/shares/${zId}`)).json.inspect);
  const host = new URL(endpoint).hostname;
  await waitFor(async () => (await whoami(host)).text === 'private', { what: 'the share answering' });
  const recorded = await waitFor(
    async () => {
      const r = await hub.call('GET', `${hub.h}/shares/${zId}/requests`);
      return r.json.find?.((x: { path: string }) => x.path === '/whoami');
    },
    { what: 'the request in the inspector' },
  );
  t.like(recorded, { method: 'GET', path: '/whoami', status: 200 });
  run.child.kill('SIGINT');
  t.is(await run.exited, 0, run.err());

  const plain = share(['http://localhost:8080', '--dir', dirOf('not-inspected')]);
  const other = await plain.up();
  t.false((await hub.call('GET', `${hub.h}/shares/${other.zId}`)).json.inspect);
  await waitFor(async () => (await whoami(new URL(other.endpoint).hostname)).text === 'private', { what: 'the plain share answering' });
  t.deepEqual((await hub.call('GET', `${hub.h}/shares/${other.zId}/requests`)).json, []);
  plain.child.kill('SIGINT');
  t.is(await plain.exited, 0);
});

test.serial(
  '--allow, --rate and --basic-auth: the share carries the policy, the edge asks for the credentials, and bad values are refused before anything is made',
  async (t) => {
    const bad = share(['http://localhost:8080', '--rate', '0/1m', '--dir', dirOf('policy-bad')]);
    t.is(await bad.exited, 1);
    t.regex(bad.err(), /--rate '0\/1m'/);
    const run = share([
      'http://localhost:8080',
      '--allow',
      '127.0.0.0/8',
      '--allow',
      '::1/128',
      '--rate',
      '100/1m',
      '--basic-auth',
      'demo:s3cret:pass',
      '--dir',
      dirOf('policy'),
    ]);
    const { zId, endpoint } = await run.up();
    const made = await hub.call('GET', `${hub.h}/shares/${zId}`);
    t.deepEqual(made.json.policy, {
      ipAllow: ['127.0.0.0/8', '::1/128'],
      rateLimit: { requests: 100, per: 'PT1M', by: 'client-ip' },
      basicAuth: [{ user: 'demo' }],
    });
    const host = new URL(endpoint).hostname;
    const refused = await waitFor(
      async () => {
        const r = await whoami(host);
        return r.status !== 404 && r;
      },
      { what: 'the edge routing the share' },
    );
    t.is(refused.status, 401);
    t.is(refused.headers['www-authenticate'], 'Basic realm="edgehub"');
    const served = await edgeRequest(edge.httpPort!, host, {
      path: '/whoami',
      headers: { authorization: `Basic ${Buffer.from('demo:s3cret:pass').toString('base64')}` },
    });
    t.is(served.text, 'private');
    run.child.kill('SIGINT');
    t.is(await run.exited, 0, run.err());
  },
);

test.serial('share processes side by side on one machine (one agent identity): every request reaches the process that carries its share', async (t) => {
  const dir = dirOf('side-by-side');
  const runs = [share(['http://localhost:8080', '--dir', dir])];
  const first = await runs[0].up();
  runs.push(share(['http://localhost:8081', '--dir', dir]));
  const second = await runs[1].up();
  const hosts: [string, string][] = [
    [new URL(first.endpoint).hostname, 'private'],
    [new URL(second.endpoint).hostname, 'second'],
  ];
  /**
   * Requests every share `rounds` times, 6 at once each (slow answers: the edge opens new connections to the targets
   * rather than reusing one); the answers that were not its target's.
   */
  const wrong = async (rounds: number) => {
    const out: string[] = [];
    for (let i = 0; i < rounds; i++) {
      const asked = hosts.flatMap(([host, name]) => Array.from({ length: 6 }, () => ({ host, name })));
      const answers = await Promise.all(asked.map(({ host }) => edgeRequest(edge.httpPort!, host, { path: '/slow' })));
      answers.forEach((r, k) => r.text !== asked[k].name && out.push(`${asked[k].name}: ${r.status} ${r.text}`));
    }
    return out;
  };
  for (const [host, name] of hosts) await waitFor(async () => (await whoami(host)).text === name, { what: `the share of ${name} answering` });
  t.deepEqual(await wrong(5), [], 'two processes: every request answered by its own target');

  runs.push(share(['http://localhost:8082', '--dir', dir]));
  const third = await runs[2].up();
  hosts.push([new URL(third.endpoint).hostname, 'third']);
  await waitFor(async () => (await whoami(hosts[2][0])).text === 'third', { what: 'the third share answering' });
  t.deepEqual(await wrong(5), [], 'three processes: every request answered by its own target');

  // a TCP share beside them: its connections go to its own process, the HTTP requests never to it
  runs.push(share(['9290', '--tcp', '--dir', dir]));
  const tcp = await runs[3].up();
  const port = Number(new URL(tcp.endpoint).port);
  await waitFor(async () => (await echoThrough(port, 'x').catch(() => '')) === 'x', { what: 'the TCP share echoing' });
  const echoes = await Promise.all(Array.from({ length: 20 }, (_, i) => echoThrough(port, `echo ${i}`).catch((e: Error) => e.message)));
  t.deepEqual(
    echoes.filter((e, i) => e !== `echo ${i}`),
    [],
    'every TCP connection carried by the process that serves it',
  );
  t.deepEqual(await wrong(3), [], 'and the HTTP requests still by theirs');
  for (const run of runs) run.child.kill('SIGINT');
  for (const run of runs) t.is(await run.exited, 0, run.err());
});
