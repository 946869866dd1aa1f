import type { Context } from 'koa';
import { frontendCaPem } from '../../domain/commands/edgeCertificates.js';
import { notFound } from '../../shared/errors.js';
import { frontendsOf } from '../../domain/commands/platform.js';
import { presentFrontend } from '../presenters/platform.js';
import type { Routes } from '../router.js';
import { currentHub } from '../scope.js';

/** Standard frontends (no hub) plus the hub's own active custom frontends. */
async function listFrontends(ctx: Context) {
  ctx.body = (await frontendsOf(currentHub(ctx).id)).map(presentFrontend);
}

export default function routes({ hub, account, open }: Routes) {
  hub.get('/frontends', listFrontends);
  // no authentication: a public certificate, what `curl --cacert` needs to reach an https:// share without -k
  open.get(['/hub/v2/public/frontend-ca.pem', '/hub/public/frontend-ca.pem'], async (ctx) => {
    const pem = await frontendCaPem();
    if (!pem) throw notFound("the service's frontend CA (the edge serves the operator's own certificate, HUB_EDGE_TLS_CERT_FILE: trust its issuer instead)");
    ctx.type = 'application/x-pem-file';
    ctx.set('Cache-Control', 'public, max-age=300');
    ctx.body = pem;
  });
  account.get('/account/frontends', listFrontends);
}
