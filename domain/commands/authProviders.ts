import { ForeignKeyConstraintError } from 'sequelize';
import { withTransaction } from '../../shared/db.js';
import { badRequest, notFound, refusal } from '../../shared/errors.js';
import { newId } from '../../shared/ids.js';
import { AuthProvider, type AuthProviderType } from '../models/AuthProvider.js';

export { AUTH_PROVIDER_TYPES } from '../models/AuthProvider.js';
import { CustomFrontendAuthProvider } from '../models/CustomFrontendAuthProvider.js';
import { Share } from '../models/Share.js';
import { encryptSecret } from '../../shared/secrets.js';
import { findPage, type Page, type PageRequest } from '../../shared/paging.js';

interface AuthProviderConfigInput {
  clientId?: string;
  clientSecret?: string;
  issuerUrl?: string | null;
  scopes?: string[];
}

interface AuthProviderInput {
  name: string;
  type: AuthProviderType;
  config: AuthProviderConfigInput & { clientId: string; clientSecret: string };
  emailPatterns?: string[];
}

interface AuthProviderPatch {
  name?: string;
  type?: AuthProviderType;
  config?: AuthProviderConfigInput;
  emailPatterns?: string[];
}

const DEFAULT_OIDC_SCOPES = ['openid', 'email', 'profile'];

/** The type-dependent rules: OIDC needs an issuer and the openid scope; Google and GitHub have fixed issuers. */
function typeRules(type: AuthProviderType, issuerUrl: string | null, scopes: string[]): { issuerUrl: string | null; scopes: string[] } {
  if (type === 'OIDC') {
    if (!issuerUrl) throw badRequest("property '$.config.issuerUrl' is required for type OIDC");
    const effective = scopes.length ? scopes : DEFAULT_OIDC_SCOPES;
    if (!effective.includes('openid')) throw badRequest("value for property '$.config.scopes' must include 'openid' for type OIDC");
    return { issuerUrl, scopes: effective };
  }
  if (issuerUrl) throw badRequest(`property '$.config.issuerUrl' applies only to type OIDC (type is ${type})`);
  return { issuerUrl: null, scopes };
}

const dedupe = (values: string[]) => [...new Set(values)];

export async function createAuthProvider(hubId: string, input: AuthProviderInput, createdBy: string): Promise<AuthProvider> {
  const { issuerUrl, scopes } = typeRules(input.type, input.config.issuerUrl ?? null, dedupe(input.config.scopes ?? []));
  return AuthProvider.create({
    id: newId(),
    hubId,
    name: input.name,
    type: input.type,
    clientId: input.config.clientId,
    clientSecretSealed: encryptSecret(input.config.clientSecret),
    issuerUrl,
    scopes,
    emailPatterns: dedupe(input.emailPatterns ?? []),
    createdBy,
  });
}

export async function findAuthProvider(hubId: string, id: string): Promise<AuthProvider> {
  const provider = await AuthProvider.findOne({ where: { hubId, id } });
  if (!provider) throw notFound('auth provider', id);
  return provider;
}

export async function updateAuthProvider(hubId: string, id: string, patch: AuthProviderPatch): Promise<AuthProvider> {
  return withTransaction(async (transaction) => {
    const provider = await AuthProvider.findOne({ where: { hubId, id }, transaction, lock: transaction.LOCK.UPDATE });
    if (!provider) throw notFound('auth provider', id);
    const type = patch.type ?? provider.type;
    const issuerInput = patch.config && 'issuerUrl' in patch.config ? (patch.config.issuerUrl ?? null) : type === 'OIDC' ? provider.issuerUrl : null;
    const { issuerUrl, scopes } = typeRules(type, issuerInput, dedupe(patch.config?.scopes ?? provider.scopes));
    provider.set({
      name: patch.name ?? provider.name,
      type,
      clientId: patch.config?.clientId ?? provider.clientId,
      issuerUrl,
      scopes,
      emailPatterns: patch.emailPatterns ? dedupe(patch.emailPatterns) : provider.emailPatterns,
    });
    if (patch.config?.clientSecret !== undefined) provider.clientSecretSealed = encryptSecret(patch.config.clientSecret);
    provider.changed('updatedAt', true);
    await provider.save({ transaction });
    return provider;
  });
}

/** Refused (400) while a custom frontend or a share uses the provider; the foreign keys settle any race. */
export async function deleteAuthProvider(hubId: string, id: string): Promise<void> {
  const provider = await findAuthProvider(hubId, id);
  const frontends = await CustomFrontendAuthProvider.count({ where: { hubId, authProviderId: id } });
  if (frontends) throw refusal('EH_IN_USE', `auth provider '${id}' is attached to ${frontends} custom frontend(s); detach it first`);
  const shares = await Share.count({ where: { hubId, authProviderId: id } });
  if (shares) throw refusal('EH_IN_USE', `auth provider '${id}' is used by ${shares} share(s); delete them first`);
  try {
    await provider.destroy();
  } catch (err) {
    if (err instanceof ForeignKeyConstraintError) throw refusal('EH_IN_USE', `auth provider '${id}' is in use by a custom frontend or share`);
    throw err;
  }
}

/** Ids that name no auth provider of the hub, in input order. */
export async function missingAuthProviders(hubId: string, ids: string[]): Promise<string[]> {
  if (!ids.length) return [];
  const found = await AuthProvider.findAll({ where: { hubId, id: ids }, attributes: ['id'] });
  const present = new Set(found.map((p) => p.id));
  return ids.filter((id) => !present.has(id));
}

/** One page of the hub's auth providers. */
export const listAuthProviders = (hubId: string, req: PageRequest): Promise<Page<AuthProvider>> => findPage(AuthProvider, { hubId }, req);
