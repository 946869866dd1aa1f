/**
 * Custom frontend certificates from an ACME CA: Pebble (the ACME test server, `apt-get install pebble`) validates
 * DNS-01 through the loopback DNS server, which follows `_acme-challenge.<hostname>` CNAME into the validation zone
 * and forwards that zone to the service's own validation responder. Skipped where Pebble is not installed.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import test from 'ava';
import pg from 'pg';
import { freePort } from '../../../scripts/services/index.js';
import { stopValidationResponder } from '../../../shared/providers/dnsValidationZone.js';
import { publishDnsRecords, startDnsServer, type TestDnsServer } from '../../helpers/dnsServer.js';
import { selfSignedCertificate } from '../../helpers/selfSigned.js';
import { useStack, waitFor } from '../../helpers/stack.js';

// `npm test` installs Pebble when it is missing (scripts/test.ts); without it this file fails rather than skips
if (spawnSync('pebble', ['-version']).error !== undefined) throw new Error('pebble is not on PATH: run the tests with `npm test`');

let dns: TestDnsServer;
let pebble: ChildProcess | undefined;
/** The service's settings for this Pebble (set once it answers). */
let stackEnv: Record<string, string>;

function get(url: string, ca: Buffer): Promise<number> {
  return new Promise((resolve) => {
    https
      .get(url, { ca }, (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      })
      .on('error', () => resolve(0));
  });
}

test.before(async () => {
  const dir = mkdtempSync(path.join(process.env.TEST_WORK_DIR ?? os.tmpdir(), 'pebble-'));
  const { certFile: cert, keyFile: key } = selfSignedCertificate(dir, 'pebble', '/CN=localhost', 'DNS:localhost,IP:127.0.0.1');
  const [listen, management, httpPort, tlsPort, validationPort] = await Promise.all([freePort(), freePort(), freePort(), freePort(), freePort()]);
  const config = path.join(dir, 'pebble.json');
  writeFileSync(
    config,
    JSON.stringify({
      pebble: {
        listenAddress: `127.0.0.1:${listen}`,
        managementListenAddress: `127.0.0.1:${management}`,
        certificate: cert,
        privateKey: key,
        httpPort,
        tlsPort,
        ocspResponderURL: '',
        externalAccountBindingRequired: false,
      },
    }),
  );
  dns = await startDnsServer();
  dns.forward('validation.edgehub.localhost', `127.0.0.1:${validationPort}`);
  pebble = spawn('pebble', ['-config', config, '-dnsserver', dns.server], {
    env: { ...process.env, PEBBLE_VA_NOSLEEP: '1', PEBBLE_WFE_NONCEREJECT: '0' },
    stdio: 'ignore',
  });
  const directory = `https://127.0.0.1:${listen}/dir`;
  const ca = readFileSync(cert);
  await waitFor(async () => (await get(directory, ca)) === 200, { what: 'pebble' });
  stackEnv = {
    HUB_DNS_SERVERS: dns.server,
    HUB_DNS_CHECK_INTERVAL_MS: '50',
    HUB_ACME_DIRECTORY_URL: directory,
    HUB_ACME_CA_FILE: cert,
    HUB_ACME_CONTACT: 'ops@example.com',
    HUB_VALIDATION_DNS_LISTEN: `127.0.0.1:${validationPort}`,
  };
});
const stack = useStack(test, () => ({ env: stackEnv }));

test.after.always(async () => {
  await stopValidationResponder();
  pebble?.kill();
  await dns?.close();
});

test.serial('with an ACME directory configured, ACTIVE brings a certificate obtained through DNS-01', async (t) => {
  const hub = await stack.hub();
  const created = await hub.call('POST', `${hub.h}/custom-frontends`, { body: { hostname: 'acme.example.com' } });
  t.is(created.status, 201);
  const id = created.json.id;
  await publishDnsRecords(dns, hub, id);

  const active = await waitFor(
    async () => {
      const r = await hub.call('GET', `${hub.h}/custom-frontends/${id}`);
      return r.json.status === 'ACTIVE' && r.json;
    },
    { what: 'ACTIVE with an ACME certificate', timeoutMs: 60_000 },
  );
  t.truthy(active.certificateExpiresAt);

  const client = new pg.Client({ connectionString: stack.databaseUrl });
  await client.connect();
  try {
    const row = (await client.query('SELECT certificate_pem, certificate_issuer FROM custom_frontends WHERE id = $1', [id])).rows[0];
    t.is(row.certificate_issuer, 'acme');
    const leaf = new X509Certificate(row.certificate_pem);
    t.regex(leaf.subjectAltName ?? '', /DNS:acme\.example\.com/);
    t.regex(leaf.subjectAltName ?? '', /DNS:\*\.acme\.example\.com/);
    t.regex(leaf.issuer, /Pebble/i);
    const leftover = await client.query('SELECT count(*)::int AS n FROM acme_validation_records');
    t.is(leftover.rows[0].n, 0, 'the TXT records are withdrawn after issuance');
    const accounts = (await client.query('SELECT directory_url, account_url, private_key_sealed FROM acme_accounts')).rows;
    t.is(accounts.length, 1, 'one account for the directory');
    t.regex(accounts[0].account_url ?? '', /^https:\/\/127\.0\.0\.1:\d+\/my-account\//, 'the registered account URL is kept');
    t.notRegex(accounts[0].private_key_sealed, /PRIVATE KEY/, 'the account key is sealed');
  } finally {
    await client.end();
  }
  // Pebble read the TXT record through the owner's CNAME
  t.true(dns.queries.includes('_acme-challenge.acme.example.com'));
});
