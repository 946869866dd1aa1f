/**
 * A custom frontend's life after its creation, run by the workers and the clock: the hosting provisioned, the DNS
 * records awaited, the certificate issued (with a back-off after a CA's refusal) and renewed, and a DNS wait that
 * ends for good. The API's operations on custom frontends are in customFrontends.ts.
 */
import { Op, QueryTypes } from 'sequelize';
import { backoffMs } from '../../shared/backoff.js';
import { config } from '../../shared/config.js';
import { db, withTransaction } from '../../shared/db.js';
import { StillWaiting } from '../../shared/errors.js';
import { enqueue } from '../jobs/enqueue.js';
import { CustomFrontend } from '../models/CustomFrontend.js';
import { Execution } from '../models/Execution.js';
import { Frontend } from '../models/Frontend.js';
import type { IssuedCertificate } from '../../shared/providers/certificateIssuer.js';
import { dnsLookup, normalizeName, type DnsLookup } from '../../shared/providers/dns.js';
import { frontendHosting } from '../../shared/providers/frontendHosting.js';
import { encryptSecret } from '../../shared/secrets.js';
import { enqueueActivation } from './customFrontends.js';
import { issueFrontendCertificate } from './frontendCertificates.js';

/** Job: creates the hosting infrastructure and moves NEW -> PENDING, then starts the DNS check. Idempotent. */
export async function provisionHosting(customFrontendId: string): Promise<Record<string, unknown>> {
  const frontend = await CustomFrontend.findByPk(customFrontendId);
  if (!frontend) return { skipped: 'deleted' };
  if (frontend.status !== 'NEW') return { skipped: frontend.status };
  const infrastructure = await frontendHosting().create({
    customFrontendId,
    hostname: frontend.hostname,
    existing: {
      ingressAddresses: frontend.ingressAddresses ?? undefined,
      validationName: frontend.validationName ?? undefined,
      validationValue: frontend.validationValue ?? undefined,
    },
  });
  return withTransaction(async (transaction) => {
    const [moved] = await CustomFrontend.update(
      { ...infrastructure, status: 'PENDING', dnsWaitUntil: new Date(Date.now() + config().dnsWaitMs), dnsMessage: null },
      { where: { id: customFrontendId, status: 'NEW' }, transaction },
    );
    if (!moved) return { skipped: 'no longer NEW' };
    await enqueueActivation(frontend.hubId, customFrontendId, 'system', transaction);
    return { status: 'PENDING', ingressAddresses: infrastructure.ingressAddresses };
  });
}

/** What is missing from DNS, or an empty list when both records resolve to the expected values. */
async function dnsProblems(frontend: CustomFrontend, lookup: DnsLookup = dnsLookup()): Promise<string[]> {
  const expectedAddresses = [...(frontend.ingressAddresses ?? [])].sort();
  const expectedCname = normalizeName(frontend.validationValue ?? '');
  const [addresses, cname] = await Promise.all([lookup.addresses(frontend.hostname), lookup.canonicalName(frontend.validationName ?? '')]);
  const problems: string[] = [];
  const seen = [...new Set(addresses)].sort();
  if (seen.join(',') !== expectedAddresses.join(',')) {
    problems.push(`A record of ${frontend.hostname} resolves to [${seen.join(', ')}], expected [${expectedAddresses.join(', ')}]`);
  }
  if (cname !== expectedCname) {
    problems.push(`CNAME of ${frontend.validationName} resolves to ${cname ?? 'nothing'}, expected ${expectedCname}`);
  }
  return problems;
}

class DnsNotReady extends StillWaiting {}
class CertificateNotIssued extends StillWaiting {}
/** The DNS wait ended: the activation stops for good and the frontend becomes ERROR. */
export class DnsWaitEnded extends Error {}

/** When the frontend's claim on its hostname ends (rows from before the column: their creation + the wait). */
const dnsDeadline = (frontend: CustomFrontend) => frontend.dnsWaitUntil ?? new Date(frontend.createdAt.getTime() + config().dnsWaitMs);

/**
 * The terminal failure of a NEW or PENDING frontend (its provisioning spent its attempts, or its DNS wait ended):
 * ERROR with the reason. The hostname is released at once (the unique index leaves ERROR rows out), so nobody can
 * hold a name they cannot prove. Runs at most once per frontend; an ACTIVE or deleted one is left alone.
 */
