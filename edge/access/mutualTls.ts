/**
 * Mutual TLS for shares created with `mutualTls: true`: which client certificates a hub admits.
 *
 * The registry keeps, for every hub, its issuing CA certificate and the fingerprints (and serials) of the client
 * certificates listed in the hub, read with plain `pg` queries and refreshed from the edge's change notifications.
 * `check()` is synchronous and does no database work: a map lookup by the SHA-256 fingerprint of the certificate the
 * TLS handshake proved (the handshake's CertificateVerify shows the client holds the private key; the edge's listener
 * has `rejectUnauthorized: false`, so the chain is judged here and not by OpenSSL).
 *
 * Admitted: a certificate whose fingerprint is listed in the hub (uploaded, generated from a CSR or enrolled), within
 * its validity; or one that the hub's issuing CA signed whose serial is still listed among the hub's issued
 * certificates. Everything else is refused with a message that says why.
 */
import { constants as cryptoConstants, X509Certificate } from 'node:crypto';
import type { TLSSocket } from 'node:tls';
import type pg from 'pg';
import type { ErrorCode } from '../../shared/errors.js';
import type { CertificateRow, EdgeChange } from '../types.js';

interface ClientIdentity {
  name: string;
  /** SHA-256 of the DER, hex lower-case, no colons. */
  fingerprint: string;
  certificateId: string;
}

type MutualTlsDecision = { ok: true; identity: ClientIdentity } | { ok: false; code: ErrorCode; message: string };

/**
 * Options for the edge's TLS server: ask every client for a certificate but let the request decide, and keep no
 * resumable sessions (no tickets, no session cache), so that every connection carries its peer certificate and a
 * deleted certificate cannot ride on a resumed session.
 */
export const mutualTlsServerOptions = {
  requestCert: true,
  rejectUnauthorized: false,
  secureOptions: cryptoConstants.SSL_OP_NO_TICKET,
  sessionTimeout: 0,
} as const;

interface Listed {
  id: string;
  hubId: string;
  name: string;
  fingerprint: string;
  serial: string;
  /** Set for certificates this service issued (CSR or enrollment). */
  issuerId: string | null;
  notBefore: number;
  notAfter: number;
}

interface HubCa {
  id: string;
  hubId: string;
  certificate: X509Certificate;
}

interface Peer {
  certificate: X509Certificate;
  fingerprint: string;
  serial: string;
}

const CERTIFICATE_COLUMNS = `id, hub_id, name, fingerprint_sha256, serial_number, issuer_id, not_before, not_after`;

const normaliseSerial = (serial: string) => serial.toLowerCase().replace(/^0+(?=.)/, '');

const toListed = (row: CertificateRow): Listed => ({
  id: row.id,
  hubId: row.hub_id,
  name: row.name,
  fingerprint: row.fingerprint_sha256.toLowerCase(),
  serial: normaliseSerial(row.serial_number),
  issuerId: row.issuer_id,
  notBefore: row.not_before.getTime(),
  notAfter: row.not_after.getTime(),
});

const peers = new WeakMap<TLSSocket, Peer | null>();

/** The certificate the client presented on this connection (read once per connection). */
function peerOf(socket: TLSSocket): Peer | null {
  let peer = peers.get(socket);
  if (peer === undefined) {
    const certificate = typeof socket.getPeerX509Certificate === 'function' ? socket.getPeerX509Certificate() : undefined;
    peer = certificate
      ? { certificate, fingerprint: certificate.fingerprint256.replaceAll(':', '').toLowerCase(), serial: normaliseSerial(certificate.serialNumber) }
      : null;
    peers.set(socket, peer);
  }
  return peer;
}

const iso = (ms: number) => new Date(ms).toISOString();

export class ClientCertificateRegistry {
  /** `${hubId} ${fingerprint}` -> listed certificate: each hub's own list; another hub listing the same
   * certificate (an upload of someone else's public certificate) never affects this one. */
  private byFingerprint = new Map<string, Listed>();
  private byId = new Map<string, Listed>();
  /** hubId -> serial -> issued certificate */
  private issuedSerials = new Map<string, Map<string, Listed>>();
  private cas = new Map<string, HubCa>();
  /** fingerprint -> id of the issuing CA whose signature verified, or null when none of ours did */
  private signedBy = new Map<string, string | null>();
  private queue: Promise<unknown> = Promise.resolve();

