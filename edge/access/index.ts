/** The edge's access control as one bundle: mutual TLS by the hubs' client certificates, and login. */
import type pg from 'pg';
import type { AccessControl } from './types.js';
import { createLogin } from './login/index.js';
import { ClientCertificateRegistry, mutualTlsServerOptions } from './mutualTls.js';

/** `pool` is the edge's own (the registry reads through it); `secretKey` is HUB_SECRET_KEY (the cookie key's source). */
export function accessControl(pool: pg.Pool, secretKey: Buffer): AccessControl {
  return {
    mutualTls: new ClientCertificateRegistry(pool),
    login: createLogin({ secretKey }),
    tlsOptions: { ...mutualTlsServerOptions },
  };
}
