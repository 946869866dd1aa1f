/**
 * Step 6: login (edge/access/login): a share with an auth provider lets a request through with a session of an allowed
 * email, and answers the rest itself (the redirect to the provider, its callback). From here the connection is
 * watched with the rule that admitted it (edge/revocation.ts).
 */
import { logger } from '../../shared/logger.js';
import { type Exchange, HANDLED, type Refusal, type Step, type Verdict } from './exchange.js';
import type { PipelineParts } from './parts.js';

const idpUnreachable: Refusal = { code: 'EH_IDP_UNREACHABLE', message: 'the identity provider could not be reached' };
const unavailable: Refusal = { code: 'EH_LOGIN_UNAVAILABLE', message: 'this share requires login, which is not available on this edge' };

export const login =
  ({ access }: PipelineParts): Step =>
  (x) => {
    const route = x.route!;
    if (!route.auth) {
      x.keep();
      return undefined;
    }
    const hook = access.login;
    if (!hook) return unavailable;
    const res = x.loginResponse();
    const ctx = { host: x.host, secure: x.secure, origin: `${x.secure ? 'https' : 'http'}://${x.req.headers.host}`, tap: x.tap };
    return hook.handle(x.req, res, route, ctx).then(
      (outcome): Verdict => {
        if (outcome.kind === 'handled') {
          x.loginDone(res);
          return HANDLED;
        }
        x.loginPassed(res);
        x.identity = { ...x.identity, 'x-forwarded-email': outcome.email };
        x.cookie = { value: hook.stripCookies(x.req.headers.cookie) };
        x.email = outcome.email;
        x.until = outcome.until;
        if (!x.gone()) x.keep();
        return undefined;
      },
      (err) => failedLogin(x, err),
    );
  };

function failedLogin(x: Exchange, err: unknown): Refusal {
  logger.error({ err: (err as Error).message, zId: x.route!.zId }, 'edge: login failed');
  return idpUnreachable;
}