export async function failCustomFrontend(customFrontendId: string, reason: string): Promise<boolean> {
  const message = `${reason.slice(0, 1500)}; the hostname is released: delete this custom frontend and create it again to retry`;
  const [moved] = await CustomFrontend.update({ status: 'ERROR', dnsMessage: message }, { where: { id: customFrontendId, status: ['NEW', 'PENDING'] } });
  return moved > 0;
}

/** First retry after 5 minutes, doubling up to 6 hours: a CA that refused is not asked again at the DNS pace. */
function issuanceBackoffMs(failures: number): number {
  return backoffMs(failures, { minMs: 5 * 60_000, maxMs: 6 * 3600_000 });
}

/** The columns a newly issued certificate sets (its key sealed), clearing the failure backoff. */
const storedCertificate = (issued: IssuedCertificate) => ({
  certificatePem: issued.certificatePem,
  certificateKeySealed: encryptSecret(issued.privateKeyPem),
  certificateIssuer: issued.issuer,
  certificateExpiresAt: issued.notAfter,
  certificateFailures: 0,
  certificateRetryAt: null,
  dnsMessage: null,
});

/** A certificate for the frontend from the configured issuer; a failure is recorded (backoff) and rethrown. */
async function issueFor(frontend: CustomFrontend, status: 'PENDING' | 'ACTIVE'): Promise<IssuedCertificate> {
  try {
    return await issueFrontendCertificate({
      hostname: frontend.hostname,
      validationName: frontend.validationName!,
      validationValue: frontend.validationValue!,
    });
  } catch (err) {
    await recordIssuanceFailure(frontend, err as Error, status);
    throw err;
  }
}

async function recordIssuanceFailure(frontend: CustomFrontend, err: Error, status: 'PENDING' | 'ACTIVE' = 'PENDING'): Promise<void> {
  const failures = frontend.certificateFailures + 1;
  const retryAt = new Date(Date.now() + issuanceBackoffMs(failures));
  await CustomFrontend.update(
    {
      certificateFailures: failures,
      certificateRetryAt: retryAt,
      dnsMessage: `certificate issuance failed: ${err.message.slice(0, 500)}; next attempt after ${retryAt.toISOString()}`,
    },
    { where: { id: frontend.id, status } },
  );
}

/**
 * Job: when both records resolve as required, issues the certificate and moves PENDING -> ACTIVE (its frontend
 * becomes listed and usable). Throws DnsNotReady otherwise, so the job is retried after the check interval.
 */
export async function activateWhenDnsReady(customFrontendId: string): Promise<Record<string, unknown>> {
  const frontend = await CustomFrontend.findByPk(customFrontendId);
  if (!frontend) return { skipped: 'deleted' };
  if (frontend.status !== 'PENDING') return { skipped: frontend.status };
  const problems = await dnsProblems(frontend);
  const setMessage = async (message: string) => {
    if (message !== frontend.dnsMessage) await CustomFrontend.update({ dnsMessage: message }, { where: { id: customFrontendId, status: 'PENDING' } });
  };
  const deadline = dnsDeadline(frontend);
  if (problems.length) {
    const missing = problems.join('; ');
    if (Date.now() >= deadline.getTime()) {
      throw new DnsWaitEnded(`DNS records were not in place when the DNS wait ended at ${deadline.toISOString()}: ${missing}`);
    }
    const interval = config().dnsCheckIntervalMs;
    const every = interval % 1000 === 0 ? `${interval / 1000} s` : `${interval} ms`;
    await setMessage(`waiting for DNS records (checked every ${every} until ${deadline.toISOString()}): ${missing}`);
    throw new DnsNotReady(`DNS records not in place yet: ${missing}`);
  }
  if (frontend.certificateRetryAt && frontend.certificateRetryAt > new Date()) {
    if (Date.now() >= deadline.getTime()) {
      throw new DnsWaitEnded(
        `no certificate could be issued before the DNS wait ended at ${deadline.toISOString()}: ${frontend.dnsMessage ?? 'issuance failed'}`,
      );
    }
    const message = `certificate issuance failed ${frontend.certificateFailures} time(s); next attempt after ${frontend.certificateRetryAt.toISOString()}`;
    if (!frontend.dnsMessage?.startsWith('certificate issuance failed')) await setMessage(message);
    throw new CertificateNotIssued(message);
  }
  const issued = await issueFor(frontend, 'PENDING');
  return withTransaction(async (transaction) => {
    const [moved] = await CustomFrontend.update(
      {
        status: 'ACTIVE',
        ...storedCertificate(issued),
      },
      { where: { id: customFrontendId, status: 'PENDING' }, transaction },
    );
    if (!moved) return { skipped: 'no longer PENDING' };
    await Frontend.update({ active: true }, { where: { customFrontendId }, transaction });
    return { status: 'ACTIVE', certificateIssuer: issued.issuer, certificateExpiresAt: issued.notAfter.toISOString() };
  });
}

