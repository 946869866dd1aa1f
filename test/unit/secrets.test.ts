import test from 'ava';
import { randomBytes } from 'node:crypto';
import { sealer } from '../../edge/access/login/cookies.js';
import { decryptSecret, encryptSecret, open, safeEqual, seal } from '../../shared/secrets.js';

const key = randomBytes(32);

test('a secret at rest opens with its key only, and any changed byte is refused', (t) => {
  const sealed = encryptSecret('the pre-shared key', key);
  t.regex(sealed, /^v1\.[\w-]+\.[\w-]+\.[\w-]+$/);
  t.not(encryptSecret('the pre-shared key', key), sealed, 'a fresh IV each time');
  t.is(decryptSecret(sealed, key), 'the pre-shared key');
  t.throws(() => decryptSecret(sealed, randomBytes(32)));
  const [v, iv, tag, data] = sealed.split('.');
  const flipped = Buffer.from(data, 'base64url');
  flipped[0] ^= 1;
  t.throws(() => decryptSecret([v, iv, tag, flipped.toString('base64url')].join('.'), key));
  t.throws(() => decryptSecret(`v2.${iv}.${tag}.${data}`, key), { message: /unknown format/ });
});

test('additional data binds a sealing to its purpose', (t) => {
  const sealed = seal(key, 'x', Buffer.from('session'));
  t.is(open(key, sealed, Buffer.from('session')).toString(), 'x');
  t.throws(() => open(key, sealed, Buffer.from('login')));
  t.throws(() => open(key, sealed));
});

test('login cookies: sealed per purpose, tampering and junk open as nothing', (t) => {
  const cookies = sealer(key);
  const value = cookies.seal('session', { v: 1, e: 'a@example.com' });
  t.deepEqual(cookies.open('session', value), { v: 1, e: 'a@example.com' });
  t.is(cookies.open('login', value), undefined);
  t.is(sealer(randomBytes(32)).open('session', value), undefined);
  for (const at of [0, 12, -1]) {
    const raw = Buffer.from(value, 'base64url');
    raw[at < 0 ? raw.length + at : at] ^= 1; // the IV, the ciphertext, the tag
    t.is(cookies.open('session', raw.toString('base64url')), undefined, `byte ${at} changed`);
  }
  t.is(cookies.open('session', 'not base64url!'), undefined);
  t.is(cookies.open('session', 'A'.repeat(5000)), undefined);
  t.is(cookies.open('session', cookies.seal('session', { v: 2 })), undefined);
});

test('safeEqual compares strings of any length', (t) => {
  t.true(safeEqual('abc', 'abc'));
  t.false(safeEqual('abc', 'abd'));
  t.false(safeEqual('abc', 'abcd'));
});
