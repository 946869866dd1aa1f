import test from 'ava';
import { CidrSet, parseV4 } from '../../edge/policy/cidr.js';
import { ClientAddress } from '../../edge/policy/clientAddress.js';

test('CIDR sets: edges of ranges, merged and adjacent ranges, IPv6, IPv4-mapped addresses on either side', (t) => {
  const set = new CidrSet([
    '10.0.0.0/8',
    '10.1.0.0/16',
    '192.168.1.0/25',
    '192.168.1.128/25',
    '203.0.113.7/32',
    '2001:db8::/32',
    '::ffff:198.51.100.0/120',
    'garbage',
  ]);
  for (const yes of [
    '10.0.0.0',
    '10.255.255.255',
    '192.168.1.0',
    '192.168.1.255',
    '203.0.113.7',
    '2001:db8::1',
    '2001:db8:ffff:ffff:ffff:ffff:ffff:ffff',
    '::ffff:10.2.3.4',
    '198.51.100.9',
    '::ffff:198.51.100.200',
  ])
    t.true(set.has(yes), yes);
  for (const no of [
    '9.255.255.255',
    '11.0.0.0',
    '192.168.2.0',
    '203.0.113.6',
    '203.0.113.8',
    '2001:db9::',
    '2001:db7:ffff::',
    '::1',
    '',
    'not an address',
    '198.51.101.0',
  ])
    t.false(set.has(no), no);
  t.true(new CidrSet(['0.0.0.0/0']).has('255.255.255.255'));
  t.false(new CidrSet(['0.0.0.0/0']).has('::1'));
  t.true(new CidrSet(['::/0']).has('::1'));
  t.is(parseV4('1.2.3.4'), 0x01020304);
  for (const bad of ['1.2.3', '1.2.3.4.5', '256.1.1.1', '1..2.3', '1.2.3.4 ', '01234.1.1.1']) t.is(parseV4(bad), -1, bad);
});

test('the client address: the connection’s; X-Forwarded-For read from the right only through trusted hops', (t) => {
  const req = (remoteAddress: string, xff?: string) => ({ socket: { remoteAddress }, headers: xff === undefined ? {} : { 'x-forwarded-for': xff } }) as never;
  const none = new ClientAddress([]);
  t.is(none.of(req('::ffff:127.0.0.5', '203.0.113.1')), '127.0.0.5');
  const trusting = new ClientAddress(['127.0.0.1/32', '192.0.2.0/24']);
  t.is(trusting.of(req('127.0.0.2', '203.0.113.1')), '127.0.0.2', 'an untrusted peer');
  t.is(trusting.of(req('127.0.0.1', '203.0.113.1')), '203.0.113.1');
  t.is(trusting.of(req('127.0.0.1', '198.51.100.1, 203.0.113.1, 192.0.2.9')), '203.0.113.1', 'a trusted hop is passed, the first untrusted one counts');
  t.is(trusting.of(req('127.0.0.1', 'garbage, 192.0.2.9')), '192.0.2.9', 'an entry that is no address stops the walk');
  t.is(trusting.of(req('127.0.0.1')), '127.0.0.1');
});