  constructor(private readonly pool: pg.Pool) {}

  /** Full (re)load: every hub's issuing CA and every listed client certificate. */
  load(): Promise<void> {
    return this.serialised(async () => {
      const [cas, certs] = await Promise.all([
        this.pool.query<{ id: string; hub_id: string; certificate_pem: string }>(
          `SELECT id, hub_id, certificate_pem FROM certificate_authorities WHERE kind = 'ISSUING'`,
        ),
        this.pool.query<CertificateRow>(`SELECT ${CERTIFICATE_COLUMNS} FROM client_certificates`),
      ]);
      this.byFingerprint = new Map();
      this.byId = new Map();
      this.issuedSerials = new Map();
      this.cas = new Map();
      for (const row of cas.rows) this.cas.set(row.hub_id, { id: row.id, hubId: row.hub_id, certificate: new X509Certificate(row.certificate_pem) });
      for (const row of certs.rows) this.add(toListed(row));
    });
  }

  /** Incremental refresh from a change notification: one certificate by id, else the hub, else everything. */
  onChange(change: EdgeChange): Promise<void> {
    if (change.table === 'client_certificates') {
      const carried = change.certificate;
      // the notification carries the row (added or changed): kept as it says, in order with loads and reads
      if (carried && change.op !== 'DELETE') return this.serialised(() => this.keep(carried));
      if (change.id && change.op === 'DELETE') {
        const id = change.id;
        return this.serialised(async () => this.remove(id));
      }
      if (change.id) return this.serialised(() => this.refreshCertificate(change.id as string));
      if (change.hubId) return this.serialised(() => this.refreshHub(change.hubId as string));
      return this.load();
    }
    if (change.table === 'certificate_authorities') {
      if (change.hubId) return this.serialised(() => this.refreshHub(change.hubId as string));
      return this.load();
    }
    if (change.table === 'hubs' && change.op === 'DELETE' && change.hubId) {
      return this.serialised(async () => this.dropHub(change.hubId as string));
    }
    return Promise.resolve();
  }

  /** Whether the client on this TLS connection may reach a mutual-TLS share of `hubId`. Synchronous; no I/O. */
  check(hubId: string, socket: TLSSocket): MutualTlsDecision {
    if (!socket || !(socket as TLSSocket).encrypted)
      return { ok: false, code: 'EH_MTLS_REQUIRED', message: 'this share requires mutual TLS: connect over HTTPS with a client certificate' };
    const peer = peerOf(socket);
    if (!peer) return { ok: false, code: 'EH_MTLS_NO_CERT', message: 'this share requires a client certificate and none was presented' };
    const now = Date.now();
    const listed = this.byFingerprint.get(`${hubId} ${peer.fingerprint}`);
    if (listed) return this.admit(listed, now);
    const issuer = this.issuingCaOf(peer);
    if (issuer) {
      if (issuer.hubId !== hubId) return { ok: false, code: 'EH_MTLS_CERT_OTHER_HUB', message: 'the client certificate was issued for another hub' };
      const bySerial = this.issuedSerials.get(hubId)?.get(peer.serial);
      if (bySerial && bySerial.issuerId === issuer.id) {
        // listed by serial: judge validity by the certificate actually presented
        return this.admit(
          { ...bySerial, fingerprint: peer.fingerprint, notBefore: Date.parse(peer.certificate.validFrom), notAfter: Date.parse(peer.certificate.validTo) },
          now,
        );
      }
      return { ok: false, code: 'EH_MTLS_CERT_DELETED', message: 'the client certificate was deleted or is no longer listed in the hub' };
    }
    return { ok: false, code: 'EH_MTLS_CERT_UNKNOWN', message: 'the client certificate is not known to this hub' };
  }

  private admit(listed: Listed, now: number): MutualTlsDecision {
    if (now >= listed.notAfter) return { ok: false, code: 'EH_MTLS_CERT_EXPIRED', message: `the client certificate expired at ${iso(listed.notAfter)}` };
    if (now < listed.notBefore)
      return { ok: false, code: 'EH_MTLS_CERT_NOT_YET_VALID', message: `the client certificate is not valid before ${iso(listed.notBefore)}` };
    return { ok: true, identity: { name: listed.name, fingerprint: listed.fingerprint, certificateId: listed.id } };
  }

