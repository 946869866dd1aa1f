/** The settings of custom frontends and certificates, IPsec, jobs and schedules (shared/settings.ts gathers every group). */
import { z } from 'zod';
import { entry, optionalString, int, httpUrl, duration, IP_PORT_LIST } from './kinds.js';

export const platformSettings = {
  // custom frontends and certificates
  HUB_DNS_SERVERS: entry(
    optionalString.pipe(z.string().regex(IP_PORT_LIST, 'must be comma-separated ip:port pairs (IPv6 as [addr]:port)').optional()),
    'custom frontends',
    'comma-separated `ip:port` resolvers the custom-frontend DNS checks ask',
    'system resolvers',
  ),
  HUB_DNS_CHECK_INTERVAL_MS: entry(int(10, 3_600_000, 30_000), 'custom frontends', "how often a PENDING custom frontend's DNS records are checked"),
  HUB_DNS_WAIT: entry(
    duration('PT72H'),
    'custom frontends',
    'how long a NEW or PENDING custom frontend holds its hostname waiting for DNS before it becomes ERROR',
  ),
  HUB_INGRESS_ADDRESSES: entry(
    z
      .string()
      .regex(/^\d{1,3}(\.\d{1,3}){3}(,\d{1,3}(\.\d{1,3}){3})*$/, 'must be comma-separated IPv4 addresses')
      .default('203.0.113.10,203.0.113.11'),
    'custom frontends',
    "the addresses a custom frontend's A record must name (the edge's public addresses)",
  ),
  HUB_VALIDATION_DOMAIN: entry(
    z
      .string()
      .regex(/^[a-z0-9.-]+$/, 'must be a DNS name')
      .default('validation.edgehub.localhost'),
    'custom frontends',
    'the zone that certificate-validation CNAMEs point into',
  ),
  HUB_VALIDATION_DNS_LISTEN: entry(
    optionalString.pipe(
      z
        .string()
        .regex(/^[^,\s]+:\d+$/, 'must be host:port')
        .optional(),
    ),
    'custom frontends',
    'where this service answers DNS for the validation zone (DNS-01 TXT records)',
    'off',
  ),
  HUB_ACME_DIRECTORY_URL: entry(
    optionalString.pipe(httpUrl.optional()),
    'custom frontends',
    'an ACME CA that issues custom frontend certificates',
    "the service's own CA",
  ),
  HUB_ACME_CA_FILE: entry(optionalString, 'custom frontends', "a PEM file of CAs to trust for the ACME CA's own TLS", 'system CAs'),
  HUB_ACME_CONTACT: entry(optionalString, 'custom frontends', 'the contact email of the ACME account', 'none'),
  HUB_CERTIFICATE_RENEW_BEFORE_DAYS: entry(
    int(1, 365, 30),
    'custom frontends',
    'a custom frontend certificate is renewed when it expires within this many days',
  ),
  HUB_PROVISION_DELAY_MS: entry(int(0, 600_000, 1500), 'custom frontends', 'how long the local provisioner takes per step (custom frontends and IPsec)'),

  // IPsec
  HUB_VPC_CIDR: entry(z.string().default('10.100.0.0/16'), 'IPsec', 'address range the IPsec provider allocates load-balancer addresses from'),
  HUB_IPSEC_PROVIDER: entry(
    z.enum(['strongswan', 'simulated']).optional(),
    'IPsec',
    '`strongswan`: real IKEv2 tunnels run by the edge; `simulated`: addresses and keys only',
    '`strongswan` as root with strongSwan installed, else `simulated`',
  ),
  HUB_IPSEC_WAN_NETNS: entry(
    optionalString,
    'IPsec',
    "a network namespace standing for the internet: tunnels' outside addresses are routed there",
    'none (on the host)',
  ),

  // jobs and schedules
  HUB_QUEUE_PREFIX: entry(
    z
      .string()
      .regex(/^[A-Za-z0-9_-]+$/)
      .default('edgehub'),
    'jobs and schedules',
    'BullMQ and lock key prefix (lets several deployments share one Redis)',
  ),
  HUB_JOB_BACKOFF_MS: entry(
    int(10, 600_000, 1_000),
    'jobs and schedules',
    "the wait before a failed job's first retry; it doubles with each of its five attempts",
  ),
  HUB_JOB_LOCK_MS: entry(
    int(1000, 3_600_000, 8_000),
    'jobs and schedules',
    "a job's lock duration: a dead worker's jobs are taken over within this plus the stalled interval",
  ),
  HUB_STALLED_INTERVAL_MS: entry(int(500, 3_600_000, 4_000), 'jobs and schedules', 'how often workers look for jobs whose worker died'),
  HUB_ISSUANCE_WAIT_MS: entry(
    int(1, 600_000, 30_000),
    'jobs and schedules',
    'how long a request waits for its issuance or key rotation job (Redis connection included) before answering 503; the job still completes',
  ),
  HUB_SWEEP_CRON: entry(
    z.string().default('*/15 * * * * *'),
    'jobs and schedules',
    'how often the clock re-adds jobs Redis never received and reconciles executions an outage left unfinished',
  ),
  HUB_KEY_ROTATION_CRON: entry(z.string().default('0 0 1 * *'), 'jobs and schedules', 'when the clock rotates the enrollment-JWT signing key'),
  HUB_CRL_REFRESH: entry(
    duration('PT12H'),
    'jobs and schedules',
    "how often each CA's CRL is signed anew at the least (a revocation signs it at once); its nextUpdate is this plus one hour, and OCSP answers are signed for the same span",
  ),
  HUB_CERTIFICATE_RENEWAL_CRON: entry(
    z.string().default('0 17 * * * *'),
    'jobs and schedules',
    'when the clock looks for custom frontend and edge certificates to renew',
  ),
  HUB_HEALTH_CHECK_RECONCILE_CRON: entry(
    z.string().default('30 * * * * *'),
    'jobs and schedules',
    'when the clock reconciles the scheduled health checks with their settings',
  ),
  HUB_METRICS_RAW_RETENTION: entry(duration('P2D'), 'jobs and schedules', 'how long raw usage samples are kept'),
  HUB_SCHEDULED_EXECUTION_RETENTION: entry(
    duration('P7D'),
    'jobs and schedules',
    'how long finished executions that the clock or a scheduler started are kept (those a person or key caused are kept for good)',
  ),
};