/**
 * Clock: NEW or PENDING frontends whose DNS wait ended a minute ago or more and that no execution is working on any
 * more (a check that gave up before this state existed, a job lost for good) become ERROR, releasing their hostname.
 * The activation job normally does this itself at the deadline, with what was missing.
 */
export async function expireDnsWaits(): Promise<number> {
  const rows = await db().query<{ id: string }>(
    `UPDATE custom_frontends f
        SET status = 'ERROR', updated_at = now(),
            dns_message = 'the DNS wait ended at ' || to_char(COALESCE(f.dns_wait_until, f.created_at + make_interval(secs => :waitSeconds)) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"')
              || ' with no DNS check under way; the hostname is released: delete this custom frontend and create it again to retry'
      WHERE f.status IN ('NEW', 'PENDING')
        AND COALESCE(f.dns_wait_until, f.created_at + make_interval(secs => :waitSeconds)) < now() - interval '1 minute'
        AND NOT EXISTS (SELECT 1 FROM executions e WHERE e.resource_type = 'customFrontend' AND e.resource_id = f.id AND e.status IN ('QUEUED', 'RUNNING'))
      RETURNING f.id`,
    { replacements: { waitSeconds: config().dnsWaitMs / 1000 }, type: QueryTypes.SELECT },
  );
  return rows.length;
}

export const RENEW_JOB = 'frontends.renewCertificate';

const renewalDue = () => new Date(Date.now() + config().certificateRenewBeforeDays * 86_400_000);

/**
 * Clock: one renewal execution for each ACTIVE custom frontend whose certificate expires within
 * HUB_CERTIFICATE_RENEW_BEFORE_DAYS, unless one is under way or a failed one is backing off.
 */
export async function enqueueDueRenewals(): Promise<number> {
  const due = await CustomFrontend.findAll({
    where: {
      status: 'ACTIVE',
      certificateExpiresAt: { [Op.lt]: renewalDue() },
      [Op.or]: [{ certificateRetryAt: null }, { certificateRetryAt: { [Op.lte]: new Date() } }],
    },
    attributes: ['id', 'hubId'],
    limit: 500,
  });
  let enqueued = 0;
  for (const frontend of due) {
    await withTransaction(async (transaction) => {
      // the row lock makes two clocks (or a slow previous tick) agree on one renewal
      const locked = await CustomFrontend.findOne({ where: { id: frontend.id, status: 'ACTIVE' }, transaction, lock: transaction.LOCK.UPDATE });
      if (!locked) return;
      const underWay = await Execution.count({
        where: { resourceType: 'customFrontend', resourceId: frontend.id, type: RENEW_JOB, status: { [Op.in]: ['QUEUED', 'RUNNING'] } },
        transaction,
      });
      if (underWay) return;
      await enqueue({
        type: RENEW_JOB,
        hubId: frontend.hubId,
        resourceType: 'customFrontend',
        resourceId: frontend.id,
        payload: { customFrontendId: frontend.id },
        createdBy: 'scheduler',
        transaction,
      });
      enqueued++;
    });
  }
  return enqueued;
}

/** Job: a new certificate for an ACTIVE frontend that stays ACTIVE; a failure backs off like a first issuance. */
export async function renewCertificate(customFrontendId: string): Promise<Record<string, unknown>> {
  const frontend = await CustomFrontend.findByPk(customFrontendId);
  if (!frontend || frontend.status !== 'ACTIVE') return { skipped: frontend ? frontend.status : 'deleted' };
  if (frontend.certificateExpiresAt && frontend.certificateExpiresAt >= renewalDue()) return { skipped: 'not due' };
  const issued = await issueFor(frontend, 'ACTIVE');
  await CustomFrontend.update(
    {
      ...storedCertificate(issued),
    },
    { where: { id: customFrontendId, status: 'ACTIVE' } },
  );
  return { renewed: true, certificateExpiresAt: issued.notAfter.toISOString() };
}
