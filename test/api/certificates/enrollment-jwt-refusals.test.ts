/**
 * The enrollment JWT's refusals on jose's jwtVerify (shared/pki/enrollmentJwt.ts), at the command level: alg
 * confusion (none, HS256), a missing or unknown kid, critical header extensions, a signature over other bytes, not
 * yet valid, no sub, no exp, another issuer or hub; and the good one passes.
 */
import { SignJWT } from 'jose';
import test from 'ava';
import { JwtRefusal, verifyEnrollmentJwt } from '../../../shared/pki/enrollmentJwt.js';
import { activeSigningKey, verificationKey } from '../../../domain/commands/signingKeys.js';
import { useStack } from '../../helpers/stack.js';

useStack(test, { workers: false });
const HUB = 'hub-under-test';

const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');
const now = () => Math.floor(Date.now() / 1000);

async function signed(claims: Record<string, unknown>, header: Record<string, unknown> = {}, configure: (j: SignJWT) => SignJWT = (j) => j) {
  const key = await activeSigningKey();
  return configure(
    new SignJWT(claims)
      .setProtectedHeader({ alg: 'ES256', kid: key.kid, typ: 'JWT', ...header })
      .setIssuer('hub')
      .setAudience(HUB)
      .setSubject('tok')
      .setExpirationTime(now() + 600),
  ).sign(key.privateKey);
}

const refusal = (jwt: string, hub = HUB) =>
  verifyEnrollmentJwt(jwt, hub, verificationKey).then(
    () => 'accepted',
    (err: unknown) => (err instanceof JwtRefusal ? err.label : `threw ${(err as Error).message}`),
  );

test('a good JWT passes with its claims', async (t) => {
  const claims = await verifyEnrollmentJwt(await signed({ url: 'u', name: 'n', validYears: 1 }), HUB, verificationKey);
  t.is(claims.sub, 'tok');
  t.is(claims.name, 'n');
});

test('every kind of bad JWT is refused with its label', async (t) => {
  const good = await signed({ name: 'n' });
  const [, payload] = good.split('.');
  const key = await activeSigningKey();
  const cases: [string, string, string][] = [
    ['alg none', `${b64({ alg: 'none', kid: key.kid })}.${payload}.`, 'invalid'],
    [
      'HS256 with the kid',
      await new SignJWT({ name: 'n', sub: 'tok' })
        .setProtectedHeader({ alg: 'HS256', kid: key.kid })
        .setIssuer('hub')
        .setAudience(HUB)
        .setExpirationTime(now() + 600)
        .sign(new TextEncoder().encode('x'.repeat(32))),
      'invalid',
    ],
    ['no kid', await signed({ name: 'n' }, { kid: undefined }), 'invalid'],
    ['unknown kid', await signed({ name: 'n' }, { kid: 'nope' }), 'unknown_key'],
    [
      'signature over other bytes',
      `${good.split('.')[0]}.${b64({ iss: 'hub', aud: HUB, sub: 'other', exp: now() + 600 })}.${good.split('.')[2]}`,
      'invalid_signature',
    ],
    ['not valid yet', await signed({ name: 'n' }, {}, (j) => j.setNotBefore(now() + 600)), 'invalid'],
    ['no sub', await signed({ name: 'n' }, {}, (j) => j.setSubject('')), 'invalid'],
    ['another issuer', await signed({ name: 'n' }, {}, (j) => j.setIssuer('someone')), 'invalid'],
    ['expired', await signed({ name: 'n' }, {}, (j) => j.setExpirationTime(now() - 5)), 'expired'],
    ['garbage', 'a.b', 'malformed'],
  ];
  for (const [what, jwt, label] of cases) t.is(await refusal(jwt), label, what);
  t.is(await refusal(good, 'another-hub'), 'wrong_hub');
  // a critical header extension nobody understands is refused, whatever the label
  const crit = await signed({ name: 'n' }, { crit: ['x-unknown'], 'x-unknown': true }).catch(() => undefined);
  if (crit) t.not(await refusal(crit), 'accepted');
});
