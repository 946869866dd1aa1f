import test from 'ava';
import { generateKeyPairSync, type KeyObject } from 'node:crypto';
import { SignJWT } from 'jose';
import { JwtRefusal, signJwt, verifyEnrollmentJwt } from '../../shared/pki/enrollmentJwt.js';

const key = { kid: 'k1', ...generateKeyPairSync('ec', { namedCurve: 'P-256' }) };
const other = generateKeyPairSync('ec', { namedCurve: 'P-256' });
const keyOf = async (kid: string): Promise<KeyObject | undefined> => (kid === 'k1' ? key.publicKey : undefined);
const inAnHour = () => new Date(Date.now() + 3_600_000);

async function refusedWith(t: import('ava').ExecutionContext, jwt: string, hubId: string, label: string): Promise<void> {
  const err = await t.throwsAsync(verifyEnrollmentJwt(jwt, hubId, keyOf));
  t.true(err instanceof JwtRefusal, String(err));
  t.is((err as JwtRefusal).label, label, err?.message);
}

test('a JWT we sign verifies: ES256, kid in the header, iss, aud, sub, exp', async (t) => {
  const jwt = await signJwt({ name: 'n' }, { hubId: 'h1', subject: 'tok', expiresAt: inAnHour() }, key);
  const header = JSON.parse(Buffer.from(jwt.split('.')[0], 'base64url').toString());
  t.deepEqual(header, { alg: 'ES256', kid: 'k1', typ: 'JWT' });
  const claims = await verifyEnrollmentJwt(jwt, 'h1', keyOf);
  t.like(claims, { iss: 'hub', aud: 'h1', sub: 'tok', name: 'n' });
});

test('refusals carry the labels violations report', async (t) => {
  const signed = (
    claims: Record<string, unknown>,
    to = { hubId: 'h1', subject: 'tok', expiresAt: inAnHour() },
    k: { kid: string; privateKey: KeyObject } = key,
  ) => signJwt(claims, to, k);
  await refusedWith(t, await signed({}), 'h2', 'wrong_hub');
  await refusedWith(t, await signed({}, { hubId: 'h1', subject: 'tok', expiresAt: new Date(Date.now() - 60_000) }), 'h1', 'expired');
  await refusedWith(t, await signed({}, undefined, { kid: 'k2', privateKey: key.privateKey }), 'h1', 'unknown_key');
  await refusedWith(t, await signed({}, undefined, { kid: 'k1', privateKey: other.privateKey }), 'h1', 'invalid_signature');
  await refusedWith(t, 'not.a.jwt', 'h1', 'malformed');
  await refusedWith(t, '', 'h1', 'malformed');
  // alg none and HS256 are never accepted, whatever the key lookup says
  const none = `${Buffer.from(JSON.stringify({ alg: 'none', kid: 'k1' })).toString('base64url')}.${Buffer.from(JSON.stringify({ iss: 'hub', aud: 'h1', sub: 't', exp: 9e9 })).toString('base64url')}.`;
  await refusedWith(t, none, 'h1', 'invalid');
  const hs = await new SignJWT({})
    .setProtectedHeader({ alg: 'HS256', kid: 'k1' })
    .setIssuer('hub')
    .setAudience('h1')
    .setSubject('t')
    .setExpirationTime('1h')
    .sign(new Uint8Array(32));
  await refusedWith(t, hs, 'h1', 'invalid');
  // issuer, missing sub, missing exp, not yet valid, no kid
  const es = (build: (j: SignJWT) => SignJWT, header: Record<string, unknown> = { alg: 'ES256', kid: 'k1' }) =>
    build(new SignJWT({}).setProtectedHeader(header as { alg: string })).sign(key.privateKey);
  await refusedWith(t, await es((j) => j.setIssuer('other').setAudience('h1').setSubject('t').setExpirationTime('1h')), 'h1', 'invalid');
  await refusedWith(t, await es((j) => j.setIssuer('hub').setAudience('h1').setExpirationTime('1h')), 'h1', 'invalid');
  await refusedWith(t, await es((j) => j.setIssuer('hub').setAudience('h1').setSubject('t')), 'h1', 'invalid');
  await refusedWith(t, await es((j) => j.setIssuer('hub').setAudience('h1').setSubject('t').setExpirationTime('2h').setNotBefore('1h')), 'h1', 'invalid');
  await refusedWith(t, await es((j) => j.setIssuer('hub').setAudience('h1').setSubject('t').setExpirationTime('1h'), { alg: 'ES256' }), 'h1', 'invalid');
  await refusedWith(t, await es((j) => j.setIssuer('hub').setAudience('h1').setSubject('').setExpirationTime('1h')), 'h1', 'invalid');
});

test('a key look-up that fails is no refusal of the JWT: its error goes on as it is', async (t) => {
  const jwt = await signJwt({}, { hubId: 'h1', subject: 'tok', expiresAt: inAnHour() }, key);
  const down = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });
  const err = await t.throwsAsync(verifyEnrollmentJwt(jwt, 'h1', async () => Promise.reject(down)));
  t.is(err, down);
  t.false(err instanceof JwtRefusal);
});
