import { readFileSync, unwatchFile, watchFile } from 'node:fs';
import tls from 'node:tls';
import type pg from 'pg';
import { logger } from '../../shared/logger.js';
import { decryptSecret } from '../../shared/secrets.js';

interface Material {
  certificatePem: string;
  keySealed: string;
  context?: tls.SecureContext;
}

/**
 * Server certificates by SNI. An ACTIVE custom frontend serves its own certificate for its hostname and the share
 * hosts under it; standard frontends serve the operator's files (HUB_EDGE_TLS_CERT_FILE/KEY_FILE) when given, else
 * the wildcard certificate the worker issued for their domain (edge_certificates). Keys are decrypted here, when a
 * context is first needed; a renewal (a change notification) drops the cached context, so the next handshake
 * serves the new certificate without a restart.
 */
export class CertificateStore {
  private custom = new Map<string, Material>();
  private standard = new Map<string, Material>();
  private operator: tls.SecureContext | undefined;
  private work: Promise<void> = Promise.resolve();

  constructor(
    private readonly pool: pg.Pool,
    private readonly files: { certFile?: string; keyFile?: string } = {},
  ) {
    this.loadOperatorFiles();
    if (files.certFile && files.keyFile) {
      for (const file of [files.certFile, files.keyFile]) watchFile(file, { interval: 1000 }, () => this.loadOperatorFiles());
    }
  }

  private loadOperatorFiles(): void {
    const { certFile, keyFile } = this.files;
    if (!certFile || !keyFile) return;
    try {
      this.operator = tls.createSecureContext({ cert: readFileSync(certFile), key: readFileSync(keyFile) });
      logger.info({ certFile }, 'edge: operator certificate loaded');
    } catch (err) {
      // keep serving the previous one (a renewal half-written is retried on the next change of the files)
      logger.error({ err: (err as Error).message, certFile }, 'edge: operator certificate could not be loaded');
    }
  }

  /** Full reload of the certificates from PostgreSQL (start, reconnect, any certificate change). */
  reload(): Promise<void> {
    const run = this.work.then(async () => {
      const [custom, standard] = await Promise.all([
        this.pool.query<{ hostname: string; certificate_pem: string; certificate_key_sealed: string }>(
          `SELECT hostname, certificate_pem, certificate_key_sealed FROM custom_frontends WHERE status = 'ACTIVE' AND certificate_pem IS NOT NULL`,
        ),
        this.pool.query<{ domain: string; certificate_pem: string; private_key_sealed: string }>(
          `SELECT domain, certificate_pem, private_key_sealed FROM edge_certificates`,
        ),
      ]);
      this.custom = this.merge(
        this.custom,
        custom.rows.map((r) => [r.hostname, r.certificate_pem, r.certificate_key_sealed]),
      );
      this.standard = this.merge(
        this.standard,
        standard.rows.map((r) => [r.domain, r.certificate_pem, r.private_key_sealed]),
      );
    });
    this.work = run.catch((err) => logger.error({ err: (err as Error).message }, 'edge: certificate load failed'));
    return run;
  }

  /** Keeps the built context of a certificate that did not change. */
  private merge(previous: Map<string, Material>, rows: [string, string, string][]): Map<string, Material> {
    const next = new Map<string, Material>();
    for (const [name, certificatePem, keySealed] of rows) {
      const old = previous.get(name);
      next.set(name, old && old.certificatePem === certificatePem ? old : { certificatePem, keySealed });
    }
    return next;
  }

  private context(material: Material): tls.SecureContext {
    material.context ??= tls.createSecureContext({ cert: material.certificatePem, key: decryptSecret(material.keySealed) });
    return material.context;
  }

  /** The context for a server name, or undefined (the handshake then fails: no certificate for that name). */
  contextFor(servername: string): tls.SecureContext | undefined {
    const name = servername.toLowerCase();
    const parent = name.slice(name.indexOf('.') + 1);
    const custom = this.custom.get(name) ?? this.custom.get(parent);
    if (custom) return this.context(custom);
    if (this.operator) return this.operator;
    const standard = this.standard.get(parent) ?? this.standard.get(name);
    return standard ? this.context(standard) : undefined;
  }

  /** tls.Server's SNICallback. */
  readonly sniCallback = (servername: string, callback: (err: Error | null, ctx?: tls.SecureContext) => void): void => {
    try {
      const ctx = this.contextFor(servername);
      if (!ctx) return callback(new Error(`no certificate for ${servername}`));
      callback(null, ctx);
    } catch (err) {
      logger.error({ err: (err as Error).message, servername }, 'edge: certificate unusable');
      callback(err as Error);
    }
  };

  close(): void {
    if (this.files.certFile) unwatchFile(this.files.certFile);
    if (this.files.keyFile) unwatchFile(this.files.keyFile);
  }
}