  /** Which of our issuing CAs signed this certificate (verified once per fingerprint). */
  private issuingCaOf(peer: Peer): HubCa | undefined {
    let caId = this.signedBy.get(peer.fingerprint);
    if (caId === undefined) {
      caId = null;
      for (const ca of this.cas.values()) {
        if (peer.certificate.checkIssued(ca.certificate) && safeVerify(peer.certificate, ca.certificate)) {
          caId = ca.id;
          break;
        }
      }
      if (this.signedBy.size > 50_000) this.signedBy.clear();
      this.signedBy.set(peer.fingerprint, caId);
    }
    if (!caId) return undefined;
    for (const ca of this.cas.values()) if (ca.id === caId) return ca;
    return undefined;
  }

  private add(listed: Listed): void {
    this.remove(listed.id);
    this.byId.set(listed.id, listed);
    this.byFingerprint.set(`${listed.hubId} ${listed.fingerprint}`, listed);
    if (listed.issuerId) {
      let serials = this.issuedSerials.get(listed.hubId);
      if (!serials) this.issuedSerials.set(listed.hubId, (serials = new Map()));
      serials.set(listed.serial, listed);
    }
  }

  private remove(id: string): void {
    const old = this.byId.get(id);
    if (!old) return;
    this.byId.delete(id);
    const key = `${old.hubId} ${old.fingerprint}`;
    if (this.byFingerprint.get(key)?.id === id) this.byFingerprint.delete(key);
    const serials = this.issuedSerials.get(old.hubId);
    if (serials?.get(old.serial)?.id === id) serials.delete(old.serial);
  }

  private dropHub(hubId: string): void {
    for (const listed of [...this.byId.values()]) if (listed.hubId === hubId) this.remove(listed.id);
    this.issuedSerials.delete(hubId);
    this.cas.delete(hubId);
  }

  /** A certificate row as a change notification carried it. */
  private async keep(row: CertificateRow<string>): Promise<void> {
    this.add(toListed({ ...row, not_before: new Date(row.not_before), not_after: new Date(row.not_after) }));
    // an issued certificate may name a CA this process has not seen yet (a hub's first issuance)
    if (row.issuer_id && !this.cas.has(row.hub_id)) await this.refreshCa(row.hub_id);
  }

  private async refreshCertificate(id: string): Promise<void> {
    const { rows } = await this.pool.query<CertificateRow>(`SELECT ${CERTIFICATE_COLUMNS} FROM client_certificates WHERE id = $1`, [id]);
    if (rows[0]) {
      this.add(toListed(rows[0]));
      // an issued certificate may name a CA this process has not seen yet (a hub's first issuance)
      if (rows[0].issuer_id && !this.cas.has(rows[0].hub_id)) await this.refreshCa(rows[0].hub_id);
    } else this.remove(id);
  }

  private async refreshCa(hubId: string): Promise<void> {
    const { rows } = await this.pool.query<{ id: string; certificate_pem: string }>(
      `SELECT id, certificate_pem FROM certificate_authorities WHERE kind = 'ISSUING' AND hub_id = $1`,
      [hubId],
    );
    if (rows[0]) this.cas.set(hubId, { id: rows[0].id, hubId, certificate: new X509Certificate(rows[0].certificate_pem) });
    else this.cas.delete(hubId);
    this.signedBy.clear();
  }

  private async refreshHub(hubId: string): Promise<void> {
    const { rows } = await this.pool.query<CertificateRow>(`SELECT ${CERTIFICATE_COLUMNS} FROM client_certificates WHERE hub_id = $1`, [hubId]);
    await this.refreshCa(hubId);
    for (const listed of [...this.byId.values()]) if (listed.hubId === hubId) this.remove(listed.id);
    for (const row of rows) this.add(toListed(row));
  }

  /** Loads and refreshes run one at a time, in the order they were asked for. */
  private serialised(task: () => Promise<void>): Promise<void> {
    const run = this.queue.then(task, task);
    this.queue = run.catch(() => undefined);
    return run;
  }
}

function safeVerify(certificate: X509Certificate, issuer: X509Certificate): boolean {
  try {
    return certificate.verify(issuer.publicKey);
  } catch {
    return false;
  }
}
