import { config } from '../config.js';
import { randomToken } from '../ids.js';

interface HostingInfrastructure {
  /** Addresses the hostname's A record must name. */
  ingressAddresses: string[];
  /** Certificate validation: `validationName` must be a CNAME to `validationValue`. */
  validationName: string;
  validationValue: string;
}

interface PublishedShare {
  zId: string;
  frontendEndpoint: string;
  target: string;
}

/** The ingress: creates (and removes) what a custom frontend is served from, and publishes shares on it. */
interface FrontendHosting {
  /** Idempotent for a frontend: given what an earlier attempt created, returns it again. */
  create(input: { customFrontendId: string; hostname: string; existing?: Partial<HostingInfrastructure> }): Promise<HostingInfrastructure>;
  remove(input: { customFrontendId: string; hostname: string }): Promise<void>;
  /** Routes the share's endpoint to its target (idempotent). */
  publishShare(share: PublishedShare): Promise<void>;
  unpublishShare(share: Pick<PublishedShare, 'zId'>): Promise<void>;
}

/**
 * The local ingress. No proxy runs here; it keeps the asynchronous shape of a cloud ingress API (each step takes
 * HUB_PROVISION_DELAY_MS). Every custom frontend is served from the configured ingress addresses
 * (HUB_INGRESS_ADDRESSES); certificate validation uses the delegated DNS-01 pattern, `_acme-challenge.<hostname>`
 * CNAME to a per-frontend name in the validation zone (HUB_VALIDATION_DOMAIN).
 */
const localFrontendHosting: FrontendHosting = {
  async create({ hostname, existing }) {
    await new Promise((r) => setTimeout(r, config().provisionDelayMs));
    return {
      ingressAddresses: existing?.ingressAddresses ?? [...config().ingressAddresses],
      validationName: existing?.validationName ?? `_acme-challenge.${hostname}`,
      validationValue: existing?.validationValue ?? `${randomToken(32)}.${config().validationDomain}`,
    };
  },
  async remove() {
    // the shared local ingress keeps no per-frontend state
  },
  async publishShare() {
    await new Promise((r) => setTimeout(r, config().provisionDelayMs));
  },
  async unpublishShare() {
    // routes live in the shares table, which the local ingress reads; nothing else to remove
  },
};

export const frontendHosting = (): FrontendHosting => localFrontendHosting;
