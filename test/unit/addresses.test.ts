import test from 'ava';
import {
  cidrContains,
  formatCidr,
  formatIpv4,
  hostPortProblem,
  parseCidr,
  parseIpv4,
  publicUnicastProblem,
  subnetAddressProblem,
  vpcCidr,
} from '../../shared/ipsec/addresses.js';

test('IPv4: strict dotted quads only, round trip to text', (t) => {
  t.is(parseIpv4('0.0.0.0'), 0);
  t.is(parseIpv4('255.255.255.255'), 2 ** 32 - 1);
  t.is(formatIpv4(parseIpv4('203.0.113.10')!), '203.0.113.10');
  for (const bad of ['1.2.3', '1.2.3.4.5', '01.2.3.4', '1.2.3.256', '1.2.3.-1', ' 1.2.3.4', '1.2.3.4 ', '0x1.2.3.4', '1..3.4', '', '::1']) {
    t.is(parseIpv4(bad), undefined, bad);
  }
});

test('CIDR: network address required, prefix 0 to 32, containment at both ends', (t) => {
  const cidr = parseCidr('10.1.0.0/16');
  if (typeof cidr === 'string') return t.fail(cidr);
  t.deepEqual(cidr, { network: parseIpv4('10.1.0.0'), prefix: 16, size: 65536 });
  t.true(cidrContains(cidr, parseIpv4('10.1.0.0')!));
  t.true(cidrContains(cidr, parseIpv4('10.1.255.255')!));
  t.false(cidrContains(cidr, parseIpv4('10.2.0.0')!));
  t.false(cidrContains(cidr, parseIpv4('10.0.255.255')!));
  t.is(formatCidr(cidr), '10.1.0.0/16');
  t.regex(parseCidr('10.1.0.1/16') as string, /did you mean 10\.1\.0\.0\/16/);
  for (const bad of ['10.0.0.0', '10.0.0.0/33', '10.0.0.0/', '10.0.0.0/8/8', '10.0.0.0/08', 'x/8']) t.is(typeof parseCidr(bad), 'string', bad);
  t.deepEqual(parseCidr('0.0.0.0/0'), { network: 0, prefix: 0, size: 2 ** 32 });
  t.deepEqual(parseCidr('192.0.2.7/32'), { network: parseIpv4('192.0.2.7'), prefix: 32, size: 1 });
});

test('public unicast: private, shared, loopback, link-local, multicast, reserved and broadcast refused; documentation ranges accepted', (t) => {
  for (const ok of ['203.0.113.10', '198.51.100.1', '192.0.2.1', '8.8.8.8', '172.32.0.1', '100.128.0.1']) t.is(publicUnicastProblem(ok), undefined, ok);
  const refused: [string, RegExp][] = [
    ['10.0.0.1', /private/],
    ['172.16.0.1', /private/],
    ['172.31.255.255', /private/],
    ['192.168.1.1', /private/],
    ['100.64.0.1', /shared/],
    ['127.0.0.1', /loopback/],
    ['169.254.1.1', /link-local/],
    ['224.0.0.1', /multicast/],
    ['255.255.255.255', /broadcast|reserved/],
    ['240.0.0.1', /reserved/],
    ['0.1.2.3', /this network/],
    ['1.2.3', /IPv4 address/],
  ];
  for (const [ip, why] of refused) t.regex(publicUnicastProblem(ip) ?? '', why, ip);
});

test('subnet addresses: the first four and the last are reserved', (t) => {
  const vpc = vpcCidr('10.40.0.0/24');
  t.regex(subnetAddressProblem(vpc, parseIpv4('10.40.0.3')!) ?? '', /reserved/);
  t.is(subnetAddressProblem(vpc, parseIpv4('10.40.0.4')!), undefined);
  t.is(subnetAddressProblem(vpc, parseIpv4('10.40.0.254')!), undefined);
  t.regex(subnetAddressProblem(vpc, parseIpv4('10.40.0.255')!) ?? '', /reserved/);
  t.regex(subnetAddressProblem(vpc, parseIpv4('10.41.0.5')!) ?? '', /inside the VPC/);
  t.throws(() => vpcCidr('10.0.0.0/29'), { message: /28 or larger/ });
  t.throws(() => vpcCidr('10.0.0.1/24'), { message: /HUB_VPC_CIDR/ });
});

test('host:port: hostnames, IPv4 and bracketed IPv6, ports 1 to 65535', (t) => {
  for (const ok of ['db.internal:5432', 'localhost:1', '10.0.0.1:65535', '[::1]:22', '[fd00::1]:8080', 'a-b.c:80', 'host.:80'])
    t.is(hostPortProblem(ok), undefined, ok);
  const refused: [string, RegExp][] = [
    ['db.internal', /host:port/],
    ['db:0', /between 1 and 65535/],
    ['db:65536', /between 1 and 65535/],
    ['db:123456', /host:port/],
    ['[zz]:80', /IPv6/],
    ['[1.2.3.4]:80', /IPv6/],
    ['1.2.3.999:80', /IPv4/],
    ['-a.b:80', /hostname/],
    ['a_b:80', /hostname/],
    [`${'a'.repeat(64)}.b:80`, /hostname/],
    ['::1:22', /host:port/],
  ];
  for (const [text, why] of refused) t.regex(hostPortProblem(text) ?? '', why, text);
});
